package engine

import (
	"fmt"
	"strings"

	"github.com/stratum-go/stratum/expr"
	"github.com/stratum-go/stratum/ir"
)

// maxAdvanceRounds bounds the outer scheduling loop; every round makes
// progress (a step changes status), so a spec of n steps settles in far
// fewer rounds. Reaching it means a scheduling bug, reported as a failure
// rather than a hang.
const maxAdvanceRounds = 1 << 20

// running reports whether scheduling may continue.
func (t *txn) running() bool {
	return t.st.Status == StatusRunning && !t.st.CancelRequested
}

// scopeLive reports whether a scope may still schedule: the run is
// running and, for a child scope, its run step still is too (a subflow
// budget breach or a child failure ends it in the middle of a pass).
func (t *txn) scopeLive(sc *scope) bool {
	return t.running() && (sc.root() || sc.parent.Status == StepRunning)
}

// advance schedules until nothing changes (spec/engine.md 2): carry
// materialisation, a pass over the root scope, a pass over each active
// subflow and its settlement, repeated while anything changed; then
// completion or dead-end detection of the root.
func (t *txn) advance() {
	for round := 0; t.running(); round++ {
		if round >= maxAdvanceRounds {
			t.failRun(&Failure{Reason: "internal error: scheduling did not settle", Cause: CauseInternal})
			return
		}
		changed := t.materialiseCarry()
		if !t.running() {
			return
		}
		root := t.rootScope()
		changed = t.pass(root) || changed
		for _, s := range root.liveSteps() {
			if !t.running() {
				return
			}
			if s.Kind != ir.KindRun {
				continue
			}
			st := root.peek(s)
			if st == nil || st.Status != StepRunning || st.Sub == nil {
				continue
			}
			child := t.childScope(root, s)
			changed = t.pass(child) || changed
			changed = t.settleChild(root, child) || changed
		}
		if !changed {
			break
		}
	}
	t.finishRoot()
	if t.e.verifyWrites {
		if err := t.checkSettled(); err != nil {
			panic(err) // tests only: a change that made no step a candidate
		}
	}
}

// pass brings a scope's steps up to date: the root scope considers only
// its candidates (the steps a change of this transition can affect, see
// schedule.go) unless a full sweep is due; a child scope (a subflow, small)
// is swept whole.
func (t *txn) pass(sc *scope) bool {
	if sc.root() && !sc.full {
		return t.passCandidates(sc)
	}
	sc.full = false
	return t.sweep(sc)
}

// sweep sweeps a scope in declaration order until a sweep changes nothing
// (or the scope ends: the run, or a child's run step, is no longer
// running).
func (t *txn) sweep(sc *scope) bool {
	any := false
	for sweep := 0; t.scopeLive(sc); sweep++ {
		if sweep >= maxAdvanceRounds {
			t.failRun(&Failure{Reason: "internal error: scheduling did not settle", Cause: CauseInternal})
			return true
		}
		changed := false
		for _, s := range sc.flow.Steps {
			if !t.scopeLive(sc) {
				return true
			}
			if t.step(sc, s) {
				changed = true
			}
		}
		if !changed {
			break
		}
		any = true
	}
	return any
}

// step lets one step act if it can: a pending step is activated (or
// skipped), a running fanout promotes or settles its items. It reports
// whether anything changed.
func (t *txn) step(sc *scope, s *ir.Step) bool {
	st := sc.peek(s)
	if st == nil {
		st = sc.state(s)
	}
	switch st.Status {
	case StepPending:
		changed := t.activate(sc, s, st)
		if changed && s.Kind == ir.KindFanout && st.Status == StepRunning {
			sc.cand.add(s.Index) // its items are promoted in the next sweep
		}
		return changed
	case StepRunning:
		return s.Kind == ir.KindFanout && t.progressFanout(sc, s, st)
	}
	return false
}

// activate tries to start a pending step; it reports whether the state
// changed.
func (t *txn) activate(sc *scope, s *ir.Step, st *stepState) bool {
	if s.RouteOnly() && st.Routed == nil {
		return t.skipUnrouted(sc, s, st)
	}
	if ready, changed := t.depsReady(sc, s, st); !ready {
		return changed
	}
	if s.HasWhen {
		ok, why := t.evalWhen(sc, s)
		if !ok {
			t.skip(sc, s, st, &SkipInfo{Reason: why})
			return true
		}
	}
	switch s.Kind {
	case ir.KindSet:
		t.runSet(sc, s, st)
	case ir.KindGate:
		st.Status = StepWaitingGate
		st.GateToken = t.token()
		st.Decision = ""
		st.GateDigest = digestReview(t.underReview(sc, s))
		t.emit(EventGateWaiting, sc.scoped(s.ID), GateWaitingDetail{Digest: st.GateDigest})
	case ir.KindFanout:
		t.activateFanout(sc, s, st)
	case ir.KindRun:
		t.activateRun(sc, s, st)
	case ir.KindEvaluate:
		t.startEvaluate(sc, s, st)
	case ir.KindDo:
		t.issueDo(sc, s, st)
	}
	return true
}

// skipUnrouted skips a route-only step once every step that could route
// to it has finished without doing so (DESIGN decision 10: gate targets
// too, so a gate with distinct approve and kill targets completes).
func (t *txn) skipUnrouted(sc *scope, s *ir.Step, st *stepState) bool {
	var decided []string
	for _, ri := range s.RoutedFrom {
		r := sc.flow.Steps[ri]
		rs := sc.peek(r)
		if rs == nil || !isTerminalStep(rs.Status) {
			return false
		}
		switch {
		case r.Kind == ir.KindGate && rs.Status == StepSucceeded:
			decided = append(decided, fmt.Sprintf("gate %q resolved %s", r.ID, rs.Decision))
		case rs.Status == StepSkipped:
			decided = append(decided, fmt.Sprintf("%q was skipped", r.ID))
		default:
			decided = append(decided, fmt.Sprintf("%q %s", r.ID, rs.Status))
		}
	}
	reason := "on_fail target was never routed"
	if !onlyOnFailRouters(sc.flow, s) {
		reason = "route target was never chosen"
	}
	t.skip(sc, s, st, &SkipInfo{Reason: reason + " (" + strings.Join(decided, "; ") + ")"})
	return true
}

func onlyOnFailRouters(f *ir.Flow, s *ir.Step) bool {
	for _, ri := range s.RoutedFrom {
		if f.Steps[ri].OnFail != s.ID {
			return false
		}
	}
	return true
}

// depsReady checks a step's dependencies. A dependency is satisfied when
// it succeeded or was skipped. A failed dependency (whose failure was
// routed by on_fail) or a killed gate blocks the step, and so does a
// dependency skipped because it was blocked, unless the step lies on the
// recovery path (reachable from the route's target): DESIGN decision 4.
// A blocked step is skipped at once with the reason.
func (t *txn) depsReady(sc *scope, s *ir.Step, st *stepState) (ready, changed bool) {
	waiting := false
	for _, di := range s.Deps {
		d := sc.flow.Steps[di]
		ds := sc.peek(d)
		status := StepPending
		if ds != nil {
			status = ds.Status
		}
		var origin *SkipInfo
		switch {
		case status == StepSucceeded && d.Kind == ir.KindGate && ds.Decision == "kill":
			origin = &SkipInfo{Source: d.ID, Target: d.Gate.OnKill}
		case status == StepSucceeded:
			continue
		case status == StepSkipped && (ds.Skip == nil || ds.Skip.Source == ""):
			continue
		case status == StepSkipped:
			origin = &SkipInfo{Source: ds.Skip.Source, Target: ds.Skip.Target}
		case status == StepFailed:
			origin = &SkipInfo{Source: d.ID, Target: d.OnFail}
		default:
			waiting = true
			continue
		}
		if origin.Target != "" {
			if tgt := sc.flow.Step(origin.Target); tgt != nil && t.c.reaches(sc.flow, tgt, s) {
				continue // on the recovery path: the blocked dependency orders only
			}
		}
		origin.Reason = blockedReason(sc.flow, origin, d.ID)
		t.skip(sc, s, st, origin)
		return false, true
	}
	return !waiting, false
}

func blockedReason(f *ir.Flow, o *SkipInfo, via string) string {
	var b strings.Builder
	if src := f.Step(o.Source); src != nil && src.Kind == ir.KindGate {
		fmt.Fprintf(&b, "gate %q was killed", o.Source)
	} else {
		fmt.Fprintf(&b, "step %q failed", o.Source)
	}
	if via != o.Source {
		fmt.Fprintf(&b, " (reached through %q)", via)
	}
	if o.Target != "" {
		fmt.Fprintf(&b, "; the run continues on the recovery path from %q", o.Target)
	}
	return "blocked: " + b.String()
}

// skip marks a step skipped.
func (t *txn) skip(sc *scope, s *ir.Step, st *stepState, why *SkipInfo) {
	st.Status = StepSkipped
	st.Skip = why
	st.DispatchToken, st.GateToken, st.Task = "", "", ""
	var detail any
	if why != nil && why.Reason != "" {
		detail = SkippedDetail{Reason: why.Reason}
	}
	t.emit(EventSkipped, sc.scoped(s.ID), detail)
}

// evalWhen evaluates a step's condition: only boolean true activates it.
func (t *txn) evalWhen(sc *scope, s *ir.Step) (bool, string) {
	p, err := t.c.program(s.When)
	if err != nil {
		return false, fmt.Sprintf("when %s failed: %v", quote(s.When), err)
	}
	v, err := p.EvalContext(t.ctx, expr.Bindings{Result: expr.Bind(sc.outputs()), Input: expr.Bind(sc.input)}, nil)
	if err != nil {
		return false, fmt.Sprintf("when %s failed: %v", quote(s.When), err)
	}
	if b, ok := v.(bool); ok && b {
		return true, ""
	}
	return false, fmt.Sprintf("when %s evaluated to %s", quote(s.When), compactJSON(v))
}

// issueDo makes a do step ready: render its task, reserve one dispatch,
// mint a dispatch token.
func (t *txn) issueDo(sc *scope, s *ir.Step, st *stepState) {
	attempt := len(st.Attempts) + 1
	text, err := t.renderDo(sc, s.Do, nil)
	if err != nil {
		t.failAttempt(sc, s, st, attemptFailure{attempt: attempt, reason: err.Error()})
		return
	}
	if !t.reserveDispatch(sc, s, st, attempt, func(reason string) {
		t.failAttempt(sc, s, st, attemptFailure{attempt: attempt, reason: reason})
	}) {
		return
	}
	st.Status = StepReady
	st.DispatchToken = t.token()
	st.AcceptedDispatchToken = ""
	st.Task = text
	t.emit(EventReady, sc.scoped(s.ID), ReadyDetail{Attempt: attempt})
}

// attemptFailure describes one failed attempt.
type attemptFailure struct {
	attempt  int
	reason   string
	evidence Value // the submitted output, when there was one
	usage    *Ledger
	tele     *Telemetry
	kind     string
	// forced: no retry regardless of attempts left.
	forced bool
	// noRoute: fail the scope without on_fail (subflow budget breaches).
	noRoute bool
	// exhaust: a flow budget breach; the run ends budget_exhausted.
	exhaust bool
	// stderr is the agent's standard error tail of a reported attempt.
	stderr string
	// changes are the workspace changes of a reported attempt.
	changes *Changes
}

// failAttempt records a failed attempt and retries, routes or fails
// (spec/engine.md 4.4).
func (t *txn) failAttempt(sc *scope, s *ir.Step, st *stepState, f attemptFailure) {
	identical := false
	if f.evidence.Present && len(st.Attempts) > 0 {
		last := st.Attempts[len(st.Attempts)-1]
		identical = last.Result.Present && expr.Equal(last.Result.Data, f.evidence.Data)
	}
	reason := f.reason
	if identical {
		reason += " (no retry: identical evidence)"
	}
	fail := &Failure{Attempt: f.attempt, Reason: reason}
	rec := Attempt{Attempt: f.attempt, At: t.now, Failure: fail, Result: f.evidence, Usage: f.usage, FailureKind: f.kind}
	f.tele.apply(&rec)
	rec.Stderr, rec.Changes = f.stderr, f.changes
	st.Attempts = append(st.Attempts, rec)
	st.Failure = fail
	st.DispatchToken, st.AcceptedDispatchToken, st.Task, st.GateToken = "", "", "", ""
	st.Started, st.Interrupted = nil, nil
	t.emit(EventResult, sc.scoped(s.ID), ResultDetail{Attempt: f.attempt, Failure: fail})
	limit := s.Attempts
	if limit == 0 {
		limit = ir.DefaultAttempts
	}
	if !f.forced && !f.exhaust && !f.noRoute && !identical && f.attempt < limit {
		st.Status = StepPending
		return
	}
	st.Status = StepFailed
	if s.Kind == ir.KindRun && st.Sub != nil && sc.root() {
		t.abandonChild(sc, s)
	}
	if f.exhaust {
		t.exhaustRun(fail)
		return
	}
	if f.noRoute {
		t.scopeFailed(sc, fail.because(CauseStepFailed, sc.scoped(s.ID)))
		return
	}
	t.stepFailed(sc, s, fail)
}

// abandonChild ends the outstanding issuances of a failed run step's
// subflow: its ready tasks and waiting gates can never count any more, so
// they are skipped (their tokens die with them) instead of staying
// answerable inside a subflow that is over.
func (t *txn) abandonChild(root *scope, s *ir.Step) {
	child := t.childScope(root, s)
	if child == nil {
		return
	}
	for _, cs := range child.flow.Steps {
		if cst := child.peek(cs); cst != nil && active(cst.Status) {
			t.skip(child, cs, cst, &SkipInfo{Reason: fmt.Sprintf("abandoned: the subflow ended when run step %q failed", s.ID)})
		}
	}
}

// stepFailed handles an exhausted step: route by on_fail, else fail the
// scope.
func (t *txn) stepFailed(sc *scope, s *ir.Step, fail *Failure) {
	if s.OnFail != "" {
		target := sc.flow.Step(s.OnFail)
		routeTo(sc.state(target), fail)
		t.emit(EventRouted, sc.scoped(s.ID), RoutedDetail{Target: sc.scoped(target.ID), Failure: fail})
		return
	}
	t.scopeFailed(sc, fail.because(CauseStepFailed, sc.scoped(s.ID)))
}

// routeTo activates a route-only step. Only the first route counts: a
// target that was already routed, or has already run (another router got
// there first), is left as it is — a finished step's state is stored once
// and never rewritten.
func routeTo(ts *stepState, why *Failure) {
	if ts.Status == StepPending && ts.Routed == nil {
		ts.Routed = why
	}
}

// scopeFailed fails a scope: the run (root) or the parent run step
// (child, forced, so the parent's on_fail applies).
func (t *txn) scopeFailed(sc *scope, fail *Failure) {
	if sc.root() {
		t.failRun(fail)
		return
	}
	root := t.rootScope()
	ps := sc.parent
	if ps.Status != StepRunning {
		return
	}
	t.failAttempt(root, sc.parentStep, ps, attemptFailure{
		attempt: len(ps.Attempts) + 1, reason: fmt.Sprintf("subflow %q: %s", sc.parentStep.Run, fail.Reason), forced: true})
}

// failRun terminates the run as failed.
func (t *txn) failRun(fail *Failure) { t.endRun(StatusFailed, fail) }

// exhaustRun terminates the run as budget_exhausted.
func (t *txn) exhaustRun(fail *Failure) {
	if fail.Cause == "" {
		fail = fail.because(CauseBudgetExhausted, fail.Step)
	}
	t.endRun(StatusBudgetExhausted, fail)
}

// endRun terminates a running run with a failure; the event is named
// after the status.
func (t *txn) endRun(status RunStatus, fail *Failure) {
	if t.st.Status != StatusRunning {
		return
	}
	t.st.Status = status
	t.st.Failure = fail
	t.emit(EventType(status), "", EndDetail{Attempt: fail.Attempt, Reason: fail.Reason, Cause: fail.Cause, Step: fail.Step})
}

// active reports a step that is doing something (not pending, not
// terminal).
func active(status StepStatus) bool {
	return status == StepReady || status == StepRunning || status == StepWaitingGate || status == StepInterrupted
}

// finishRoot completes the run when every root step is terminal, and
// fails it precisely when nothing can ever run again.
func (t *txn) finishRoot() {
	if !t.running() {
		return
	}
	root := t.rootScope()
	// Only live steps can be active; the finished ones are counted from
	// the cold index (a live state shadows its step's index entry).
	terminal := len(t.st.cold)
	for id, st := range root.steps {
		if active(st.Status) {
			return
		}
		_, indexed := t.st.cold[id]
		switch {
		case indexed && !isTerminalStep(st.Status):
			terminal--
		case !indexed && isTerminalStep(st.Status):
			terminal++
		}
	}
	allTerminal := terminal == len(root.flow.Steps)
	if !allTerminal {
		t.failRun(&Failure{Reason: deadEndReason(root), Cause: CauseDeadEnd})
		return
	}
	out, err := t.flowOutput(root)
	if err != nil {
		t.failRun(&Failure{Reason: err.Error(), Cause: CauseOutputInvalid})
		return
	}
	t.st.Status = StatusCompleted
	t.st.Output = Some(out)
	t.emit(EventCompleted, "", CompletedDetail{Output: Some(out)})
}

// deadEndReason says precisely why nothing can run in a scope.
func deadEndReason(sc *scope) string {
	var parts []string
	for _, s := range sc.flow.Steps {
		st := sc.peek(s)
		if st != nil && st.Status != StepPending {
			continue
		}
		var waits []string
		if s.RouteOnly() && (st == nil || st.Routed == nil) {
			waits = append(waits, "a route that was never taken")
		}
		for _, di := range s.Deps {
			d := sc.flow.Steps[di]
			ds := sc.peek(d)
			status := StepPending
			if ds != nil {
				status = ds.Status
			}
			if status != StepSucceeded && status != StepSkipped {
				waits = append(waits, fmt.Sprintf("%q (%s)", d.ID, status))
			}
		}
		parts = append(parts, fmt.Sprintf("%q waits on %s", sc.scoped(s.ID), strings.Join(waits, ", ")))
	}
	return "no runnable steps remain: " + strings.Join(parts, "; ")
}

// flowOutput resolves and validates a scope's flow output.
func (t *txn) flowOutput(sc *scope) (any, error) {
	out := sc.flow.Output
	v, err := t.resolver(sc, nil)(out.From)
	if err != nil {
		return nil, fmt.Errorf("flow output %s is unavailable: %v", out.From.Text, err)
	}
	if errs := out.Contract.Validate(v, "output"); len(errs) > 0 {
		return nil, fmt.Errorf("flow %s", contractMessage(out.ContractName, errs))
	}
	return v, nil
}

// outputCheck validates the flow output early when s produces it
// (spec/engine.md 4.1 step 8).
func (t *txn) outputCheck(sc *scope, s *ir.Step, output any) error {
	from := sc.flow.Output.From
	if from == nil || from.Name != s.ID {
		return nil
	}
	v, ok := from.Lookup(output)
	if !ok {
		return fmt.Errorf("flow output %s is unavailable in this output", from.Text)
	}
	if errs := sc.flow.Output.Contract.Validate(v, "output"); len(errs) > 0 {
		return fmt.Errorf("flow %s", contractMessage(sc.flow.Output.ContractName, errs))
	}
	return nil
}
