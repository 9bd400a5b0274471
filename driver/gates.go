package driver

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/stratum-go/stratum/engine"
)

// GateAnswer is a decision on a gate and what is recorded with it in the
// run's gate_resolved event.
type GateAnswer struct {
	// Decision is approve, revise or kill.
	Decision engine.Decision
	// Note is the decider's reason (recorded as the rationale); optional.
	Note string
	// ResolvedBy names who decided (recorded as resolvedBy): a person's
	// name, or "human", "agent", "system"; empty records nobody.
	ResolvedBy string
}

// ResolvedBySystem is who decides a gate in GateApprove and GateKill mode.
const ResolvedBySystem = "system"

type gateDone struct {
	gate   engine.WaitingGate
	answer GateAnswer
	err    error
}

// decideAll resolves every waiting gate with decision (GateApprove,
// GateKill), recorded as decided by the system.
func (r *run) decideAll(ctx context.Context, decision engine.Decision) error {
	gates, err := r.e.ListGates(ctx, r.id)
	if err != nil {
		return &HaltError{RunID: r.id, Err: err}
	}
	if len(gates) == 0 {
		return r.refresh(ctx)
	}
	answer := GateAnswer{Decision: decision, ResolvedBy: ResolvedBySystem, Note: "decided automatically (gate mode " + string(decision) + ")"}
	for _, g := range gates {
		if err := r.resolve(ctx, g, answer, ""); err != nil { // nobody looked
			return err
		}
	}
	return nil
}

// resolve records a decision on the gate round g, fenced by its token
// and, when set, by the digest of the content it was made on.
func (r *run) resolve(ctx context.Context, g engine.WaitingGate, a GateAnswer, digest string) error {
	resp, err := r.e.ResolveGate(ctx, engine.GateRequest{RunID: r.id, StepID: g.StepID, Decision: a.Decision, GateToken: g.GateToken,
		Digest: digest, Rationale: a.Note, ResolvedBy: a.ResolvedBy})
	if err != nil {
		return r.refused(ctx, err)
	}
	r.resp = resp
	return nil
}

// ask starts a question for every waiting gate not already asked about.
func (r *run) ask(ctx context.Context) error {
	if r.d.opts.AskGate == nil {
		r.d.opts.Gates = GateStop
		return nil
	}
	gates, err := r.e.GateViews(ctx, r.id)
	if err != nil {
		return &HaltError{RunID: r.id, Err: err}
	}
	sort.Slice(gates, func(i, j int) bool { return gates[i].StepID < gates[j].StepID })
	for _, g := range gates {
		if _, ok := r.asking[g.StepID]; ok {
			continue
		}
		qctx, cancel := context.WithCancel(ctx)
		r.asking[g.StepID] = cancel
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			answer, err := r.d.opts.AskGate(qctx, g)
			if qctx.Err() != nil && err == nil {
				err = context.Cause(qctx)
			}
			r.decisions <- gateDone{gate: g.WaitingGate, answer: answer, err: err} // read by the loop or by drain
		}()
	}
	return nil
}

// answered handles the end of a gate question.
func (r *run) answered(ctx context.Context, g gateDone) error {
	r.asking[g.gate.StepID]()
	delete(r.asking, g.gate.StepID)
	switch {
	case errors.Is(g.err, ErrNoAnswer):
		// Nobody can answer here: stop at the gates once the rest of the
		// run's work is done.
		r.d.opts.Gates = GateStop
		return nil
	case g.err != nil && (ctx.Err() != nil || errors.Is(g.err, context.Canceled)):
		return nil // withdrawn: the gate was decided elsewhere
	case g.err != nil:
		return &HaltError{RunID: r.id, StepID: g.gate.StepID, Err: fmt.Errorf("ask for a gate decision: %w", g.err)}
	}
	return r.resolve(ctx, g.gate, g.answer, g.gate.Digest)
}

// announce tells Options.GateWaiting about each gate that started waiting
// since the last look (GateWait mode), so that the person knows how to
// decide it elsewhere. A gate is announced again when it waits again (a
// new round after a revise).
func (r *run) announce(ctx context.Context) error {
	if r.d.opts.GateWaiting == nil {
		return nil
	}
	waiting := map[string]bool{}
	fresh := false
	for _, w := range r.resp.Waiting {
		if w.Kind == engine.WaitGate {
			waiting[w.StepID] = true
			fresh = fresh || !r.announced[w.StepID]
		}
	}
	for id := range r.announced {
		if !waiting[id] {
			delete(r.announced, id)
		}
	}
	if !fresh {
		return nil
	}
	gates, err := r.e.ListGates(ctx, r.id)
	if err != nil {
		return &HaltError{RunID: r.id, Err: err}
	}
	sort.Slice(gates, func(i, j int) bool { return gates[i].StepID < gates[j].StepID })
	for _, g := range gates {
		if !r.announced[g.StepID] {
			r.announced[g.StepID] = true
			r.d.opts.GateWaiting(g)
		}
	}
	return nil
}
