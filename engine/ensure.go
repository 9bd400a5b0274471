package engine

import (
	"fmt"
	"unicode/utf8"

	"github.com/stratum-go/stratum/expr"
	"github.com/stratum-go/stratum/ir"
	"github.com/stratum-go/stratum/judge"
)

// ensureResult is the outcome of a step's postconditions.
type ensureResult struct {
	// reason is the first failure ("" when every ensure held).
	reason string
	// breach is the budget level a judge's usage broke (flow, subflow,
	// task); the caller applies it.
	breach level
}

// ensureCtx locates the ensures being checked, for judge events and
// ledgers.
type ensureCtx struct {
	sc     *scope
	step   *ir.Step
	st     *StepState
	stepID string
	// task: judge usage also debits the task ledger.
	task bool
	// item fields for judged events inside fanout stages.
	itemIndex *int
	stage     *int
	// root is the jail of file predicates: an item's worktree, or empty
	// for the workspace root.
	root string
}

// maxEvidence bounds how much of a failing value a failure reason quotes.
const maxEvidence = 300

// evidence is a short rendering of a value for failure reasons.
func evidence(v any) string {
	s := compactJSON(v)
	if len(s) <= maxEvidence {
		return s
	}
	cut := maxEvidence
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// runEnsures evaluates ensures in order; the first failure stops.
func (t *txn) runEnsures(ec ensureCtx, ensures []ir.Ensure, b expr.Bindings) ensureResult {
	opts := &expr.EvalOptions{WorkspaceRoot: t.fileRoot(ec.root)}
	for _, en := range ensures {
		if en.Kind == ir.EnsureJudged {
			if r := t.judge(ec, en, b); r.reason != "" || r.breach != levelNone {
				return r
			}
			continue
		}
		src := en.Expression()
		p, err := t.c.program(src)
		if err != nil {
			return ensureResult{reason: fmt.Sprintf("ensure %s failed: %v", quote(src), err)}
		}
		ok, err := p.EvalPredicate(t.ctx, b, opts)
		if err != nil {
			return ensureResult{reason: fmt.Sprintf("ensure %s failed: %v", quote(src), err)}
		}
		if !ok {
			val, _ := b.Result.Value()
			return ensureResult{reason: fmt.Sprintf("ensure %s failed: evaluated to false on result %s", quote(src), evidence(val))}
		}
	}
	return ensureResult{}
}

// judge decides one judged ensure, failing closed, and debits its usage.
func (t *txn) judge(ec ensureCtx, en ir.Ensure, b expr.Bindings) ensureResult {
	val, _ := b.Result.Value()
	in, _ := b.Input.Value()
	var v judge.Verdict
	var reason string
	if t.e.opts.Judge == nil {
		reason = "judged predicate requires a configured judge runner"
	} else {
		var err error
		judgeCtx := expr.NewObject(2)
		judgeCtx.Set("result", val)
		judgeCtx.Set("input", in)
		v, err = t.e.opts.Judge.Judge(t.ctx, judge.Request{Criterion: en.Statement, Stakes: string(en.Stakes), Context: judgeCtx})
		switch {
		case err != nil:
			reason = cleanText("judged predicate failed: " + err.Error())
		case !validLedger(Ledger{USD: v.Usage.USD, Tokens: float64(v.Usage.Tokens)}):
			reason = "judge runner returned a malformed outcome"
		case !v.Holds:
			reason = fmt.Sprintf("ensure judged %s failed: %s", quote(en.Statement), cleanText(v.Reason))
		}
	}
	v.Reason, v.Model = cleanText(v.Reason), cleanText(v.Model)
	model := v.Model
	if model == "" {
		model = "none"
	}
	detail := map[string]any{"statement": en.Statement, "holds": reason == "", "reason": v.Reason,
		"stakes": string(en.Stakes), "model": model, "usage": map[string]any{"tokens": float64(v.Usage.Tokens), "usd": v.Usage.USD}}
	if reason != "" && v.Reason == "" {
		detail["reason"] = reason
	}
	if ec.itemIndex != nil {
		detail["itemIndex"] = *ec.itemIndex
		detail["stage"] = *ec.stage
	}
	t.emit("judged", ec.stepID, detail)
	res := ensureResult{reason: reason}
	amt := Ledger{USD: v.Usage.USD, Tokens: float64(v.Usage.Tokens)}
	if !amt.IsZero() {
		tele := &Telemetry{Model: v.Model}
		if tele.Model == "" {
			tele.Model = "unknown"
		}
		t.receipt("judged", "", ec.stepID, amt, tele, nil)
		if ec.itemIndex != nil {
			t.emit("fanout_ledger_debit", ec.stepID, map[string]any{"itemIndex": *ec.itemIndex, "amount": amt, "source": "judged"})
		}
		switch lvl := t.settle(ec.sc, ec.step, ec.st, amt, ec.task); lvl {
		case levelFlow:
			res = ensureResult{reason: "flow budget exhausted (judged predicate)", breach: levelFlow}
		case levelSubflow:
			res = ensureResult{reason: "subflow budget exhausted (judged predicate)", breach: levelSubflow}
		case levelTask:
			res = ensureResult{reason: "task budget exhausted (judged predicate)", breach: levelTask}
		}
	}
	return res
}

func validLedger(l Ledger) bool {
	for _, f := range []float64{l.USD, l.Tokens, l.Dispatches, l.MS} {
		if !validAmount(f) {
			return false
		}
	}
	return true
}

// predicate evaluates iterate.until like an ensure expression.
func (t *txn) predicate(src string, b expr.Bindings) (bool, string) {
	p, err := t.c.program(src)
	if err != nil {
		return false, err.Error()
	}
	ok, err := p.EvalPredicate(t.ctx, b, &expr.EvalOptions{WorkspaceRoot: t.st.WorkspaceRoot})
	if err != nil {
		return false, err.Error()
	}
	if !ok {
		val, _ := b.Result.Value()
		return false, "evaluated to false on result " + evidence(val)
	}
	return true, ""
}
