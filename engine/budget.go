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
		return nil, shapef("telemetry must be an object {durationMs, model, effort?}, not %s", kindOf(m))
	}
	tl := &Telemetry{}
	seen := 0
	for _, k := range o.Keys() {
		x, _ := o.Get(k)
		switch k {
		case "durationMs":
			f, ok := x.(float64)
			if !ok || !validAmount(f) {
				return nil, shapef("telemetry.durationMs must be a number from 0 to %g, not %s", float64(maxAmount), shown(x))
			}
			tl.DurationMs = f
			seen++
		case "model":
			s, ok := x.(string)
			if !ok || s == "" {
				return nil, shapef("telemetry.model must be a non-empty string, not %s", shown(x))
			}
			tl.Model = s
			seen++
		case "effort":
			s, ok := x.(string)
			if !ok || s == "" {
				return nil, shapef("telemetry.effort must be a non-empty string, not %s", shown(x))
			}
			tl.Effort = s
		default:
			return nil, shapef("telemetry has no field %q (fields: durationMs, model, effort)", k)
		}
	}
	if seen != 2 {
		return nil, shapef("telemetry needs both durationMs and model")
	}
	return tl, nil
}

// shapef is an errShape saying what is wrong.
func shapef(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errShape, fmt.Sprintf(format, args...))
}

// shown is a reported value as a message quotes it.
func shown(x any) string {
	if x == nil {
		return "null"
	}
	if f, ok := x.(float64); ok {
		return fmt.Sprintf("%g", f)
	}
	if s, ok := x.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	return kindOf(x)
}

// kindOf names the JSON kind of a model value.
func kindOf(x any) string {
	switch x.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case float64:
		return "a number"
	case string:
		return "a string"
	case *expr.Object:
		return "an object"
	}
	return "an array"
}

// parseUsage checks a reported usage object: keys among usd, tokens,
// dispatches, ms with finite non-negative numbers, or null for an amount
// not known (the same as leaving the key out, as the tool schemas say).
// It returns the amount without dispatches and whether dispatches were
// reported.
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
		return Ledger{}, false, shapef("usage must be an object {usd?, tokens?, ms?}, not %s", kindOf(m))
	}
	var l Ledger
	dispatches := false
	for _, k := range o.Keys() {
		x, _ := o.Get(k)
		switch k {
		case "usd", "tokens", "ms", "dispatches":
		default:
			return Ledger{}, false, shapef("usage has no field %q (fields: usd, tokens, ms)", k)
		}
		if x == nil {
			continue // not known: not reported
		}
		f, ok := x.(float64)
		if !ok || !validAmount(f) {
			return Ledger{}, false, shapef("usage.%s must be a number from 0 to %g (or null when not known), not %s", k, float64(maxAmount), shown(x))
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
		}
	}
	return l, dispatches, nil
}
