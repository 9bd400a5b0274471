package engine

import (
	"fmt"
	"time"

	"github.com/stratum-go/stratum/expr"
	"github.com/stratum-go/stratum/ir"
)

// Evaluate steps (docs/engine.md, "Effects") run a command outside every
// transition: the transition that activates the step reserves it
// (status running, an effect token, the rendered input), the command runs
// after that transition is durable and without the run's lock, and a
// second transition settles the outcome if the reservation is still the
// current one (a cancel or a revise in between voids it). A process that
// dies while its command runs leaves the reservation behind; Resume takes
// it over (recording effect_interrupted) and runs the command again.
// Evaluate is single-shot: every failure is forced (on_fail does not
// apply to evaluate, which cannot declare it, so the scope fails).

// startEvaluate reserves an evaluate step's command.
func (t *txn) startEvaluate(sc *scope, s *ir.Step, st *stepState) {
	attempt := len(st.Attempts) + 1
	fail := func(format string, args ...any) {
		t.failAttempt(sc, s, st, attemptFailure{attempt: attempt, reason: cleanText("evaluate: " + fmt.Sprintf(format, args...)), forced: true})
	}
	ev := s.Evaluate
	var input Value
	if ev.In != nil {
		v, err := ev.In.Render(t.resolver(sc, nil))
		if err != nil {
			fail("input render failed: %v", err)
			return
		}
		input = Some(v)
	}
	if t.e.opts.Evaluator == nil {
		fail("evaluate commands are not available: the process running this run was started without a command runner")
		return
	}
	if err := t.allowNow(Effect{Kind: EffectCommand, StepID: s.ID, Flow: sc.flow.Name, Command: ev.Command,
		Timeout: time.Duration(ev.TimeoutMS) * time.Millisecond}); err != nil {
		fail("%v", err)
		return
	}
	st.Status = StepRunning
	st.Effect = &effectState{Token: t.token(), Input: input}
	t.emit(EventEvaluateStarted, sc.scoped(s.ID), ReadyDetail{Attempt: attempt})
	t.queueEvaluate(sc, s, st)
}

// queueEvaluate records that the step's reserved command must run once
// this transition is durable.
func (t *txn) queueEvaluate(sc *scope, s *ir.Step, st *stepState) {
	req := EvaluateRequest{Command: s.Evaluate.Command, Input: st.Effect.Input.Data,
		Timeout: time.Duration(s.Evaluate.TimeoutMS) * time.Millisecond, Dir: t.st.WorkspaceRoot}
	if !st.Effect.Input.Present {
		req.Input = nil
	}
	t.effects = append(t.effects, pendingEffect{stepID: sc.scoped(s.ID), token: st.Effect.Token, evaluate: &req})
}

// settleEvaluate applies a command's outcome to its reserved step.
func (t *txn) settleEvaluate(sc *scope, s *ir.Step, st *stepState, out EvaluateOutcome, runErr error) {
	attempt := len(st.Attempts) + 1
	st.Effect = nil
	fail := func(format string, args ...any) {
		t.failAttempt(sc, s, st, attemptFailure{attempt: attempt, reason: cleanText("evaluate: " + fmt.Sprintf(format, args...)), forced: true})
	}
	if runErr != nil {
		fail("runner threw: %v", runErr)
		return
	}
	if !out.OK {
		switch out.Kind {
		case EvaluateExit:
			fail("command exited with a non-zero status (%s)", out.Reason)
		case EvaluateTimeout:
			fail("command timed out (%s)", out.Reason)
		case EvaluateParse:
			fail("output was not valid JSON (%s)", out.Reason)
		default:
			fail("runner returned a malformed result envelope")
		}
		return
	}
	result, err := toModel(out.Result)
	if err != nil {
		fail("runner returned a malformed result envelope")
		return
	}
	if msg := checkVerdict(result); msg != "" {
		fail("output failed the evaluator-result contract: %s", msg)
		return
	}
	if s.OutContract != nil {
		if errs := s.OutContract.Validate(result, "result"); len(errs) > 0 {
			fail("%s", contractMessage(s.Out, errs))
			return
		}
	}
	if err := t.outputCheck(sc, s, result); err != nil {
		fail("%v", err)
		return
	}
	st.Status = StepSucceeded
	st.Output = Some(result)
	st.Attempts = append(st.Attempts, Attempt{Attempt: attempt, At: t.now, Result: st.Output})
	t.emit(EventResult, sc.scoped(s.ID), ResultDetail{Attempt: attempt, Result: st.Output})
	if sc.root() {
		t.materialiseCarry()
	}
}

// checkVerdict checks the fixed evaluator verdict shape: {status:
// closed|open|failed, children: array, reason: string, score?: number,
// route?: claude|codex}; closed has no children, open at least one.
func checkVerdict(v any) string {
	o, ok := v.(*expr.Object)
	if !ok {
		return "the verdict must be an object, got " + typeName(v)
	}
	for _, k := range o.Keys() {
		switch k {
		case "status", "children", "reason", "score", "route":
		default:
			return fmt.Sprintf("undeclared key %q", k)
		}
	}
	status, _ := o.Get("status")
	children, hasChildren := o.Get("children")
	reason, hasReason := o.Get("reason")
	st, _ := status.(string)
	if st != "closed" && st != "open" && st != "failed" {
		return "status must be closed, open or failed"
	}
	list, ok := children.([]any)
	if !hasChildren || !ok {
		return "children must be an array"
	}
	if _, ok := reason.(string); !hasReason || !ok {
		return "reason must be a string"
	}
	if sc, ok := o.Get("score"); ok {
		if _, isNum := sc.(float64); !isNum {
			return "score must be a number"
		}
	}
	if r, ok := o.Get("route"); ok && r != "claude" && r != "codex" {
		return "route must be claude or codex"
	}
	if st == "closed" && len(list) > 0 {
		return "a closed verdict has no children"
	}
	if st == "open" && len(list) == 0 {
		return "an open verdict needs at least one child"
	}
	return ""
}
