package engine

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/stratum-go/stratum/expr"
	"github.com/stratum-go/stratum/ir"
)

// Budget levels, in increasing severity.
type level int

const (
	levelNone level = iota
	levelTask
	levelSubflow
	levelFlow
)

func (l level) String() string {
	return [...]string{"none", "task", "subflow", "flow"}[l]
}

type ledgerRef struct {
	lvl   level
	limit *ir.Budget
	spent *Ledger
}

// ledgers are the ledgers a debit for step s in scope sc applies to:
// flow, subflow (the enclosing run step's), task (the step's own, only
// when task is set: do and fanout steps).
func (t *txn) ledgers(sc *scope, s *ir.Step, st *stepState, task bool) []ledgerRef {
	out := []ledgerRef{{levelFlow, t.rootScope().flow.Budget, &t.st.FlowSpent}}
	if !sc.root() {
		out = append(out, ledgerRef{levelSubflow, sc.parentStep.Budget, &sc.parent.Spent})
	}
	if task && s != nil && st != nil {
		out = append(out, ledgerRef{levelTask, s.Budget, &st.Spent})
	}
	return out
}

// exceeds reports whether spent+amt breaches a declared key of limit.
func exceeds(limit *ir.Budget, spent, amt Ledger) bool {
	if limit == nil {
		return false
	}
	over := func(lim, sp, a float64) bool { return lim > 0 && sp+a > lim }
	return over(limit.USD, spent.USD, amt.USD) || over(float64(limit.Tokens), spent.Tokens, amt.Tokens) ||
		over(float64(limit.Dispatches), spent.Dispatches, amt.Dispatches) || over(float64(limit.MS), spent.MS, amt.MS)
}

// reserve debits amt from every applicable ledger, or from none when any
// would breach; it returns the first breached level (flow, subflow, task).
func (t *txn) reserve(sc *scope, s *ir.Step, st *stepState, amt Ledger, task bool) level {
	ls := t.ledgers(sc, s, st, task)
	for _, l := range ls {
		if exceeds(l.limit, *l.spent, amt) {
			return l.lvl
		}
	}
	for _, l := range ls {
		*l.spent = l.spent.add(amt)
	}
	t.touchLedgers(sc, st)
	return levelNone
}

// touchLedgers marks the step states whose ledgers a debit changed.
func (t *txn) touchLedgers(sc *scope, st *stepState) {
	if st != nil {
		st.touch()
	}
	if sc.parent != nil {
		sc.parent.touch()
	}
}

// settle debits amt from every applicable ledger (the money is spent) and
// returns the worst level now over its limit.
func (t *txn) settle(sc *scope, s *ir.Step, st *stepState, amt Ledger, task bool) level {
	worst := levelNone
	for _, l := range t.ledgers(sc, s, st, task) {
		if exceeds(l.limit, *l.spent, amt) && l.lvl > worst {
			worst = l.lvl
		}
		*l.spent = l.spent.add(amt)
	}
	t.touchLedgers(sc, st)
	return worst
}

// reserveDispatch reserves the one dispatch of an issuance. On a breach
// it applies the outcome (flow: the run is budget_exhausted; subflow: the
// parent run step fails; task: onTask records a failed attempt) and
// reports false.
func (t *txn) reserveDispatch(sc *scope, s *ir.Step, st *stepState, attempt int, onTask func(reason string)) bool {
	switch t.reserve(sc, s, st, Ledger{Dispatches: 1}, true) {
	case levelNone:
		return true
	case levelFlow:
		t.exhaustRun(&Failure{Attempt: attempt, Reason: "flow budget exhausted"})
	case levelSubflow:
		t.scopeFailed(sc, &Failure{Attempt: attempt, Reason: "subflow budget exhausted"})
	case levelTask:
		onTask("task budget exhausted")
	}
	return false
}

// receipt records a usage receipt and its usage_debit event.
func (t *txn) receipt(source, dispatchID, stepID string, amt Ledger, tele *Telemetry, extra map[string]any) int64 {
	t.st.ReceiptCounter++
	seq := t.st.ReceiptCounter
	if dispatchID == "" {
		dispatchID = fmt.Sprintf("legacy:%d", seq)
	}
	t.st.ReceiptTotal = t.st.ReceiptTotal.add(amt)
	model := "unknown"
	var dur float64
	if tele != nil {
		model, dur = tele.Model, tele.DurationMs
	}
	d := map[string]any{"seq": seq, "dispatchId": dispatchID, "source": source, "amount": amt, "model": model, "durationMs": dur}
	if tele != nil && tele.Effort != "" {
		d["effort"] = tele.Effort
	}
	for k, v := range extra {
		d[k] = v
	}
	t.emit(EventUsageDebit, stepID, d)
	return seq
}

// engineReceipt records an engine receipt (step reset, revert) with an
// empty amount and no usage_debit event.
func (t *txn) engineReceipt() int64 {
	t.st.ReceiptCounter++
	return t.st.ReceiptCounter
}

// Telemetry is what a connector reports about an attempt.
type Telemetry struct {
	DurationMs float64 `json:"durationMs"`
	Model      string  `json:"model"`
	Effort     string  `json:"effort,omitempty"`
}

func (tl *Telemetry) apply(a *Attempt) {
	if tl == nil {
		return
	}
	d := tl.DurationMs
	a.DurationMs = &d
	a.Model = tl.Model
	a.Effort = tl.Effort
}

var errShape = errors.New("bad shape")

// maxAmount bounds one reported amount (usd, tokens, ms, a duration). Far
// above any real cost, it keeps every ledger sum finite: an amount near
// the float64 limit would overflow a ledger to +Inf, which JSON cannot
// store, and wedge the run.
const maxAmount = 1e15

// validAmount reports a finite, non-negative amount within maxAmount.
func validAmount(f float64) bool {
	return f >= 0 && f <= maxAmount // false for NaN and ±Inf too
}

// parseTelemetry checks a reported telemetry object: {durationMs ≥ 0,
// model non-empty, effort? non-empty}, nothing else.
// absent reports a usage or telemetry value that was not given: nil, or
// raw JSON of no bytes.
func absent(v any) bool {
	raw, isRaw := v.(json.RawMessage)
	return v == nil || isRaw && len(raw) == 0
}

func parseTelemetry(v any) (*Telemetry, error) {
	if absent(v) {
		return nil, nil
	}
	m, err := toModel(v)
	if err != nil {
		return nil, err
	}
	o, ok := m.(*expr.Object)
	if !ok {
		return nil, errShape
	}
	tl := &Telemetry{}
	seen := 0
	for _, k := range o.Keys() {
		x, _ := o.Get(k)
		switch k {
		case "durationMs":
			f, ok := x.(float64)
			if !ok || !validAmount(f) {
				return nil, errShape
			}
			tl.DurationMs = f
			seen++
		case "model":
			s, ok := x.(string)
			if !ok || s == "" {
				return nil, errShape
			}
			tl.Model = s
			seen++
		case "effort":
			s, ok := x.(string)
			if !ok || s == "" {
				return nil, errShape
			}
			tl.Effort = s
		default:
			return nil, errShape
		}
	}
	if seen != 2 {
		return nil, errShape
	}
	return tl, nil
}

// parseUsage checks a reported usage object: keys among usd, tokens,
// dispatches, ms with finite non-negative numbers. It returns the amount
// without dispatches and whether dispatches were reported.
func parseUsage(v any) (Ledger, bool, error) {
	if absent(v) {
		return Ledger{}, false, nil
	}
	m, err := toModel(v)
	if err != nil {
		return Ledger{}, false, err
	}
	o, ok := m.(*expr.Object)
	if !ok {
		return Ledger{}, false, errShape
	}
	var l Ledger
	dispatches := false
	for _, k := range o.Keys() {
		x, _ := o.Get(k)
		f, ok := x.(float64)
		if !ok || !validAmount(f) {
			return Ledger{}, false, errShape
		}
		switch k {
		case "usd":
			l.USD = f
		case "tokens":
			l.Tokens = f
		case "ms":
			l.MS = f
		case "dispatches":
			dispatches = true
		default:
			return Ledger{}, false, errShape
		}
	}
	return l, dispatches, nil
}
