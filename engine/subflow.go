package engine

import (
	"fmt"
	"strings"

	"github.com/stratum-go/stratum/ir"
)

// activateRun starts a run step (docs/engine.md, "Constructs"): render `with`,
// validate it against the callee's input contract (a failure is forced),
// create the child scope.
func (t *txn) activateRun(sc *scope, s *ir.Step, st *stepState) {
	attempt := len(st.Attempts) + 1
	callee := t.c.plan.Flow(s.Run)
	in, err := t.renderValue(sc, s.With)
	if err != nil {
		t.failAttempt(sc, s, st, attemptFailure{attempt: attempt, reason: fmt.Sprintf("run %q: with render failed: %v", s.Run, err), forced: true})
		return
	}
	if errs := callee.Input.Validate(in, "input"); len(errs) > 0 {
		msgs := make([]string, len(errs))
		for i, e := range errs {
			msgs[i] = e.Path + ": " + e.Message
		}
		t.failAttempt(sc, s, st, attemptFailure{attempt: attempt, evidence: Some(in),
			reason: fmt.Sprintf("run %q: with failed the subflow input contract: %s", s.Run, strings.Join(msgs, "; ")), forced: true})
		return
	}
	st.Status = StepRunning
	st.Sub = &subState{Input: Some(in), Steps: map[string]*stepState{}}
}

// settleChild completes or fails a run step whose child scope has
// finished, and fails it precisely when nothing in the child can ever run
// again (docs/engine.md, "Scheduling": a run never stays running forever).
func (t *txn) settleChild(root, child *scope) bool {
	ps := child.parent
	if ps.Status != StepRunning || !t.running() {
		return false
	}
	allTerminal := true
	for _, s := range child.flow.Steps {
		st := child.state(s)
		if active(st.Status) {
			return false
		}
		if !isTerminalStep(st.Status) {
			allTerminal = false
		}
	}
	s := child.parentStep
	attempt := len(ps.Attempts) + 1
	if !allTerminal {
		t.failAttempt(root, s, ps, attemptFailure{attempt: attempt, forced: true,
			reason: fmt.Sprintf("subflow %q: %s", s.Run, deadEndReason(child))})
		return true
	}
	out, err := t.flowOutput(child)
	if err != nil {
		t.failAttempt(root, s, ps, attemptFailure{attempt: attempt, forced: true, reason: fmt.Sprintf("subflow %q: %v", s.Run, err)})
		return true
	}
	if err := t.outputCheck(root, s, out); err != nil {
		t.failAttempt(root, s, ps, attemptFailure{attempt: attempt, forced: true, evidence: Some(out), reason: err.Error()})
		return true
	}
	ps.Status = StepSucceeded
	ps.Output = Some(out)
	ps.Attempts = append(ps.Attempts, Attempt{Attempt: attempt, At: t.now, Result: ps.Output})
	t.emit(EventResult, s.ID, map[string]any{"attempt": attempt, "result": ps.Output})
	return true
}
