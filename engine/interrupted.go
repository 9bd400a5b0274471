package engine

import (
	"context"
	"fmt"

	"github.com/stratum-go/stratum/ir"
)

// Interrupted attempts (docs/engine.md, "Interrupted attempts"). A driver
// tells the engine when an agent starts a ready attempt (AttemptStarted);
// an attempt that started and never reported was interrupted: its
// process died, perhaps after it pushed, deployed or edited files. A
// resume records it (attempt_interrupted). A step the spec declares
// idempotent is issued again at once; any other waits, status interrupted,
// for a person to decide: approve issues it again, kill fails the attempt
// (on_fail applies). The attempt issued again carries `interrupted`, so
// the agent can inspect the workspace first, and has a new token, so the
// interrupted agent's late report can never count.

// AttemptStarted records that an agent started the ready attempt of a do
// step or consumer fanout item with this dispatch token. by says what
// started it (for the audit). A token that is not the ready issuance's is
// refused as stale.
func (e *Engine) AttemptStarted(ctx context.Context, runID, stepID, token, by string) error {
	_, err := e.transition(ctx, runID, func(t *txn) error {
		if err := t.guardActive(); err != nil {
			return err
		}
		if err := t.guardDriver(); err != nil {
			return err
		}
		loc, ok := t.locate(stepID)
		if !ok {
			return t.refuse(ErrNotAwaiting, stepID, "step is not awaiting a client result: run %s has no step %q", t.st.ID, stepID)
		}
		if loc.item != nil {
			it := loc.item
			if it.Status != StepReady || it.DispatchToken != token {
				return t.refuse(ErrStaleToken, stepID, "attempt start is stale: %q is not ready with this dispatch token", stepID)
			}
			it.Started = &AttemptStart{At: t.now, By: by}
			t.emit(EventAttemptStarted, loc.sc.scoped(loc.step.ID), AttemptDetail{Attempt: len(it.Attempts) + 1, By: by})
			return nil
		}
		st := loc.sc.state(loc.step)
		if loc.step.Kind != ir.KindDo || st.Status != StepReady || st.DispatchToken != token {
			return t.refuse(ErrStaleToken, stepID, "attempt start is stale: %q is not ready with this dispatch token", stepID)
		}
		st.Started = &AttemptStart{At: t.now, By: by}
		t.emit(EventAttemptStarted, stepID, AttemptDetail{Attempt: len(st.Attempts) + 1, By: by})
		return nil
	})
	return err
}

// ReleaseAttempt withdraws the start of an attempt that could not run at
// all (the agent was unavailable): the step stays ready, with the same
// token and attempt number, and a later resume does not count it as
// interrupted.
func (e *Engine) ReleaseAttempt(ctx context.Context, runID, stepID, token, reason string) error {
	_, err := e.transition(ctx, runID, func(t *txn) error {
		if err := t.guardActive(); err != nil {
			return err
		}
		if err := t.guardDriver(); err != nil {
			return err
		}
		loc, ok := t.locate(stepID)
		if !ok {
			return t.refuse(ErrNotAwaiting, stepID, "step is not awaiting a client result: run %s has no step %q", t.st.ID, stepID)
		}
		ss := loc.sc.state(loc.step)
		start, current, attempt := &ss.Started, ss.DispatchToken, len(ss.Attempts)+1
		if loc.item != nil {
			start, current, attempt = &loc.item.Started, loc.item.DispatchToken, len(loc.item.Attempts)+1
		}
		if current != token || *start == nil {
			return nil // nothing started with this token: nothing to release
		}
		*start = nil
		t.emit(EventAttemptReleased, loc.sc.scoped(loc.step.ID), AttemptDetail{Attempt: attempt, By: cleanText(reason)})
		return nil
	})
	return err
}

// takeOverAttempts records the attempts a resumed run finds started and
// never reported.
func (t *txn) takeOverAttempts() {
	for _, sc := range t.liveScopes() {
		for _, s := range sc.liveSteps() {
			st := sc.peek(s)
			if st == nil {
				continue
			}
			if s.Kind == ir.KindDo && st.Status == StepReady && st.Started != nil {
				t.interrupted(sc, s, st)
			}
			if s.Kind == ir.KindFanout && consumerFanout(s) && st.Fanout != nil {
				for _, it := range st.Fanout.Items {
					if it.Status == StepReady && it.Started != nil {
						// An item's work is its own (a worktree for isolated
						// items): issued again at once, saying so.
						t.emit(EventAttemptInterrupted, sc.scoped(s.ID), AttemptDetail{Attempt: len(it.Attempts) + 1, By: it.Started.By, Retried: true})
						it.Interrupted, it.Started = it.Started, nil
						it.DispatchToken = t.token()
					}
				}
			}
		}
	}
}

// interrupted handles one do step whose started attempt never reported.
func (t *txn) interrupted(sc *scope, s *ir.Step, st *stepState) {
	id := sc.scoped(s.ID)
	start := st.Started
	t.emit(EventAttemptInterrupted, id, AttemptDetail{Attempt: len(st.Attempts) + 1, By: start.By, Retried: s.Idempotent})
	st.DispatchToken = "" // the interrupted agent's late report never counts
	if s.Idempotent {
		t.reissueInterrupted(sc, s, st)
		return
	}
	st.Status = StepInterrupted
	st.GateToken = t.token()
}

// reissueInterrupted makes an interrupted attempt ready again (same
// attempt number, task and reserved dispatch; a new token).
func (t *txn) reissueInterrupted(sc *scope, s *ir.Step, st *stepState) {
	st.Status = StepReady
	st.Interrupted, st.Started = st.Started, nil
	st.GateToken = ""
	st.DispatchToken = t.token()
	t.emit(EventReady, sc.scoped(s.ID), ReadyDetail{Attempt: len(st.Attempts) + 1})
}

// decideInterrupted applies a person's decision on an interrupted attempt:
// approve issues it again, kill fails it.
func (t *txn) decideInterrupted(sc *scope, s *ir.Step, st *stepState, req GateRequest) error {
	switch req.Decision {
	case DecisionApprove:
		t.reissueInterrupted(sc, s, st)
	case DecisionKill:
		by := req.ResolvedBy
		if by == "" {
			by = "a person"
		}
		reason := fmt.Sprintf("the interrupted attempt was not run again (decided by %s)", by)
		if req.Rationale != "" {
			reason += ": " + req.Rationale
		}
		t.failAttempt(sc, s, st, attemptFailure{attempt: len(st.Attempts) + 1, reason: reason, forced: true})
	default:
		return t.refuse(ErrInvalidDecision, sc.scoped(s.ID), "an interrupted attempt is decided approve (run it again) or kill (fail it), not %s", req.Decision)
	}
	return nil
}

// liveScopes are the root scope and the scopes of running subflows.
func (t *txn) liveScopes() []*scope {
	root := t.rootScope()
	out := []*scope{root}
	for _, s := range root.liveSteps() {
		if st := root.peek(s); s.Kind == ir.KindRun && st != nil && st.Status == StepRunning && st.Sub != nil {
			out = append(out, t.childScope(root, s))
		}
	}
	return out
}
