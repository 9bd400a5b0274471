package engine

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/stratum-go/stratum/expr"
	"github.com/stratum-go/stratum/ir"
	"github.com/stratum-go/stratum/judge"
)

// verdictKey names one judged ensure of one report: the step (scoped),
// the fanout item and stage (-1 and 0 outside fanouts), and the ensure's
// index in its list.
type verdictKey struct {
	step               string
	item, stage, index int
}

// judgeOutcome is a judge's answer, asked outside the run's lock.
type judgeOutcome struct {
	verdict judge.Verdict
	err     error
}

// needVerdict stops a transition that reached a judged ensure it has no
// verdict for (see txn.judge and Engine.transition).
type needVerdict struct {
	key verdictKey
	req judge.Request
}

func (n *needVerdict) Error() string { return "a judge's verdict is needed for " + n.key.step }

// ensureResult is the outcome of a step's postconditions.
type ensureResult struct {
	// reason is the first failure ("" when every ensure held).
	reason string
	// breach is the budget level a judge's usage broke (flow, subflow,
	// task); the caller applies it.
	breach level
}

// outputVerdict is the first check a reported output fails: its
// contract, then its ensures in order. kind is "" when it passed every
// one.
type outputVerdict struct {
	kind   string // kindContract or kindEnsure
	reason string
	// breach is the budget level a judge's usage broke while the ensures
	// ran (flow, subflow, task); the caller applies it.
	breach level
}

// checkOutput holds a reported output to a step's (or a fanout stage's)
// declared contract, then to its ensures, the one sequence of result
// checks of do steps and fanout items (docs/engine.md, "step_done").
func (t *txn) checkOutput(outName string, out *ir.Contract, output any, ensures []ir.Ensure, ec ensureCtx, b expr.Bindings) outputVerdict {
	if t.e.checkHook != nil {
		t.e.checkHook(t.ctx)
	}
	if out != nil {
		if errs := out.Validate(output, "result"); len(errs) > 0 {
			return outputVerdict{kind: kindContract, reason: contractMessage(outName, errs)}
		}
	}
	if er := t.runEnsures(ec, ensures, b); er.reason != "" {
		return outputVerdict{kind: kindEnsure, reason: er.reason, breach: er.breach}
	}
	return outputVerdict{}
}

// ensureCtx locates the ensures being checked, for judge events and
// ledgers.
type ensureCtx struct {
	sc     *scope
	step   *ir.Step
	st     *stepState
	stepID string
	// task: judge usage also debits the task ledger.
	task bool
	// item fields for judged events inside fanout stages.
	itemIndex *int
	stage     *int
	// root is the jail of file predicates: an item's worktree, or empty
	// for the workspace root.
	root string
	// budget bounds the work of all the ensures (and the iterate
	// condition) of one report together (docs/expressions.md, "Limits").
	budget *expr.Budget
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
	if ec.budget == nil {
		ec.budget = expr.NewBudget(t.e.opts.EnsureBudget)
	}
	opts := &expr.EvalOptions{WorkspaceRoot: t.fileRoot(ec.root), Budget: ec.budget}
	for i, en := range ensures {
		if en.Kind == ir.EnsureJudged {
			if r := t.judge(ec, i, en, b); r.reason != "" || r.breach != levelNone {
				return r
			}
			continue
		}
		src := en.Expression()
		p, err := t.c.program(src)
		if err != nil {
			return ensureResult{reason: fmt.Sprintf("ensure %s failed: %v", quote(src), err)}
		}
		tr, err := p.EvalPredicateTrace(t.ctx, b, opts)
		if err != nil {
			return ensureResult{reason: fmt.Sprintf("ensure %s failed: %s%s", quote(src), evalError(err), explained(tr))}
		}
		if !tr.Holds {
			val, _ := b.Result.Value()
			return ensureResult{reason: fmt.Sprintf("ensure %s failed: evaluated to false on result %s%s", quote(src), evidence(val), explained(tr))}
		}
	}
	return ensureResult{}
}

// judge decides one judged ensure (the index-th of its list), failing
// closed, and debits its usage. The judge is never called here, inside a
// transition: the verdict is one the transition was given, and when it
// has none it stops (needVerdict) so that Engine.transition asks the
// judge outside the run's lock and runs the transition again.
func (t *txn) judge(ec ensureCtx, index int, en ir.Ensure, b expr.Bindings) ensureResult {
	val, _ := b.Result.Value()
	in, _ := b.Input.Value()
	var v judge.Verdict
	var reason string
	if t.e.opts.Judge == nil {
		reason = "judged predicate requires a configured judge runner"
	} else {
		judgeCtx := expr.NewObject(2)
		judgeCtx.Set("result", val)
		judgeCtx.Set("input", in)
		key := verdictKey{step: ec.stepID, item: -1, index: index}
		if ec.itemIndex != nil {
			key.item, key.stage = *ec.itemIndex, *ec.stage
		}
		out, ok := t.verdicts[key]
		if !ok {
			panic(&needVerdict{key: key, req: judge.Request{Criterion: en.Statement, Stakes: string(en.Stakes), Context: judgeCtx}})
		}
		v = out.verdict
		err := out.err
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
	detail := JudgedDetail{Statement: en.Statement, Holds: reason == "", Reason: v.Reason, Stakes: string(en.Stakes), Model: model,
		Usage: JudgeUsage{Tokens: float64(v.Usage.Tokens), USD: v.Usage.USD}, ItemIndex: ec.itemIndex, Stage: ec.stage}
	if reason != "" && v.Reason == "" {
		detail.Reason = reason
	}
	t.emit(EventJudged, ec.stepID, detail)
	res := ensureResult{reason: reason}
	amt := Ledger{USD: v.Usage.USD, Tokens: float64(v.Usage.Tokens)}
	if !amt.IsZero() {
		tele := &Telemetry{Model: v.Model}
		if tele.Model == "" {
			tele.Model = "unknown"
		}
		t.receipt("judged", "", ec.stepID, amt, tele, nil)
		if ec.itemIndex != nil {
			t.emit(EventFanoutLedgerDebit, ec.stepID, map[string]any{"itemIndex": *ec.itemIndex, "amount": amt, "source": "judged"})
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

// predicate evaluates iterate.until like an ensure expression, within
// the budget of the report's ensures.
func (t *txn) predicate(src string, b expr.Bindings, budget *expr.Budget) (bool, string) {
	p, err := t.c.program(src)
	if err != nil {
		return false, err.Error()
	}
	tr, err := p.EvalPredicateTrace(t.ctx, b, &expr.EvalOptions{WorkspaceRoot: t.st.WorkspaceRoot, Budget: budget})
	if err != nil {
		return false, evalError(err) + explained(tr)
	}
	if !tr.Holds {
		val, _ := b.Result.Value()
		return false, "evaluated to false on result " + evidence(val) + explained(tr)
	}
	return true, ""
}

// evalError words an evaluation error for a failure reason; running out
// of the work budget says so plainly (code resource_limit).
func evalError(err error) string {
	if errors.Is(err, expr.ErrBudgetExhausted) {
		msg := err.Error() // expr's errors start with their code
		if !strings.HasPrefix(msg, "resource_limit: ") {
			msg = "resource_limit: " + msg
		}
		return msg + "; the ensures of one step share one budget: use fewer or cheaper expressions"
	}
	return err.Error()
}

// explained is what the file predicates of an evaluation looked up, as a
// suffix of a failure reason ("" when it read no file).
func explained(tr expr.Trace) string {
	if x := tr.Explain(); x != "" {
		return "; " + x
	}
	return ""
}
