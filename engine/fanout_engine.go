package engine

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/stratum-go/stratum/ir"
)

// kickFanouts starts driving every running engine-dispatched fanout of a
// run that this process is not already driving. Each item stage attempt is
// reserved and fenced in one transition, dispatched outside the lock, and
// settled in another transition that checks the fanout and the item's
// token are still current (a revise reset, a revert or a cancel in
// between abandons the result).
func (e *Engine) kickFanouts(runID string) {
	if e.opts.Dispatcher == nil || e.bgCtx.Err() != nil {
		return
	}
	st, c, _, err := e.load(e.bgCtx, runID, false)
	if err != nil || st.Status != StatusRunning || st.CancelRequested {
		return
	}
	flow := c.plan.Flow(st.FlowName)
	for _, s := range flow.Steps {
		ss := st.Steps[s.ID]
		if s.Kind != ir.KindFanout || consumerFanout(s) || ss == nil || ss.Status != StepRunning || ss.Fanout == nil {
			continue
		}
		key := fmt.Sprintf("%s\x00%s\x00%d", runID, s.ID, ss.Epoch)
		e.fanoutMu.Lock()
		busy := e.fanouts[key]
		if !busy {
			e.fanouts[key] = true
		}
		e.fanoutMu.Unlock()
		if busy {
			continue
		}
		e.wg.Add(1)
		go e.driveFanout(key, runID, s, ss.Epoch, len(ss.Fanout.Items))
	}
}

// driveFanout runs a fanout's items with its concurrency, then lets the
// scheduler settle it.
func (e *Engine) driveFanout(key, runID string, s *ir.Step, epoch, n int) {
	defer e.wg.Done()
	defer func() {
		e.fanoutMu.Lock()
		delete(e.fanouts, key)
		e.fanoutMu.Unlock()
	}()
	var mu sync.Mutex
	next := 0
	take := func() int {
		mu.Lock()
		defer mu.Unlock()
		i := next
		next++
		return i
	}
	workers := min(s.Fanout.Concurrency, n)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for e.bgCtx.Err() == nil {
				i := take()
				if i >= n || !e.driveItem(runID, s, epoch, i) {
					return
				}
			}
		}()
	}
	wg.Wait()
	if e.bgCtx.Err() != nil {
		return
	}
	// Settle (a no-op write when the last item's transition already did).
	// Should it fail for good, the fanout is settled by the next
	// transition of the run or by a resume.
	_, _ = e.mutateBG(runID, func(t *txn) error {
		if _, _, ok := t.currentFanout(s, epoch); ok {
			t.advance()
		}
		return nil
	})
}

// mutateBG is mutate for background work: another transition may hold the
// run's lock longer than the store's lock timeout (an evaluate command, a
// judge call), so a lock timeout is waited out, with backoff, until the
// Engine closes. Any other error ends the attempt.
func (e *Engine) mutateBG(runID string, fn func(t *txn) error) (*txn, error) {
	wait := 20 * time.Millisecond
	for {
		t, err := e.mutate(e.bgCtx, runID, fn)
		if !errors.Is(err, ErrRunLocked) {
			return t, err
		}
		select {
		case <-e.bgCtx.Done():
			return nil, err
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Second)
	}
}

// currentFanout finds the fanout instance being driven, if still current.
func (t *txn) currentFanout(s *ir.Step, epoch int) (*scope, *StepState, bool) {
	if !t.running() {
		return nil, nil, false
	}
	root := t.rootScope()
	st := root.peek(s)
	if st == nil || st.Status != StepRunning || st.Epoch != epoch || st.Fanout == nil {
		return nil, nil, false
	}
	return root, st, true
}

// driveItem runs one item to a terminal state. It reports false when
// driving should stop (the fanout is no longer current, or the store
// failed).
func (e *Engine) driveItem(runID string, s *ir.Step, epoch, idx int) bool {
	for e.bgCtx.Err() == nil {
		var req *DispatchRequest
		var token string
		stop, done := false, false
		_, err := e.mutateBG(runID, func(t *txn) error {
			req, token, stop, done = nil, "", false, false
			sc, st, ok := t.currentFanout(s, epoch)
			if !ok || idx >= len(st.Fanout.Items) {
				stop = true
				return nil
			}
			it := st.Fanout.Items[idx]
			if isTerminalStep(it.Status) {
				done = true
				return nil
			}
			it.Status = StepPending // an in-flight attempt of a dead process is dispatched again
			it.InFlight = false
			if !t.nextStage(sc, s, st, it) {
				done = true
				t.advance()
				return nil
			}
			stage := s.Fanout.Stages[it.Stage]
			attempt := len(it.Attempts) + 1
			sx := itemCtx(st, it)
			text, err := t.renderDo(sc, stage.Do, sx)
			if err != nil {
				t.itemAttemptFailed(sc, s, st, it, attempt, kindConnector, err.Error(), Value{}, nil, nil)
				done = isTerminalStep(it.Status)
				t.advance()
				return nil
			}
			switch t.reserve(sc, s, st, Ledger{Dispatches: 1}, true) {
			case levelFlow:
				t.itemAttemptFailed(sc, s, st, it, attempt, kindBudget, "flow budget exhausted", Value{}, nil, nil)
				t.exhaustRun(&Failure{Attempt: attempt, Reason: "flow budget exhausted"})
				stop = true
				return nil
			case levelSubflow, levelTask:
				t.itemAttemptFailed(sc, s, st, it, attempt, kindBudget, "task budget exhausted", Value{}, nil, nil)
				done = isTerminalStep(it.Status)
				t.advance()
				return nil
			}
			token = t.token()
			it.Status = StepRunning
			it.InFlight = true
			it.DispatchToken = token
			it.Task = text
			id := sc.scoped(s.ID)
			t.emit("fanout_ledger_debit", id, map[string]any{"itemIndex": idx, "amount": Ledger{Dispatches: 1}})
			t.emit("fanout_item_dispatched", id, map[string]any{"itemIndex": idx, "stage": it.Stage, "attempt": attempt})
			var prevFail *Failure
			for i := len(it.Attempts) - 1; i >= 0; i-- {
				a := it.Attempts[i]
				if a.Stage == nil || *a.Stage != it.Stage {
					break
				}
				if a.Failure != nil {
					prevFail = a.Failure
					break
				}
			}
			req = &DispatchRequest{RunID: t.st.ID, StepID: id, ItemIndex: idx, Stage: it.Stage, Agent: agentOf(stage.Agent),
				Prompt: text, Item: sx.item, Attempt: attempt, PreviousFailure: prevFail, Contract: t.c.contract(stage.Out),
				Workdir: t.st.WorkspaceRoot, Isolation: s.Fanout.Isolation}
			if sx.hasPrev {
				req.Prev = sx.prev
			}
			return nil
		})
		if err != nil || stop {
			return false
		}
		if done {
			return true
		}
		if req == nil {
			continue
		}
		res, derr := e.opts.Dispatcher.Dispatch(e.bgCtx, *req)
		if e.bgCtx.Err() != nil {
			return false
		}
		_, err = e.mutateBG(runID, func(t *txn) error {
			stop, done = false, false
			sc, st, ok := t.currentFanout(s, epoch)
			if !ok || idx >= len(st.Fanout.Items) || st.Fanout.Items[idx].DispatchToken != token {
				stop = true // superseded: abandon without recording
				return nil
			}
			it := st.Fanout.Items[idx]
			if derr != nil {
				t.itemAttemptFailed(sc, s, st, it, len(it.Attempts)+1, kindConnector, cleanText("dispatch failed: "+derr.Error()), Value{}, nil, nil)
			} else {
				var tele any
				if res.Telemetry != nil {
					tele = map[string]any{"durationMs": res.Telemetry.DurationMs, "model": res.Telemetry.Model}
					if res.Telemetry.Effort != "" {
						tele.(map[string]any)["effort"] = res.Telemetry.Effort
					}
				}
				var usage any
				if !res.Usage.IsZero() {
					usage = res.Usage
				}
				t.settleItem(sc, s, st, it, itemResult{output: res.Output, failure: res.Failure, usage: usage, telemetry: tele, token: token})
			}
			done = isTerminalStep(it.Status)
			t.advance()
			return nil
		})
		if err != nil || stop {
			return false
		}
		if done {
			return true
		}
	}
	return false
}
