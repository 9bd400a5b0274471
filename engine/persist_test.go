package engine

import (
	"encoding/json"
	"strings"
	"testing"
)

// The state document holds the live part of a run only: its size grows by
// one small index entry per finished step, never by the step's state.
func TestStateDocumentStaysSmall(t *testing.T) {
	h := newHarness(t, Options{})
	big := strings.Repeat("x", 2000)
	r := h.plan(linearN(60), map[string]any{})
	sizes := map[int]int{}
	for step := 1; r.Status == StatusReady; step++ {
		en := r.Ready[0]
		var err error
		r, err = h.e.StepDone(h.ctx, StepDoneRequest{RunID: r.RunID, StepID: en.ID, DispatchToken: en.DispatchToken,
			Result: StepResult{Output: js(map[string]any{"v": big})}})
		if err != nil {
			t.Fatal(err)
		}
		snap, err := h.store.Load(h.ctx, r.RunID)
		if err != nil {
			t.Fatal(err)
		}
		sizes[step] = len(snap.State)
		if strings.Contains(string(snap.State), big[:100]) && step < 60 {
			// Only the live step (the next ready one) may be in the
			// document; outputs of finished steps are not.
			var d struct {
				Steps map[string]json.RawMessage `json:"steps"`
			}
			_ = json.Unmarshal(snap.State, &d)
			for id, raw := range d.Steps {
				if strings.Contains(string(raw), `"succeeded"`) {
					t.Fatalf("finished step %s is in the state document", id)
				}
			}
		}
	}
	wantStatus(t, r, StatusCompleted)
	if per := float64(sizes[59]-sizes[10]) / 49; per > 24 {
		t.Fatalf("the document grows by %.0f bytes per finished step (sizes %d at step 10, %d at step 59)", per, sizes[10], sizes[59])
	}
	// A fresh process reads the finished steps back from the log.
	e2 := h.reopen(Options{})
	a, err := e2.Audit(h.ctx, r.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Steps) != 60 || a.Steps["s30"].Status != StepSucceeded || !strings.Contains(jsonOf(t, a.Steps["s30"].Output.Data), big) {
		t.Fatalf("audit steps %d, s30 %s", len(a.Steps), dump(a.Steps["s30"])[:200])
	}
	for _, ev := range a.Events {
		if internalEvent(string(ev.Type)) {
			t.Fatalf("internal event %s in the audit", ev.Type)
		}
	}
}

// After a revert, tokens issued in the reverted future are refused.
func TestRevertRotatesTokens(t *testing.T) {
	h := newHarness(t, Options{})
	r := h.plan(twoSteps, map[string]any{"x": "X"})
	if _, err := h.e.Commit(h.ctx, r.RunID, "start"); err != nil {
		t.Fatal(err)
	}
	old := entry(t, r, "a").DispatchToken
	rv, err := h.e.Revert(h.ctx, r.RunID, "start")
	if err != nil {
		t.Fatal(err)
	}
	if entry(t, rv, "a").DispatchToken == old {
		t.Fatal("revert kept the ready step's token")
	}
	_, err = h.e.StepDone(h.ctx, StepDoneRequest{RunID: r.RunID, StepID: "a", DispatchToken: old, Result: StepResult{Output: json.RawMessage(`{"v":"A"}`)}})
	wantCode(t, err, ErrStaleToken)
	// A fresh process can revert too (the snapshot and finished steps are
	// read back from the log).
	r = h.ok(rv, "a", `{"v":"A"}`)
	if _, err := h.e.Commit(h.ctx, r.RunID, "mid"); err != nil {
		t.Fatal(err)
	}
	r = h.ok(r, "b", `{"v":"B"}`)
	e2 := h.reopen(Options{})
	rv, err = e2.Revert(h.ctx, r.RunID, "mid")
	if err != nil {
		t.Fatal(err)
	}
	if en := entry(t, rv, "b"); en.Do != "b A" {
		t.Fatalf("after revert %s", dump(rv))
	}
}
