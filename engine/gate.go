package engine

import (
	"context"
	"fmt"
	"slices"

	"github.com/stratum-go/stratum/ir"
)

// Decision is a person's decision on a gate.
type Decision string

// Gate decisions.
const (
	DecisionApprove Decision = "approve"
	DecisionRevise  Decision = "revise"
	DecisionKill    Decision = "kill"
)

// GateRequest resolves a waiting gate.
type GateRequest struct {
	RunID string
	// StepID is the gate's id (scoped "<runStep>/<gate>" for a subflow
	// gate).
	StepID string
	// Decision is approve, revise or kill.
	Decision Decision
	// GateToken is the token of the gate round the decision was made on
	// (from Audit or ListGates).
	GateToken string
	// Rationale is the decider's reason, recorded in the gate_resolved
	// event; optional.
	Rationale string
	// ResolvedBy says who decided ("human", "agent", "system" or a name),
	// recorded in the gate_resolved event; optional.
	ResolvedBy string
	// CurrentRound, with no GateToken, applies the decision to whatever
	// round is waiting when the decision is recorded (a person deciding
	// at a terminal without a token). Without it a missing token is
	// stale.
	CurrentRound bool
	// Digest, when set, is the digest of the content the decision was made
	// on (WaitingGate.Digest): the decision is refused when the round
	// under review shows other content.
	Digest string
	// OnlyNew asks for an answer listing only the ready entries the
	// decision issued (see StepDoneRequest.OnlyNew).
	OnlyNew bool
}

// GateDecision is what DecideGate did.
type GateDecision struct {
	// Response is the run's state after the decision.
	Response *Response
	// Target is the route the decision took ("" for a null route).
	Target string
}

// ResolveGate applies a gate decision (docs/engine.md, "Gates"). approve completes the gate and routes to on_approve
// when it names one; the gate's other successors then proceed. kill with a
// null route fails the run (or the subflow's run step); with a target it
// routes there and the gate's other successors are skipped. revise resets
// the on_revise target's closure and runs it again, within max_rounds.
func (e *Engine) ResolveGate(ctx context.Context, req GateRequest) (*Response, error) {
	d, err := e.DecideGate(ctx, req)
	if err != nil {
		return nil, err
	}
	return d.Response, nil
}

// DecideGate is ResolveGate that also says which route the decision took.
// Its refusals carry the run's state and, for ErrNotAwaiting, Error.Why:
// the run has no such step, the step is not a gate, or the gate is not
// waiting.
func (e *Engine) DecideGate(ctx context.Context, req GateRequest) (*GateDecision, error) {
	if req.Decision != DecisionApprove && req.Decision != DecisionRevise && req.Decision != DecisionKill {
		return nil, &Error{Kind: ErrInvalidDecision, RunID: req.RunID, StepID: req.StepID,
			Message: fmt.Sprintf("invalid gate decision %q: use approve, revise or kill", req.Decision)}
	}
	var target string
	t, err := e.mutate(ctx, req.RunID, func(t *txn) error {
		if t.st.Status == StatusCancelled || t.st.CancelRequested {
			return t.refuse(ErrRunCancelled, req.StepID, "run %s is cancelled; gate %s cannot be resolved", t.st.ID, req.StepID)
		}
		if isTerminalRun(t.st.Status) {
			return t.refuse(ErrRunTerminal, req.StepID, "run %s is %s; gate %s is not awaiting a decision", t.st.ID, t.st.Status, req.StepID)
		}
		loc, ok := t.locate(req.StepID)
		if !ok && req.GateToken != "" && t.resetNested(req.StepID) {
			return t.refuse(ErrStaleToken, req.StepID, "gate decision is stale: %q was issued in an earlier round (a revise reset its run step)", req.StepID)
		}
		if !ok {
			err := t.refuse(ErrNotAwaiting, req.StepID, "gate is not awaiting a decision: run %s has no step %q", t.st.ID, req.StepID)
			err.Why = UnknownStep
			return err
		}
		if st := loc.sc.peek(loc.step); loc.item == nil && loc.step.Kind == ir.KindDo && st != nil && st.Status == StepInterrupted {
			if req.GateToken == "" && req.CurrentRound {
				req.GateToken = st.GateToken
			}
			if req.GateToken != st.GateToken {
				return t.refuse(ErrStaleToken, req.StepID, "decision is stale: %q waits for a decision on its interrupted attempt with another token (stratum_gates lists it)", req.StepID)
			}
			if req.OnlyNew {
				t.known = t.readyTokens()
			}
			if err := t.decideInterrupted(loc.sc, loc.step, st, req); err != nil {
				return err
			}
			t.advance()
			t.result = t.response()
			return nil
		}
		if loc.item != nil || loc.step.Kind != ir.KindGate {
			kind := "fanout item"
			if loc.item == nil {
				kind = loc.step.Kind.String() + " step"
			}
			err := t.refuse(ErrNotAwaiting, req.StepID, "gate is not awaiting a decision: %q of run %s is a %s, not a gate", req.StepID, t.st.ID, kind)
			err.Why = WrongKind
			return err
		}
		st := loc.sc.state(loc.step)
		if err := t.checkSubflowLive(loc.sc, "gate decision", req.StepID, req.GateToken); err != nil {
			return err
		}
		if st.Status != StepWaitingGate {
			if req.GateToken != "" && (st.Status != StepPending || st.Epoch > 0) {
				return t.refuse(ErrStaleToken, req.StepID, "gate decision is stale: gate %q is %s; this token was issued for an earlier round", req.StepID, st.Status)
			}
			err := t.refuse(ErrNotAwaiting, req.StepID, "gate is not awaiting a decision: %q is %s", req.StepID, st.Status)
			err.Why = NotWaiting
			return err
		}
		if req.GateToken == "" && req.CurrentRound {
			req.GateToken = st.GateToken
		}
		if req.OnlyNew {
			t.known = t.readyTokens()
		}
		switch {
		case req.GateToken == "":
			return t.refuseGate(loc.sc, loc.step, "gate decision is stale: missing gate token (the current round's token is in error.gate.gateToken)")
		case req.GateToken != st.GateToken && slices.Contains(st.PastGateTokens, req.GateToken):
			return t.refuseGate(loc.sc, loc.step, "gate decision is stale: the token was issued for an earlier round of %q; the current round is in error.gate", req.StepID)
		case req.GateToken != st.GateToken:
			return t.refuseGate(loc.sc, loc.step, "gate decision refused: the gate token is unknown (it was never issued for %q); the current round's token is in error.gate.gateToken", req.StepID)
		case req.Digest != "" && req.Digest != st.GateDigest:
			return t.refuseGate(loc.sc, loc.step, "gate decision is stale: the content under review of %q is not what the decision was made on (digest %s, under review now %s); read error.gate and decide again", req.StepID, req.Digest, st.GateDigest)
		}
		// A gate whose on_revise is null does not offer revise: refusing
		// (rather than failing the run as "rounds exhausted", as the
		// reference engine does) lets the person choose approve or kill.
		if req.Decision == DecisionRevise && loc.step.Gate.OnRevise == "" {
			return t.refuse(ErrNoReviseRoute, req.StepID, "gate %q has no on_revise route, so revise is not available: decide approve or kill (the gate token is still valid)", req.StepID)
		}
		if err := t.decide(loc.sc, loc.step, st, req); err != nil {
			return err
		}
		target = routeOf(loc.step, req.Decision)
		if target != "" {
			target = loc.sc.scoped(target)
		}
		t.advance()
		t.result = t.response()
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &GateDecision{Response: t.result, Target: target}, nil
}

// decide applies an accepted decision.
func (t *txn) decide(sc *scope, g *ir.Step, st *stepState, req GateRequest) error {
	decision := req.Decision
	id := sc.scoped(g.ID)
	target := routeOf(g, decision)
	st.PastGateTokens = append(st.PastGateTokens, st.GateToken)
	if n := len(st.PastGateTokens); n > maxPastGateTokens {
		st.PastGateTokens = st.PastGateTokens[n-maxPastGateTokens:]
	}
	resolved := func() {
		detail := GateResolvedDetail{Decision: decision, Rationale: req.Rationale, ResolvedBy: req.ResolvedBy, Digest: st.GateDigest}
		if target != "" {
			tgt := sc.scoped(target)
			detail.Target = &tgt
		}
		t.emit(EventGateResolved, id, detail)
	}
	switch decision {
	case DecisionApprove, DecisionKill:
		st.GateToken = ""
		st.Status = StepSucceeded
		st.Decision = decision
		resolved()
		if target != "" {
			routeTo(sc.state(sc.flow.Step(target)), &Failure{Attempt: 0, Reason: "gate " + string(decision)})
			return nil
		}
		if decision == DecisionKill {
			t.scopeFailed(sc, &Failure{Attempt: 0, Reason: fmt.Sprintf("gate %s killed flow", id), Cause: CauseGateKilled, Step: id})
		}
		return nil
	}
	return t.revise(sc, g, st, target, req, resolved)
}

// maxPastGateTokens bounds the tokens of earlier rounds a gate keeps.
const maxPastGateTokens = 8

// refuseGate is a stale-token refusal that carries the gate's current
// view, so the caller can decide again in one call.
func (t *txn) refuseGate(sc *scope, g *ir.Step, format string, args ...any) *Error {
	err := t.refuse(ErrStaleToken, sc.scoped(g.ID), format, args...)
	t.eachWaitingGate(func(wsc *scope, s *ir.Step, _ *stepState, wg WaitingGate) {
		if wsc == sc && s == g {
			v := GateView{WaitingGate: wg, UnderReview: forView(t.underReview(sc, g))}
			err.Gate = &v
		}
	})
	return err
}

// routeOf is the target of a gate's route for a decision ("" for null).
func routeOf(g *ir.Step, d Decision) string {
	switch d {
	case DecisionApprove:
		return g.Gate.OnApprove
	case DecisionKill:
		return g.Gate.OnKill
	case DecisionRevise:
		return g.Gate.OnRevise
	}
	return ""
}

// revise applies a revise decision: rounds checked before anything
// changes, carry on_revise values resolved against the un-reset state,
// then the reset closure of the target.
func (t *txn) revise(sc *scope, g *ir.Step, st *stepState, target string, req GateRequest, resolved func()) error {
	id := sc.scoped(g.ID)
	rounds := &t.st.Rounds
	if !sc.root() {
		rounds = &sc.parent.Sub.Rounds
	}
	total := *rounds + 1
	gateRounds := st.Iterations
	exhausted := ""
	switch {
	case sc.flow.MaxRounds == 0:
		exhausted = fmt.Sprintf("flow %q declares no max_rounds", sc.flow.Name)
	case total > sc.flow.MaxRounds:
		exhausted = fmt.Sprintf("flow %q allows %d rounds", sc.flow.Name, sc.flow.MaxRounds)
	case g.Gate.MaxRounds > 0 && gateRounds+1 > g.Gate.MaxRounds:
		exhausted = fmt.Sprintf("gate %q allows %d rounds", id, g.Gate.MaxRounds)
	}
	if exhausted != "" {
		st.GateToken = ""
		st.Status = StepSucceeded
		st.Decision = DecisionRevise
		resolved()
		t.scopeFailed(sc, &Failure{Attempt: 0, Reason: "gate revision rounds exhausted: " + exhausted, Cause: CauseRoundsExhausted, Step: id})
		return nil
	}
	var writes []carryWrite
	if sc.root() {
		var err error
		writes, err = t.reviseCarry(g)
		if err != nil {
			return t.refuse(ErrCarryReviseUnresolved, id, "carry_revise_unresolved: %v (the gate token is still valid)", err)
		}
	}
	token := st.GateToken
	st.GateToken = ""
	resolved()
	*rounds = total
	for _, w := range writes {
		t.writeCarry(w, g.ID, token, total)
	}
	targetStep := sc.flow.Step(target)
	sentBack := sc.state(targetStep).Output
	t.resetClosure(sc, targetStep, sc.flow.ResetClosure(targetStep.Index))
	// The step runs again with the reviewer's words (docs/engine.md,
	// "Gates"): the re-issued entry carries them.
	sc.state(targetStep).Revision = &Revision{Gate: id, Round: total, Note: req.Rationale, ResolvedBy: req.ResolvedBy, SentBack: sentBack}
	st.Iterations = gateRounds + 1
	return nil
}

// resetClosure resets every step of a revise closure (docs/engine.md,
// "Gates", revise).
func (t *txn) resetClosure(sc *scope, target *ir.Step, closure []int) {
	var reset []map[string]any
	var dropped []string
	for _, i := range closure {
		s := sc.flow.Steps[i]
		st := sc.state(s)
		reset = append(reset, map[string]any{"stepId": sc.scoped(s.ID), "fromEpoch": st.Epoch, "toEpoch": st.Epoch + 1})
		if st.Sub != nil {
			dropped = append(dropped, sc.scoped(s.ID))
		}
	}
	if dropped == nil {
		dropped = []string{}
	}
	t.emit(EventStepReset, sc.scoped(target.ID), map[string]any{"reason": "revise", "reset": reset, "subflowsDropped": dropped})
	for _, i := range closure {
		sc.cand.add(i) // pending again: each may run again
	}
	t.engineReceipt()
	for _, i := range closure {
		s := sc.flow.Steps[i]
		st := sc.state(s)
		iterations := 0
		var past []string
		if s.Kind == ir.KindGate {
			iterations, past = st.Iterations, st.PastGateTokens
		}
		fanoutEpoch := st.FanoutEpoch
		if st.Fanout != nil {
			fanoutEpoch++
		}
		*st = stepState{Status: StepPending, Attempts: []Attempt{}, Epoch: st.Epoch + 1, Iterations: iterations, FanoutEpoch: fanoutEpoch,
			PastGateTokens: past}
	}
}
