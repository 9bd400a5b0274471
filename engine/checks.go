package engine

import (
	"context"
	"fmt"

	"github.com/stratum-go/stratum/expr"
	"github.com/stratum-go/stratum/ir"
)

// reportChecks is everything the checks of one reported result read: the
// declared contract, the ensures, the iterate condition, the output and
// the bindings, and the jails of the file predicates. The values come from
// the plan (fixed for the run), the report itself, and the scope's input
// and item (fixed for as long as the report's dispatch token is current);
// see docs/engine.md, "Checks outside the lock".
type reportChecks struct {
	outName  string
	contract *ir.Contract
	ensures  []ir.Ensure
	// until is the iterate condition ("" for none), checked within the
	// same work budget once every ensure held.
	until  string
	output any
	b      expr.Bindings
	// root is the jail of the ensures' file predicates; untilRoot the
	// iterate condition's (the workspace root).
	root, untilRoot fileJail
}

// predicateOutcome is the outcome of an iterate condition: why it did
// not hold ("" when it held).
type predicateOutcome struct {
	holds bool
	why   string
}

// checkOutcome is what evaluating a report's checks gave, and what it was
// evaluated against.
type checkOutcome struct {
	// contract is the contract's failure ("" when the output fits it).
	contract string
	// failAt is the index of the first expression ensure that failed (-1
	// when none did), reason its failure.
	failAt int
	reason string
	until  predicateOutcome
	// revision, root and untilRoot are what the evaluation read besides
	// the report and the token: the plan's digest and the file jails.
	revision        string
	root, untilRoot fileJail
	// interrupted: the evaluation was stopped (a cancel in this process)
	// and its outcome says nothing.
	interrupted bool
	// unfinished: the checks ran out of the work allowed under the lock
	// (inlineUnits); they are evaluated again outside it.
	unfinished bool
}

// key is the outsideKey of this context's report checks (index -1) or of
// its index-th judged ensure.
func (ec ensureCtx) key(index int, token string) outsideKey {
	k := outsideKey{step: ec.stepID, item: -1, index: index, token: token}
	if ec.itemIndex != nil {
		k.item, k.stage = *ec.itemIndex, *ec.stage
	}
	return k
}

// inlineUnits is the work a report's checks may do under the run's lock
// before they move outside it: a few milliseconds at most (a unit is
// 10-40 ns of regex matching, less of anything else), so that the
// everyday report (a contract, a few ensures) is decided in one
// transition, and only costly checks pay for a second one.
const inlineUnits = 1 << 18

// The modes of an evaluation of checks, for the test hook.
const (
	checksInline  = "inline"  // under the lock, within inlineUnits
	checksOutside = "outside" // with the lock free
	checksLocked  = "locked"  // under the lock, the whole budget
)

// reportChecks is the outcome of a report's checks. The first time a
// transition reaches them it evaluates them within inlineUnits; checks
// that need more stop the transition (needOutside), and Engine.transition
// evaluates them with the run's lock free, so that a cancel, a status or
// another report is served meanwhile. The transition then runs again and
// reuses that outcome when it is sound to (reusable). When it is not, or
// the transition cannot stop (outside Engine.transition), the checks are
// evaluated under the lock, as they always were. Each way gives the same
// outcome: a budget only changes an outcome by running out, and checks
// that ran out of the smaller one are evaluated again with the whole one.
func (t *txn) reportChecks(ec ensureCtx, rc *reportChecks) *checkOutcome {
	key := ec.key(-1, ec.token)
	full := expr.NewBudget(t.e.opts.EnsureBudget).Limit()
	oc, asked := t.outside[key].(*checkOutcome)
	if asked && oc.reusable(t, rc) {
		return oc
	}
	if asked || !t.deferrable || ec.token == "" || full <= inlineUnits {
		return t.e.evalChecks(t.ctx, t.c, rc, full, checksLocked)
	}
	if oc := t.e.evalChecks(t.ctx, t.c, rc, inlineUnits, checksInline); !oc.unfinished {
		return oc
	}
	e, c, runID := t.e, t.c, t.st.ID
	panic(&needOutside{key: key, sameTime: true, work: func(ctx context.Context) any {
		return e.evalChecksUnlocked(ctx, runID, ec.token, c, rc, full)
	}})
}

// reusable reports whether an outcome evaluated outside the lock is the
// one the same checks would give under it. The transition reaches the
// checks again only after it found the report's dispatch token still
// current for the same step (or item and stage), under the lock: a cancel,
// a revise, a revert, a newer attempt or an accepted duplicate would have
// made the report stale or refused before. With the token current, every
// value the checks read is the one they read outside: the plan is the
// run's (compared by digest), the output is the report's own, and the
// scope's input and the item's bindings only change with a new issuance,
// hence a new token. The file jails are compared too. What files hold is
// not the run's state and no lock orders it: reading them a moment before
// the lock is taken is as valid as reading them after. An interrupted
// evaluation is never reused.
func (oc *checkOutcome) reusable(t *txn, rc *reportChecks) bool {
	return !oc.interrupted && oc.revision == t.c.digest && oc.root == rc.root && oc.untilRoot == rc.untilRoot
}

// evalChecksUnlocked evaluates a report's checks outside the run's lock,
// as an effect of the report's dispatch token (effectContext): a cancel
// stops the evaluation at once in this process, and within
// effectPollInterval from another one, as does the token's end. The
// outcome is then marked interrupted, and the transition that follows
// finds the run cancelled or the report stale and refuses it.
func (e *Engine) evalChecksUnlocked(ctx context.Context, runID, token string, c *compiled, rc *reportChecks, limit int64) *checkOutcome {
	ctx, release := e.effectContext(ctx, runID, token)
	defer release()
	oc := e.evalChecks(ctx, c, rc, limit, checksOutside)
	oc.interrupted = ctx.Err() != nil
	return oc
}

// evalChecks evaluates the checks of a reported output in their order,
// within a work budget of limit units: the contract, the expression
// ensures, then the iterate condition (docs/expressions.md, "Work
// budget"). Judged ensures are skipped: they never touch the budget, and
// the transition decides them in order from their verdicts
// (walkEnsures). The first failure stops. It reads only rc and the plan.
// mode says where it runs (for the test hook).
func (e *Engine) evalChecks(ctx context.Context, c *compiled, rc *reportChecks, limit int64, mode string) *checkOutcome {
	if e.checkHook != nil {
		e.checkHook(ctx, mode)
	}
	oc := &checkOutcome{failAt: -1, revision: c.digest, root: rc.root, untilRoot: rc.untilRoot}
	if rc.contract != nil {
		if errs := rc.contract.Validate(rc.output, "result"); len(errs) > 0 {
			oc.contract = contractMessage(rc.outName, errs)
			return oc
		}
	}
	budget := expr.NewBudget(limit)
	defer func() {
		// Out of a budget smaller than the report's: the outcome may not
		// be the one the whole budget gives.
		oc.unfinished = mode == checksInline && budget.Exhausted()
	}()
	opts := rc.root.options(budget)
	for i, en := range rc.ensures {
		if en.Kind == ir.EnsureJudged {
			continue
		}
		src := en.Expression()
		if holds, why := evalPredicate(ctx, c, src, rc.b, opts); !holds {
			oc.failAt, oc.reason = i, fmt.Sprintf("ensure %s failed: %s", quote(src), why)
			return oc
		}
	}
	if rc.until != "" {
		oc.until.holds, oc.until.why = evalPredicate(ctx, c, rc.until, rc.b, rc.untilRoot.options(budget))
	}
	return oc
}

// evalPredicate evaluates one ensure expression or iterate condition:
// whether it held, and why not.
func evalPredicate(ctx context.Context, c *compiled, src string, b expr.Bindings, opts *expr.EvalOptions) (bool, string) {
	p, err := c.program(src)
	if err != nil {
		return false, err.Error()
	}
	tr, err := p.EvalPredicateTrace(ctx, b, opts)
	if err != nil {
		return false, evalError(err) + explained(tr)
	}
	if !tr.Holds {
		val, _ := b.Result.Value()
		return false, "evaluated to false on result " + evidence(val) + explained(tr)
	}
	return true, ""
}
