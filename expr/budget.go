package expr

import (
	"errors"
	"fmt"
	"sync/atomic"
)

// DefaultBudget is the work, in units, that the evaluations sharing a
// [Budget] made with [NewBudget](0) may do in total, and what one
// evaluation given no Budget may do alone. A unit is about one state of a
// regex pattern matched over one character (the cost [MaxMatchWork]
// counts); comparing, scanning or building 16 bytes of strings, visiting
// one value in an equality, a membership test or a binding check, and
// evaluating one syntax node are a unit each. It is twice [MaxMatchWork],
// so that every expression that fits its own regex cap fits a budget of
// its own.
//
// What it costs in time depends on the pattern: measured on a 2-vCPU AMD
// EPYC, a unit of regex matching takes 10-40 ns (large Unicode classes are
// the slowest), so a step whose ensures exhaust the default spends about
// 1.5-5 s of CPU; everything else is far cheaper per unit.
const DefaultBudget = 2 * MaxMatchWork

// bytesPerUnit is how many bytes of string work make one unit.
const bytesPerUnit = 16

// fileUnits is what one file_exists or file_contains call costs on top of
// the bytes it reads: a handful of system calls.
const fileUnits = 4096

// flushUnits is how much work an evaluation sharing a Budget counts locally
// before it adds it to the Budget; evaluations running at the same time
// may together overshoot the limit by at most this much each.
const flushUnits = 1 << 16

// ErrBudgetExhausted is the cause (errors.Is) of the resource_limit *Error
// of an evaluation that ran out of work budget.
var ErrBudgetExhausted = errors.New("expression work budget exhausted")

// Budget bounds the work of a group of evaluations in total: the engine
// makes one for the ensures of a step (docs/expressions.md, "Limits"), so
// that a thousand ensures cost at most what the budget allows rather than a
// thousand times what one expression may cost. Pass it in
// [EvalOptions].Budget to every evaluation of the group. Once the work
// counted reaches the limit, evaluations fail with a resource_limit *Error
// wrapping [ErrBudgetExhausted], and every later evaluation sharing the
// Budget fails at its first step.
//
// A Budget is safe for concurrent use; evaluations that share it
// concurrently may overshoot the limit by a little (see flushUnits) but
// never by a whole evaluation.
type Budget struct {
	limit int64
	used  atomic.Int64
}

// NewBudget returns a Budget of limit units; a limit of 0 or less means
// [DefaultBudget].
func NewBudget(limit int64) *Budget {
	if limit <= 0 {
		limit = DefaultBudget
	}
	return &Budget{limit: limit}
}

// Limit reports the budget's limit in units.
func (b *Budget) Limit() int64 { return b.limit }

// Used reports the units charged so far (it may exceed the limit by the
// charge that exhausted it).
func (b *Budget) Used() int64 { return b.used.Load() }

// Exhausted reports whether the work charged has reached the limit.
func (b *Budget) Exhausted() bool { return b.used.Load() >= b.limit }

// startBudget sets an evaluation's allowance: all of a private budget, or
// what is left of the shared one, counted out flushUnits at a time. A
// shared budget already spent fails the evaluation before its first node.
func (ev *evaluator) startBudget(b *Budget) *Error {
	ev.budget = b
	if b == nil {
		ev.slack = DefaultBudget
		return nil
	}
	return ev.startShared()
}

func (ev *evaluator) startShared() *Error {
	b := ev.budget
	left := b.limit - b.used.Load()
	if left <= 0 {
		ev.nodes = 1 // the first node, charged by finishBudget
		return sharedExhausted(b)
	}
	ev.slack = int(min(flushUnits, left))
	return nil
}

// charge counts n units of work; it fails once the budget is spent.
func (ev *evaluator) charge(n int) *Error {
	ev.work += n
	if ev.work <= ev.slack {
		return nil
	}
	return ev.flush()
}

// flush adds the work counted locally to the shared Budget and takes the
// next allowance, or reports the budget exhausted.
func (ev *evaluator) flush() *Error {
	b := ev.budget
	if b == nil {
		if ev.work <= ev.slack {
			return nil
		}
		return &Error{Code: CodeResourceLimit, Offset: -1, Err: ErrBudgetExhausted,
			Message: fmt.Sprintf("this evaluation exceeded its work budget of %d units (regex matching, comparisons, string building and file reading are counted)", int64(DefaultBudget))}
	}
	ev.total += ev.work
	used := b.used.Add(int64(ev.work))
	ev.work = 0
	left := b.limit - used
	if left < 0 {
		ev.slack = 0
		return sharedExhausted(b)
	}
	ev.slack = int(min(flushUnits, left))
	return nil
}

func sharedExhausted(b *Budget) *Error {
	return &Error{Code: CodeResourceLimit, Offset: -1, Err: ErrBudgetExhausted,
		Message: fmt.Sprintf("the evaluations sharing this work budget exceeded its %d units (regex matching, comparisons, string building and file reading are counted)", b.limit)}
}

// finishBudget charges the nodes not yet charged (checkpoint charges them
// in batches) and adds what is left of the evaluation's count to the
// shared Budget. It fails when those nodes do not fit.
func (ev *evaluator) finishBudget() *Error {
	err := ev.charge(ev.nodes % checkEvery)
	if ev.budget != nil {
		ev.settle()
	}
	return err
}

// settle adds the work counted and not yet added to the shared Budget.
func (ev *evaluator) settle() {
	if ev.work > 0 {
		ev.total += ev.work
		ev.budget.used.Add(int64(ev.work))
		ev.work = 0
	}
}
