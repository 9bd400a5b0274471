package engine

import (
	"context"

	"github.com/stratum-go/stratum/expr"
	"github.com/stratum-go/stratum/ir"
)

// resumeFanouts lets the engine fanouts a missing agent paused be driven
// again.
func (t *txn) resumeFanouts() {
	for _, s := range t.rootScope().liveSteps() {
		if st := t.rootScope().peek(s); st != nil && st.Fanout != nil && st.Fanout.Paused != "" {
			st.Fanout.Paused = ""
		}
	}
}

// takeOverEffects re-reserves the effects of a resumed run that no
// process settled (their holder died, or stopped before it could): each
// is recorded as interrupted and runs again once the resume is durable.
// Effects this process is running now are left to it.
func (t *txn) takeOverEffects() {
	root := t.rootScope()
	scopes := []*scope{root}
	for _, s := range root.liveSteps() {
		if st := root.peek(s); s.Kind == ir.KindRun && st != nil && st.Status == StepRunning && st.Sub != nil {
			scopes = append(scopes, t.childScope(root, s))
		}
	}
	for _, sc := range scopes {
		for _, s := range sc.liveSteps() {
			st := sc.peek(s)
			if s.Kind != ir.KindEvaluate || st == nil || st.Status != StepRunning || st.Effect == nil || t.e.runsEffect(t.st.ID, st.Effect.Token) {
				continue
			}
			t.emit(EventEffectInterrupted, sc.scoped(s.ID), ReadyDetail{Attempt: len(st.Attempts) + 1})
			st.Effect.Token = t.token()
			t.queueEvaluate(sc, s, st)
		}
	}
}

// Resume loads a persisted run in this process (any process can resume
// any run) and returns its current actionable state with its
// revisionDigest. It checks that the persisted spec still hashes to the
// run's digest, records a `resumed` event, advances a running run (ready
// steps keep their tokens and their reserved dispatch) and restarts the
// engine-dispatched fanouts it finds running. A cancelled run is refused.
func (e *Engine) Resume(ctx context.Context, runID string) (*Response, error) {
	t, err := e.mutate(ctx, runID, func(t *txn) error {
		if t.st.Status == StatusCancelled || t.st.CancelRequested {
			return t.refuse(ErrRunCancelled, "", "run %s is cancelled; resume is not permitted", t.st.ID)
		}
		if err := t.guardDriver(); err != nil {
			return err
		}
		found, err := t.e.readBlobs(t.ctx, t.st.ID, t.headSeq, map[int64]string{t.st.SpecSeq: ""})
		if err != nil {
			return err
		}
		// The snapshot is the JSON that Plan persisted (canonicalOrdered).
		doc, err := expr.DecodeJSON([]byte(found[t.st.SpecSeq]))
		if err != nil {
			return newErr(ErrCorrupt, t.st.ID, "run %s: the persisted spec cannot be read: %v", t.st.ID, err)
		}
		digest, err := digestOf(doc)
		if err != nil || digest != t.st.RevisionDigest {
			return newErr(ErrDigestMismatch, t.st.ID, "run %s: persisted revision digest does not match the effective specification", t.st.ID)
		}
		if t.st.Status == StatusRunning {
			// A finished run is answered as it is: nothing is recorded.
			t.emit(EventResumed, "", nil)
		}
		t.fullSweep, t.root = true, nil // a resumed run is looked at whole
		if t.st.Status == StatusRunning {
			t.resumeFanouts()
			t.takeOverEffects()
			t.takeOverAttempts()
			t.advance()
			t.engineWork = true
		}
		t.result = t.response()
		t.result.RevisionDigest = t.st.RevisionDigest
		return nil
	})
	if err != nil {
		return nil, err
	}
	return t.result, nil
}
