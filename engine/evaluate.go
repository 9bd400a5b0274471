package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/stratum-go/stratum/expr"
	"github.com/stratum-go/stratum/internal/proc"
	"github.com/stratum-go/stratum/ir"
)

// runEvaluate runs an evaluate step's command (spec/engine.md 5.7):
// single-shot, every failure forced (on_fail does not apply to evaluate,
// which cannot declare it, so the scope fails). The command runs inside
// the transition, under the run lock.
func (t *txn) runEvaluate(sc *scope, s *ir.Step, st *stepState) {
	attempt := len(st.Attempts) + 1
	fail := func(format string, args ...any) {
		t.failAttempt(sc, s, st, attemptFailure{attempt: attempt, reason: cleanText("evaluate: " + fmt.Sprintf(format, args...)), forced: true})
	}
	ev := s.Evaluate
	var input any
	if ev.In != nil {
		v, err := ev.In.Render(t.resolver(sc, nil))
		if err != nil {
			fail("input render failed: %v", err)
			return
		}
		input = v
	}
	runner := t.e.opts.Evaluator
	if runner == nil {
		runner = shellEvaluator{}
	}
	out, err := runner.Evaluate(t.ctx, EvaluateRequest{Command: ev.Command, Input: input,
		Timeout: time.Duration(ev.TimeoutMS) * time.Millisecond, Dir: t.st.WorkspaceRoot})
	if err != nil {
		fail("runner threw: %v", err)
		return
	}
	if !out.OK {
		switch out.Kind {
		case "exit":
			fail("command exited with a non-zero status (%s)", out.Reason)
		case "timeout":
			fail("command timed out (%s)", out.Reason)
		case "parse":
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

// shellEvaluator is the default evaluate runner: /bin/sh -c COMMAND in
// the workspace root, in its own process group (killed whole on timeout),
// the JSON input on stdin, stdout parsed as JSON.
type shellEvaluator struct{}

func (shellEvaluator) Evaluate(ctx context.Context, req EvaluateRequest) (EvaluateOutcome, error) {
	var stdin []byte
	if req.Input != nil {
		b, err := expr.EncodeJSON(req.Input)
		if err != nil {
			return EvaluateOutcome{}, err
		}
		stdin = b
	} else {
		stdin = []byte("null")
	}
	res, err := proc.Run(ctx, proc.Spec{Argv: []string{"/bin/sh", "-c", req.Command}, Dir: req.Dir, Stdin: stdin,
		Timeout: req.Timeout, Grace: 500 * time.Millisecond})
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return EvaluateOutcome{}, err
	}
	switch {
	case res.TimedOut:
		return EvaluateOutcome{Kind: "timeout", Reason: fmt.Sprintf("after %s; the process group was killed", req.Timeout)}, nil
	case !res.Success():
		msg := strings.TrimSpace(string(res.StderrTail))
		if res.Signal != "" {
			return EvaluateOutcome{Kind: "exit", Reason: fmt.Sprintf("signal %s: %s", res.Signal, msg)}, nil
		}
		return EvaluateOutcome{Kind: "exit", Reason: fmt.Sprintf("exit %d: %s", res.ExitCode, msg)}, nil
	case res.StdoutTruncated:
		return EvaluateOutcome{Kind: "parse", Reason: "stdout exceeded the output limit"}, nil
	}
	v, err := expr.DecodeJSON(bytes.TrimSpace(res.Stdout))
	if err != nil {
		return EvaluateOutcome{Kind: "parse", Reason: err.Error()}, nil
	}
	return EvaluateOutcome{OK: true, Result: v}, nil
}
