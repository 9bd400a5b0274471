package engine

import (
	"context"
	"errors"
	"slices"
	"time"
)

// errRunStopped is the cause given to an effect's context when the run it
// works for is cancelled or ends while the effect runs.
var errRunStopped = errors.New("the run was cancelled or ended while the command ran")

// effectPollInterval is how often an effect in progress re-reads its run,
// to stop at once when another process cancels it.
const effectPollInterval = 200 * time.Millisecond

// runEffects runs reserved effects one after the other, each outside the
// run's lock, and settles each in a transition that applies its outcome
// only while its reservation is current. A settle may reserve further
// effects (the steps it unblocks); they run too. It returns the run's
// state after the last settle that changed it (nil when none did). When
// ctx ends, effects still pending are left reserved: Resume takes them
// over.
func (e *Engine) runEffects(ctx context.Context, runID string, pending []pendingEffect) (*Response, error) {
	var last *Response
	for len(pending) > 0 && ctx.Err() == nil {
		p := pending[0]
		pending = pending[1:]
		out, runErr := e.runEvaluate(ctx, runID, p)
		if ctx.Err() != nil {
			break // the caller is gone: the reservation stays for a resume
		}
		t, err := e.transition(ctx, runID, func(t *txn) error {
			if !t.running() {
				return nil
			}
			loc, ok := t.locate(p.stepID)
			if !ok || loc.item != nil {
				return nil
			}
			st := loc.sc.peek(loc.step)
			if st == nil || st.Status != StepRunning || st.Effect == nil || st.Effect.Token != p.token || !t.scopeLive(loc.sc) {
				return nil // superseded: a cancel, revise or revert voided the reservation
			}
			t.settleEvaluate(loc.sc, loc.step, st, out, runErr)
			t.advance()
			t.result = t.response()
			return nil
		})
		if err != nil {
			return nil, err
		}
		if t.result != nil {
			last = t.result
		}
		pending = append(pending, t.effects...)
	}
	return last, nil
}

// runEvaluate runs one reserved command. It stops the command (its whole
// process group) as soon as the run is cancelled, by this process or by
// another one, or the reservation is voided.
func (e *Engine) runEvaluate(ctx context.Context, runID string, p pendingEffect) (EvaluateOutcome, error) {
	ctx, release := e.effectContext(ctx, runID, p.token)
	defer release()
	out, err := e.opts.Evaluator.Evaluate(ctx, *p.evaluate)
	if cause := context.Cause(ctx); errors.Is(cause, errRunStopped) {
		return EvaluateOutcome{Kind: EvaluateExit, Reason: cause.Error()}, nil
	}
	return out, err
}

// effectContext is ctx for one effect of a run, identified by the token
// of its reservation (an evaluate step's effect token, a fanout item's
// dispatch token). It is cancelled with errRunStopped as soon as the run
// is cancelled by this process (Cancel) or by another one, the run ends,
// or the reservation is voided (a revise, a revert): whatever the effect
// started is then killed. Call release when the effect is over.
func (e *Engine) effectContext(ctx context.Context, runID, token string) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	untrack := e.trackEffect(runID, token, cancel)
	done := make(chan struct{})
	go e.watchEffect(ctx, runID, token, cancel, done)
	return ctx, func() {
		close(done)
		untrack()
		cancel(nil)
	}
}

// watchEffect polls the run while an effect runs and cancels it when the
// run is cancelled or ended elsewhere, or its reservation is gone.
func (e *Engine) watchEffect(ctx context.Context, runID, token string, cancel context.CancelCauseFunc, done <-chan struct{}) {
	tick := time.NewTicker(effectPollInterval)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		snap, err := e.store.Load(ctx, runID)
		if err != nil {
			continue // a transient read failure: the settle decides
		}
		st, err := decodeDoc(runID, snap.State)
		if err != nil {
			continue
		}
		if st.Status != StatusRunning || st.CancelRequested || !reservationHeld(st, token) {
			cancel(errRunStopped)
			return
		}
	}
}

// reservationHeld reports whether a decoded state still holds a
// reservation: an evaluate step's effect, a fanout item's dispatch, or a
// do step's dispatch (a report whose checks are being evaluated, see
// evalChecksUnlocked). Only live (not finished) steps hold one, and they
// are in the state document itself.
func reservationHeld(st *runState, token string) bool {
	var found bool
	var walk func(m map[string]*stepState)
	walk = func(m map[string]*stepState) {
		for _, ss := range m {
			if ss.Effect != nil && ss.Effect.Token == token || ss.DispatchToken == token {
				found = true
			}
			if ss.Fanout != nil {
				for _, it := range ss.Fanout.Items {
					if it.DispatchToken == token {
						found = true
					}
				}
			}
			if ss.Sub != nil {
				walk(ss.Sub.Steps)
			}
		}
	}
	walk(st.Steps)
	return found
}

// trackEffect registers an effect in progress, so that a Cancel in this
// process stops it at once; the returned func unregisters it. A token may
// have several at once (two reports of one dispatch, their checks
// evaluated together): each is its own entry.
func (e *Engine) trackEffect(runID, token string, cancel context.CancelCauseFunc) (release func()) {
	e.effectMu.Lock()
	defer e.effectMu.Unlock()
	if e.running[runID] == nil {
		e.running[runID] = map[string][]*context.CancelCauseFunc{}
	}
	entry := &cancel
	e.running[runID][token] = append(e.running[runID][token], entry)
	return func() {
		e.effectMu.Lock()
		defer e.effectMu.Unlock()
		left := slices.DeleteFunc(e.running[runID][token], func(c *context.CancelCauseFunc) bool { return c == entry })
		switch {
		case len(left) > 0:
			e.running[runID][token] = left
		default:
			delete(e.running[runID], token)
		}
		if len(e.running[runID]) == 0 {
			delete(e.running, runID)
		}
	}
}

// stopEffects cancels the effects this process runs for a run.
func (e *Engine) stopEffects(runID string) {
	e.effectMu.Lock()
	defer e.effectMu.Unlock()
	for _, cancels := range e.running[runID] {
		for _, cancel := range cancels {
			(*cancel)(errRunStopped)
		}
	}
}

// runsEffect reports whether this process is running the effect with a
// token right now (so Resume does not take over its own work).
func (e *Engine) runsEffect(runID, token string) bool {
	e.effectMu.Lock()
	defer e.effectMu.Unlock()
	return len(e.running[runID][token]) > 0
}
