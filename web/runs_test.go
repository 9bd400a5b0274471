package web

import (
	"context"
	"regexp"
	"slices"
	"testing"
)

// runKeys are the run ids the runs list shows, in order.
func runKeys(body string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`<tr data-key="([^"]+)" data-v="[^"]*"( class="person")?>`).FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

// TestRunsList: the list shows the runs waiting on a person first, then
// the running ones, then the others (newest first within each), as
// engine.ListRuns lists them; it filters by status and by text in the
// flow's name or the run's id.
func TestRunsList(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	first, err := h.eng.Plan(ctx, planRequest(chainSpec(2)))
	if err != nil {
		t.Fatal(err)
	}
	done := first.RunID // completed
	complete(t, h.eng, done, first)
	waiting := h.plan(gateSpec, `{"topic": "b"}`) // at its gate
	h.drive(waiting)
	h.waitGate(waiting, "")
	resp, err := h.eng.Plan(ctx, planRequest(chainSpec(3))) // running: a step ready
	if err != nil {
		t.Fatal(err)
	}
	running := resp.RunID
	listed, err := h.eng.ListRuns(ctx)
	if err != nil || len(listed) != 3 {
		t.Fatalf("ListRuns: %d runs, %v", len(listed), err)
	}

	tests := []struct {
		query string
		want  []string
	}{
		{"", []string{waiting, running, done}},
		{"?status=waiting", []string{waiting}},
		{"?status=running", []string{waiting, running}},
		{"?status=completed", []string{done}},
		{"?status=failed", []string{"none"}},
		{"?status=nonsense", []string{waiting, running, done}},
		{"?q=" + running[:8], []string{running}},
		{"?q=MAIN", []string{waiting, running, done}},
		{"?q=no-such-flow", []string{"none"}},
		{"?status=completed&q=" + waiting[:8], []string{"none"}},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			code, body := h.get("/" + tt.query)
			if got := runKeys(body); code != 200 || !slices.Equal(got, tt.want) {
				t.Errorf("status %d, rows %v, want %v", code, got, tt.want)
			}
		})
	}
	if _, body := h.get("/"); !regexp.MustCompile(`<tr data-key="` + waiting + `" data-v="[^"]*" class="person">`).MatchString(body) {
		t.Error("the run at its gate is not marked as waiting on a person")
	}
}
