package engine

import (
	"encoding/json"
	"strings"
	"testing"
)

// The state document holds the live part of a run only: between two
// points at the same place in the index's chunk cycle it grows by one seq
// per chunk of finished steps, never by the steps' states; and each
// finished step's state is written once.
func TestStateDocumentStaysSmall(t *testing.T) {
	h := newHarness(t, Options{})
	big := strings.Repeat("x", 2000)
	const n = 3*coldChunkSize + 20
	r := h.plan(linearN(n), map[string]any{})
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
		var d struct {
			Steps map[string]json.RawMessage `json:"steps"`
		}
		if err := json.Unmarshal(snap.State, &d); err != nil {
			t.Fatal(err)
		}
		for id, raw := range d.Steps {
			if strings.Contains(string(raw), `"succeeded"`) {
				t.Fatalf("after step %d: finished step %s is in the state document", step, id)
			}
		}
	}
	wantStatus(t, r, StatusCompleted)
	from, to := coldChunkSize+10, 3*coldChunkSize+10
	if grew := sizes[to] - sizes[from]; grew > 2*16 {
		t.Fatalf("the document grew by %d bytes over %d finished steps (sizes %d at step %d, %d at step %d)", grew, to-from, sizes[from], from, sizes[to], to)
	}
	written := 0
	for _, typ := range h.allEventTypes(r.RunID) {
		if typ == string(evStepState) {
			written++
		}
	}
	if written != n {
		t.Fatalf("%d finished-step records for %d steps, want one each", written, n)
	}
	// A fresh process reads the finished steps back from the log.
	e2 := h.reopen(Options{})
	a, err := e2.Audit(h.ctx, r.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Steps) != n || a.Steps["s30"].Status != StepSucceeded || !strings.Contains(jsonOf(t, a.Steps["s30"].Output.Data), big) {
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

// A change to a finished step read back from the log is kept, whether or
// not the code that made it marked the step as changed; an unchanged one
// is not written again.
func TestLoadedFinishedStepChangeKept(t *testing.T) {
	h := newHarness(t, Options{})
	r := h.plan(linearN(3), map[string]any{})
	for r.Status == StatusReady {
		en := r.Ready[0]
		var err error
		r, err = h.e.StepDone(h.ctx, StepDoneRequest{RunID: r.RunID, StepID: en.ID, DispatchToken: en.DispatchToken,
			Result: StepResult{Output: js(map[string]any{"v": en.ID})}})
		if err != nil {
			t.Fatal(err)
		}
	}
	wantStatus(t, r, StatusCompleted)
	before := len(h.allEventTypes(r.RunID))
	for _, change := range []bool{false, true} {
		if _, err := h.e.mutate(h.ctx, r.RunID, func(tx *txn) error {
			root := tx.rootScope()
			st := root.peekID("s1")
			if st == nil || st.coldSeq == 0 {
				t.Fatalf("s1 was not read from the log: %+v", st)
			}
			if change {
				st.Spent.Dispatches += 7 // no touch(): settleLoaded must see it
				tx.emit(EventType("test.changed"), "s1", map[string]any{})
			}
			tx.engineWork = true
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if !change && len(h.allEventTypes(r.RunID)) != before {
			t.Fatalf("an unchanged finished step was written again: %v", h.allEventTypes(r.RunID)[before:])
		}
	}
	e2 := h.reopen(Options{})
	a, err := e2.Audit(h.ctx, r.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if got := a.Steps["s1"].Spent.Dispatches; got != 8 {
		t.Fatalf("s1 dispatches %v after the change, want 8", got)
	}
}
