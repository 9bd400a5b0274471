package web

import (
	"context"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// eventSeqs are the seqs of the event rows of a page, in order.
func eventSeqs(t *testing.T, body string) []int64 {
	t.Helper()
	var out []int64
	for _, m := range regexp.MustCompile(`<tr data-key="(\d+)" data-v="[^"]*"><td>(\d+)</td>`).FindAllStringSubmatch(body, -1) {
		n, _ := strconv.ParseInt(m[2], 10, 64)
		out = append(out, n)
	}
	return out
}

// TestRunPageLatestEvents: a long run's page lists its latest 200
// events (the same the engine's audit ends with), says how many it
// leaves out, and links to the events pages; those list every event of
// the audit once, in order, 1000 to a page, with links between them.
func TestRunPageLatestEvents(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	resp, err := h.eng.Plan(ctx, planRequest(chainSpec(400)))
	if err != nil {
		t.Fatal(err)
	}
	complete(t, h.eng, resp.RunID, resp)
	runID := resp.RunID
	a, err := h.eng.Audit(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Events) <= eventsPage {
		t.Fatalf("the run has %d events: too few for two pages", len(a.Events))
	}
	var want []int64
	for _, ev := range a.Events {
		want = append(want, ev.Seq)
	}

	code, body := h.get("/runs/" + runID)
	if code != 200 {
		t.Fatalf("run page: %d", code)
	}
	if got := eventSeqs(t, body); !equalSeqs(got, want[len(want)-defaultEvents:]) {
		t.Errorf("the run page lists %d events %v..., want the last %d of the audit", len(got), head(got), defaultEvents)
	}
	hidden := strconv.Itoa(len(want)-defaultEvents) + " oldest events are not listed here"
	if !strings.Contains(body, hidden) || !strings.Contains(body, `href="`+eventsURL(runID, 0)+`" id="all-events"`) {
		t.Errorf("the run page does not say %q with a link to the events pages", hidden)
	}

	var got []int64
	url := eventsURL(runID, 0)
	for pages := 0; url != ""; pages++ {
		if pages > len(want)/eventsPage+1 {
			t.Fatal("the events pages do not end")
		}
		code, body := h.get(url)
		if code != 200 {
			t.Fatalf("%s: %d", url, code)
		}
		seqs := eventSeqs(t, body)
		if len(seqs) == 0 || len(seqs) > eventsPage {
			t.Fatalf("%s lists %d events", url, len(seqs))
		}
		if pages > 0 && !strings.Contains(body, `id="earlier"`) {
			t.Errorf("%s has no link to earlier events", url)
		}
		got = append(got, seqs...)
		url = ""
		if m := regexp.MustCompile(`<a href="([^"]+)" id="later">`).FindStringSubmatch(body); m != nil {
			url = m[1]
		}
	}
	if !equalSeqs(got, want) {
		t.Errorf("the events pages list %d events, the audit %d", len(got), len(want))
	}
	if code, _ := h.get(eventsURL(runID, 1<<40)); code != 404 {
		t.Errorf("events after the head: status %d, want 404", code)
	}
	if code, _ := h.get(eventsURL("00000000-0000-4000-8000-000000000000", 0)); code != 404 {
		t.Errorf("events of an unknown run: status %d, want 404", code)
	}
}

func equalSeqs(a, b []int64) bool { return slices.Equal(a, b) }

func head(s []int64) []int64 { return s[:min(3, len(s))] }
