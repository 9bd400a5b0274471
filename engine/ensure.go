package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/stratum-go/stratum/expr"
	"github.com/stratum-go/stratum/ir"
	"github.com/stratum-go/stratum/judge"
)

// outsideKey names one piece of work a transition had done outside the
// run's lock (see needOutside): a judged ensure of one report (index is
// the ensure's index in its list), or the checks of one report (index
// -1, token the report's dispatch token). step is scoped; item and stage
// are -1 and 0 outside fanouts.
type outsideKey struct {
	step               string
	item, stage, index int
	token              string
}

// judgeOutcome is a judge's answer, asked outside the run's lock.
type judgeOutcome struct {
	verdict judge.Verdict
	err     error
}

// needOutside stops a transition that needs work done outside the run's
// lock: a judge's verdict (txn.judge) or the evaluation of a reported
// result's checks (txn.reportChecks). Engine.transition does the work
// with the lock free, then runs the transition again with its outcome in
// txn.outside. The work reads only what it was given: the transition it
// stopped is discarded, and nothing else holds that state.
type needOutside struct {
	key  outsideKey
	work func(ctx context.Context) any
	// sameTime: the transition runs again at the time it stopped (at),
	// as one transition. The checks of a report keep it: they were part
	// of the transition before they moved out of the lock, and its
	// events keep the time they always had. A judge's round reads the
	// clock again, as it always did.
	sameTime bool
	at       time.Time
}

func (n *needOutside) Error() string {
	return "work outside the run's lock is needed for " + n.key.step
}

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
	// until is the iterate condition's outcome, when the checks had one
	// and every ensure held.
	until predicateOutcome
}

// checkOutput holds a reported output to a step's (or a fanout stage's)
// declared contract, then to its ensures, the one sequence of result
// checks of do steps and fanout items (docs/engine.md, "Step results and
// failure context"). The contract and the expression ensures are
// evaluated by txn.reportChecks (outside the run's lock when they are
// costly); judged ensures are decided here, in order, from their judges'
// verdicts.
func (t *txn) checkOutput(rc *reportChecks, ec ensureCtx) outputVerdict {
	oc := t.reportChecks(ec, rc)
	if oc.contract != "" {
		return outputVerdict{kind: kindContract, reason: oc.contract}
	}
	if er := t.walkEnsures(ec, rc.ensures, rc.b, oc); er.reason != "" {
		return outputVerdict{kind: kindEnsure, reason: er.reason, breach: er.breach}
	}
	return outputVerdict{until: oc.until}
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
	// token is the dispatch token of the report being checked ("" for a
	// set step's ensures, which no report carries).
	token string
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

// runEnsures evaluates a set step's ensures in order, under the lock
// (they check a value the transition itself computed); the first failure
// stops.
func (t *txn) runEnsures(ec ensureCtx, ensures []ir.Ensure, b expr.Bindings) ensureResult {
	oc := t.e.evalChecks(t.ctx, t.c, &reportChecks{ensures: ensures, b: b, root: t.fileJail(ec.root)}, t.e.opts.EnsureBudget, checksLocked)
	return t.walkEnsures(ec, ensures, b, oc)
}

// walkEnsures goes through ensures in order with the outcome of their
// expressions: the first failure stops, whether it is an expression's
// (evaluated in evalChecks) or a judge's (decided here).
func (t *txn) walkEnsures(ec ensureCtx, ensures []ir.Ensure, b expr.Bindings, oc *checkOutcome) ensureResult {
	for i, en := range ensures {
		if i == oc.failAt {
			return ensureResult{reason: oc.reason}
		}
		if en.Kind == ir.EnsureJudged {
			if r := t.judge(ec, i, en, b); r.reason != "" || r.breach != levelNone {
				return r
			}
		}
	}
	return ensureResult{}
}

// judge decides one judged ensure (the index-th of its list), failing
// closed, and debits its usage. The judge is never called here, inside a
// transition: the verdict is one the transition was given, and when it
// has none it stops (needOutside) so that Engine.transition asks the
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
		key := ec.key(index, "")
		out, ok := t.outside[key].(judgeOutcome)
		if !ok {
			req, j := judge.Request{Criterion: en.Statement, Stakes: string(en.Stakes), Context: judgeCtx}, t.e.opts.Judge
			panic(&needOutside{key: key, work: func(ctx context.Context) any {
				v, err := j.Judge(ctx, req)
				return judgeOutcome{verdict: v, err: err}
			}})
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
