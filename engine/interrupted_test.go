package engine

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// An attempt that started and never reported is recorded as interrupted
// by a resume; the step waits for a person (approve runs it again with
// `interrupted` set and a new token; the old token is stale), unless the
// spec declares it idempotent, which is issued again at once.
func TestInterruptedAttempts(t *testing.T) {
	for _, idempotent := range []bool{false, true} {
		name := "ask a person"
		spec := twoSteps
		if idempotent {
			name = "idempotent"
			spec = strings.Replace(twoSteps, "do: \"a ${input.x}\"", "do: \"a ${input.x}\"\n        idempotent: true", 1)
		}
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, Options{})
			r := h.plan(spec, map[string]any{"x": "X"})
			first := entry(t, r, "a")
			if err := h.e.AttemptStarted(h.ctx, r.RunID, "a", first.DispatchToken, "stratum run (agent ./agent.sh)"); err != nil {
				t.Fatal(err)
			}
			// The driving process dies; another resumes the run.
			r, err := h.reopen(Options{}).Resume(h.ctx, r.RunID)
			if err != nil {
				t.Fatal(err)
			}
			if countPrefix(h.eventTypes(r.RunID), "attempt_interrupted(a)") != 1 {
				t.Fatalf("events %v", h.eventTypes(r.RunID))
			}
			if !idempotent {
				if !hasWaiting(r, "a", WaitInterrupted) {
					t.Fatalf("want a wait for a decision: %s", dump(r))
				}
				views, err := h.e.GateViews(h.ctx, r.RunID)
				if err != nil || len(views) != 1 || views[0].Kind != WaitInterrupted || views[0].UnderReview[0].Task != "a X" {
					t.Fatalf("views %s %v", dump(views), err)
				}
				if r, err = h.e.ResolveGate(h.ctx, GateRequest{RunID: r.RunID, StepID: "a", Decision: DecisionApprove, GateToken: views[0].GateToken}); err != nil {
					t.Fatal(err)
				}
			}
			again := entry(t, r, "a")
			if again.Interrupted == nil || again.Interrupted.By != "stratum run (agent ./agent.sh)" || again.DispatchToken == first.DispatchToken || again.Attempt != 1 {
				t.Fatalf("entry issued again %s", dump(again))
			}
			_, err = h.e.StepDone(h.ctx, StepDoneRequest{RunID: r.RunID, StepID: "a", DispatchToken: first.DispatchToken, Result: StepResult{Output: json.RawMessage(`{"v":"late"}`)}})
			if !errors.Is(err, ErrStaleToken) {
				t.Fatalf("the interrupted attempt's late report: %v", err)
			}
			r = h.ok(r, "a", `{"v":"A"}`)
			if entry(t, r, "b").Interrupted != nil {
				t.Fatal("the next step carries the interruption")
			}
		})
	}
}

// kill on an interrupted attempt fails it (no retry).
func TestInterruptedKilled(t *testing.T) {
	h := newHarness(t, Options{})
	r := h.plan(twoSteps, map[string]any{"x": "X"})
	if err := h.e.AttemptStarted(h.ctx, r.RunID, "a", entry(t, r, "a").DispatchToken, "test"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.Resume(h.ctx, r.RunID); err != nil {
		t.Fatal(err)
	}
	d, err := h.e.DecideGate(h.ctx, GateRequest{RunID: r.RunID, StepID: "a", Decision: DecisionKill, CurrentRound: true, ResolvedBy: "ada", Rationale: "it pushed already"})
	if err != nil {
		t.Fatal(err)
	}
	wantFailure(t, d.Response, StatusFailed, "the interrupted attempt was not run again (decided by ada): it pushed already")
}

// hasWaiting reports whether r says step id waits for kind.
func hasWaiting(r *Response, id string, kind WaitingKind) bool {
	for _, w := range r.Waiting {
		if w.StepID == id && w.Kind == kind {
			return true
		}
	}
	return false
}
