package engine

import (
	"context"
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
	if e.bgCtx.Err() != nil {
		return
	}
	st, c, snap, err := e.loadLeased(e.bgCtx, runID)
	if err != nil || st.Status != StatusRunning || st.CancelRequested || !e.mayDrive(st, snap.Lease) {
		return
	}
	flow := c.plan.Flow(st.FlowName)
	for _, s := range flow.Steps {
		ss := st.Steps[s.ID]
		if s.Kind != ir.KindFanout || ss == nil || ss.Status != StepRunning || ss.Fanout == nil {
			continue
		}
		if ss.Fanout.Paused != "" {
			continue // waits for a resume
		}
		mergeOnly := consumerFanout(s)
		if mergeOnly && !awaitsMerge(s, ss) || !mergeOnly && e.opts.Dispatcher == nil {
			continue // a consumer's items are its own; an engine fanout needs a dispatcher
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
		if mergeOnly {
			go func() {
				defer e.wg.Done()
				defer e.release(key)
				e.mergeFanout(runID, s, ss.Epoch)
			}()
			continue
		}
		go e.driveFanout(key, runID, s, ss.Epoch, len(ss.Fanout.Items))
	}
}

// release forgets a fanout this process was driving.
func (e *Engine) release(key string) {
	e.fanoutMu.Lock()
	delete(e.fanouts, key)
	e.fanoutMu.Unlock()
}

// awaitsMerge reports a fanout whose items are all settled and whose
// succeeded items still have changes to merge.
func awaitsMerge(s *ir.Step, st *stepState) bool {
	for _, it := range st.Fanout.Items {
		if !isTerminalStep(it.Status) {
			return false
		}
	}
	return requireMet(s, st) && mergeNext(s, st) >= 0
}

// driveFanout runs a fanout's items with its concurrency, then lets the
// scheduler settle it.
func (e *Engine) driveFanout(key, runID string, s *ir.Step, epoch, n int) {
	defer e.wg.Done()
	defer e.release(key)
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
	// Merge worktree items, then settle (a no-op write when the last
	// item's transition already settled the fanout).
	e.mergeFanout(runID, s, epoch)
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
func (t *txn) currentFanout(s *ir.Step, epoch int) (*scope, *stepState, bool) {
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
// failed). With worktree isolation the item works in its own worktree,
// made before its first stage and always removed when it returns.
func (e *Engine) driveItem(runID string, s *ir.Step, epoch, idx int) bool {
	var wt Isolated
	defer func() {
		if wt != nil {
			e.removeWorktree(wt)
		}
	}()
	isolated := s.Fanout.Isolation == ir.IsolationWorktree
	for e.bgCtx.Err() == nil {
		var req *DispatchRequest
		var token, workspace string
		stop, done, needTree, final := false, false, false, false
		_, err := e.mutateBG(runID, func(t *txn) error {
			req, token, workspace = nil, "", ""
			stop, done, needTree, final = false, false, false, false
			sc, st, ok := t.currentFanout(s, epoch)
			if !ok || idx >= len(st.Fanout.Items) {
				stop = true
				return nil
			}
			st.Fanout.reach(idx)
			it := st.Fanout.Items[idx]
			if isTerminalStep(it.Status) {
				done = true
				return nil
			}
			if isolated && wt == nil {
				needTree, workspace = true, t.st.WorkspaceRoot
				return nil // nothing changed: the worktree is made outside the lock
			}
			root := ""
			if wt != nil {
				root = wt.Workdir()
			}
			it.Status = StepPending // an in-flight attempt of a dead process is dispatched again
			it.InFlight = false
			if !t.nextStage(sc, s, st, it, root) {
				done = true
				t.advance()
				return nil
			}
			stage := s.Fanout.Stages[it.Stage]
			attempt := len(it.Attempts) + 1
			sandbox := SandboxReadOnly
			if isolated {
				sandbox = SandboxWorkspaceWrite
			}
			if err := t.allowNow(Effect{Kind: EffectAgent, StepID: s.ID, Flow: sc.flow.Name, Agent: agentOf(string(stage.Agent)), Sandbox: sandbox}); err != nil {
				t.failAttempt(sc, s, st, attemptFailure{attempt: len(st.Attempts) + 1, reason: cleanText("fanout execution failed: " + err.Error()), noRoute: true})
				t.advance()
				stop = true
				return nil
			}
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
			at := it.Stage
			t.emit(EventFanoutLedgerDebit, id, map[string]any{"itemIndex": idx, "amount": Ledger{Dispatches: 1}})
			t.emit(EventFanoutItemDispatch, id, FanoutItemDetail{ItemIndex: idx, Stage: &at, Attempt: &attempt})
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
			req = &DispatchRequest{RunID: t.st.ID, StepID: id, ItemIndex: idx, Stage: it.Stage, Agent: agentOf(string(stage.Agent)),
				Prompt: text, Item: sx.item, Attempt: attempt, PreviousFailure: prevFail, Contract: t.c.contract(stage.Out),
				Plan: t.c.plan, Workdir: t.st.WorkspaceRoot, Sandbox: SandboxReadOnly}
			if wt != nil {
				req.Workdir, req.Sandbox = wt.Workdir(), SandboxWorkspaceWrite
			}
			if sx.hasPrev {
				req.Prev = sx.prev
			}
			final = it.Stage == len(s.Fanout.Stages)-1
			return nil
		})
		if err != nil || stop {
			return false
		}
		if done {
			return true
		}
		if needTree {
			var err error
			if wt, err = e.makeWorktree(runID, s.ID, idx, workspace); err != nil {
				if e.bgCtx.Err() == nil {
					e.failExecution(runID, s, epoch, err.Error())
				}
				return false
			}
			continue
		}
		if req == nil {
			continue
		}
		dctx, release := e.effectContext(e.bgCtx, runID, token)
		res, derr := e.opts.Dispatcher.Dispatch(dctx, *req)
		stopped := errors.Is(context.Cause(dctx), errRunStopped)
		release()
		if e.bgCtx.Err() != nil || stopped {
			return false
		}
		var capt *capture
		root := ""
		if wt != nil {
			root = wt.Workdir()
			if final && derr == nil && res.Failure == "" {
				// Captured before the result is settled, so that the
				// success and the changes are recorded together.
				patch, cerr := wt.Capture(e.bgCtx, e.opts.PatchLimit)
				if e.bgCtx.Err() != nil {
					return false
				}
				capt = &capture{patch: patch, err: cerr}
			}
		}
		_, err = e.mutateBG(runID, func(t *txn) error {
			stop, done = false, false
			sc, st, ok := t.currentFanout(s, epoch)
			if !ok || idx >= len(st.Fanout.Items) || st.Fanout.Items[idx].DispatchToken != token {
				stop = true // superseded: abandon without recording
				return nil
			}
			it := st.Fanout.Items[idx]
			if errors.Is(derr, ErrAgentUnavailable) {
				// Not an attempt: the agent could not run at all (not
				// logged in, no network, ...). The item waits, the fanout
				// stops being driven, and the run can be resumed once the
				// cause is fixed.
				it.Status, it.InFlight, it.DispatchToken, it.Task = StepPending, false, "", ""
				st.Fanout.Paused = cleanText(derr.Error())
				t.emit(EventDispatchUnavailable, sc.scoped(s.ID), FanoutItemDetail{ItemIndex: idx, Reason: st.Fanout.Paused})
				stop = true
				return nil
			}
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
				t.settleItem(sc, s, st, it, itemResult{output: res.Output, failure: res.Failure, stderr: res.Stderr, usage: usage, telemetry: tele, token: token,
					root: root, capture: capt})
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

// makeWorktree makes an item's worktree (the Workspaces executor tears
// down what an earlier process left for the same item; worktrees this
// process still uses, an earlier round's item finishing, are kept).
func (e *Engine) makeWorktree(runID, stepID string, idx int, workspace string) (Isolated, error) {
	if e.opts.Workspaces == nil {
		return nil, errors.New("worktree isolation is not available: the process running this run was started without git workspaces")
	}
	wt, err := e.opts.Workspaces.Isolate(e.bgCtx, IsolateRequest{Workspace: workspace, RunID: runID, StepID: stepID, Index: idx, Live: e.liveWorktree})
	if err != nil {
		return nil, err
	}
	e.fanoutMu.Lock()
	e.worktrees[wt.Name()] = true
	if e.worktreeAnchors == nil {
		e.worktreeAnchors = map[string]string{}
	}
	e.worktreeAnchors[wt.Workdir()] = wt.Anchor()
	e.fanoutMu.Unlock()
	return wt, nil
}

// removeWorktree tears an item's worktree down. A failure leaves a
// leftover that the item's next worktree removes.
func (e *Engine) removeWorktree(wt Isolated) {
	_ = wt.Remove(e.bgCtx)
	e.fanoutMu.Lock()
	delete(e.worktrees, wt.Name())
	delete(e.worktreeAnchors, wt.Workdir())
	e.fanoutMu.Unlock()
}

// liveWorktree reports a worktree (by base name) this process uses.
func (e *Engine) liveWorktree(name string) bool {
	e.fanoutMu.Lock()
	defer e.fanoutMu.Unlock()
	return e.worktrees[name]
}
