package engine

import (
	"fmt"

	"github.com/stratum-go/stratum/expr"
	"github.com/stratum-go/stratum/ir"
)

// runSet evaluates a set step (docs/engine.md, "Constructs"): deterministic, never
// retried. An expression error, a contract violation or a failed ensure
// fails the scope (the run, or the parent run step of a subflow).
// Deliberate difference: the reference turns an expression error into the
// value false; Stratum fails with the error, never a silent default.
func (t *txn) runSet(sc *scope, s *ir.Step, st *stepState) {
	b := expr.Bindings{Result: expr.Bind(sc.outputs()), Input: expr.Bind(sc.input)}
	obj := expr.NewObject(len(s.Set))
	for _, f := range s.Set {
		p, err := t.c.program(f.Expr)
		var v any
		if err == nil {
			v, err = p.EvalContext(t.ctx, b, nil)
		}
		if err != nil {
			t.setFailed(sc, s, st, fmt.Sprintf("set %q field %q (%s) failed: %v", sc.scoped(s.ID), f.Name, quote(f.Expr), err), Value{})
			return
		}
		obj.Set(f.Name, v)
	}
	out := Some(obj)
	if s.OutContract != nil {
		if errs := s.OutContract.Validate(obj, "result"); len(errs) > 0 {
			t.setFailed(sc, s, st, fmt.Sprintf("set %q %s", sc.scoped(s.ID), contractMessage(s.Out, errs)), out)
			return
		}
	}
	eb := expr.Bindings{Result: expr.Bind(obj), Input: expr.Bind(sc.input)}
	er := t.runEnsures(ensureCtx{sc: sc, step: s, st: st, stepID: sc.scoped(s.ID)}, s.Ensure, eb)
	if er.reason != "" {
		if er.breach == levelFlow {
			st.Status = StepFailed
			f := &Failure{Attempt: 1, Reason: er.reason}
			st.Attempts = append(st.Attempts, Attempt{Attempt: 1, At: t.now, Failure: f, Result: out})
			st.Failure = f
			t.emit(EventResult, sc.scoped(s.ID), ResultDetail{Attempt: 1, Failure: f})
			t.exhaustRun(f)
			return
		}
		t.setFailed(sc, s, st, fmt.Sprintf("set %q: %s", sc.scoped(s.ID), er.reason), out)
		return
	}
	st.Status = StepSucceeded
	st.Output = out
	st.Attempts = append(st.Attempts, Attempt{Attempt: 1, At: t.now, Result: out})
	t.emit(EventResult, sc.scoped(s.ID), ResultDetail{Attempt: 1, Result: out})
	if sc.root() {
		t.materialiseCarry()
	}
}

func (t *txn) setFailed(sc *scope, s *ir.Step, st *stepState, reason string, ev Value) {
	f := &Failure{Attempt: 1, Reason: reason}
	st.Status = StepFailed
	st.Failure = f
	st.Attempts = append(st.Attempts, Attempt{Attempt: 1, At: t.now, Failure: f, Result: ev})
	t.emit(EventResult, sc.scoped(s.ID), ResultDetail{Attempt: 1, Failure: f})
	t.scopeFailed(sc, &Failure{Attempt: 0, Reason: reason})
}
