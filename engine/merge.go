package engine

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/stratum-go/stratum/expr"
	"github.com/stratum-go/stratum/ir"
)

// Worktree isolation of engine fanouts (docs/engine.md, "Worktree isolation
// of engine fanouts").
//
// Each item works in its own git worktree (fanout_engine.go makes and
// removes it). After the final stage the item's changes are captured as a
// binary patch; the patch is written into an internal engine.patch event
// in the same durable change that records the item's success, and the
// item keeps only the event's seq (the state document stays small; a
// patch is bounded by Options.PatchLimit).
//
// When every item is terminal and `require` is met, the process driving
// the fanout merges the succeeded items in index order, one item at a
// time: a transition finds the next item, its patch is applied to the
// workspace outside the run's lock (all or nothing, by the Workspaces
// executor), and a second transition records fanout_merge, drops the
// patch reference and moves the merge cursor, if the cursor is still on
// that item (a concurrent merger may have recorded it first). The
// pre_merge commands run once before the first patch, outside the lock
// too: no git work or command ever holds the lock.
//
// Crash safety: a process that dies after applying a patch but before its
// write leaves the patch applied and the cursor on it; the next process
// finds every change already present (its reverse applies) and records
// the merge without applying it again. pre_merge commands are recorded
// done only with the first applied patch, so a crash in between runs them
// again (at least once). A failing command or patch fails the run with
// "fanout merge failed: <reason>" (never routed by on_fail).

// patchBlob is the payload of an engine.patch event.
type patchBlob struct {
	ItemIndex int    `json:"itemIndex"`
	Patch     []byte `json:"patch"` // base64 in JSON: a patch need not be UTF-8
}

// readPatch loads a patch recorded by settleItem.
func (e *Engine) readPatch(ctx context.Context, runID string, seq int64) ([]byte, error) {
	snap, err := e.store.Load(ctx, runID)
	if err != nil {
		return nil, mapStoreErr(runID, err)
	}
	found, err := e.readBlobs(ctx, runID, snap.Head.Seq, map[int64]string{seq: ""})
	if err != nil {
		return nil, err
	}
	raw, ok := found[seq]
	if !ok {
		return nil, fmt.Errorf("run %s: %w: the patch event %d is missing", runID, ErrCorrupt, seq)
	}
	var b patchBlob
	if err := json.Unmarshal(raw, &b); err != nil {
		return nil, fmt.Errorf("run %s: %w: patch event %d: %v", runID, ErrCorrupt, seq, err)
	}
	return b.Patch, nil
}

// fileJail is where file functions read: a fanout item's worktree (made
// by Stratum), or the run's workspace root, opened through its anchor (see
// [expr.EvalOptions]).
type fileJail struct{ root, anchor string }

func (j fileJail) options(budget *expr.Budget) *expr.EvalOptions {
	return &expr.EvalOptions{WorkspaceRoot: j.root, WorkspaceAnchor: j.anchor, Budget: budget}
}

// fileJail is the jail of file functions over root: an item's worktree
// when root is set (anchored where this process made it), else the run's
// workspace root.
func (t *txn) fileJail(root string) fileJail {
	if root != "" {
		t.e.fanoutMu.Lock()
		defer t.e.fanoutMu.Unlock()
		return fileJail{root: root, anchor: t.e.worktreeAnchors[root]}
	}
	return fileJail{root: t.st.WorkspaceRoot, anchor: t.st.WorkspaceAnchor}
}

func worktreeFanout(s *ir.Step) bool {
	return s.Fanout.Isolation == ir.IsolationWorktree
}

// mergeNext is the index of the next succeeded item of a worktree fanout
// still to merge, or -1 when none is left (or the fanout merges nothing).
// The engine merges every item of an engine fanout; of a consumer fanout,
// only the items whose consumer handed over its changes
// (StepResult.Patch): the others' consumer merges its own work.
func mergeNext(s *ir.Step, st *stepState) int {
	if !worktreeFanout(s) || st.Fanout == nil {
		return -1
	}
	from := 0
	if st.Fanout.Merge != nil {
		from = st.Fanout.Merge.Next
	}
	for i := from; i < len(st.Fanout.Items); i++ {
		it := st.Fanout.Items[i]
		if it.Status == StepSucceeded && (!consumerFanout(s) || it.PatchSeq != 0) {
			return i
		}
	}
	return -1
}

// mergeStep is what one merge transition found to do (outside the lock).
type mergeStep struct {
	stop bool
	// preMerge: run these commands before item's patch.
	preMerge []string
	// apply: apply the patch of item (recorded in event patchSeq).
	apply    bool
	item     int
	patchSeq int64
	// workspace is the run's workspace root; flow is the fanout's flow.
	workspace, flow string
}

// mergeFanout merges the succeeded items of a settled engine worktree
// fanout into the workspace, one durable change per item, then lets the
// scheduler settle the fanout. It stops when the fanout is no longer
// current (cancelled, reset, the run ended), and then has the
// Workspaces executor tear down the worktrees a killed process left for
// items that are already finished.
func (e *Engine) mergeFanout(runID string, s *ir.Step, epoch int) {
	preMergeRan := false
	workspace := ""
	defer func() {
		if workspace != "" && e.bgCtx.Err() == nil && e.opts.Workspaces != nil {
			e.opts.Workspaces.Sweep(e.bgCtx, workspace, IsolateRequest{Workspace: workspace, RunID: runID, StepID: s.ID, Index: -1, Live: e.liveWorktree})
		}
	}()
	for e.bgCtx.Err() == nil {
		var step mergeStep
		_, err := e.mutateBG(runID, func(t *txn) error {
			step = mergeStep{}
			sc, st, ok := t.currentFanout(s, epoch)
			if !ok {
				step.stop = true
				return nil
			}
			if worktreeFanout(s) && !consumerFanout(s) {
				workspace = t.st.WorkspaceRoot // the consumer sweeps its own worktrees
			}
			for _, it := range st.Fanout.Items {
				if !isTerminalStep(it.Status) {
					step.stop = true // items still running: their worker merges later
					return nil
				}
			}
			next := -1
			if requireMet(s, st) {
				next = mergeNext(s, st)
			}
			if next < 0 {
				t.advance() // settles (or fails an unmet require)
				step.stop = true
				return nil
			}
			it := st.Fanout.Items[next]
			if it.PatchSeq == 0 {
				t.recordMerge(sc, s, st, it, false, false)
				t.advance()
				return nil
			}
			if e.opts.Workspaces == nil {
				t.mergeFailed(sc, s, st, it.Index, "worktree isolation is not available: the process running this run was started without git workspaces")
				t.advance()
				return nil
			}
			step.item, step.patchSeq, step.workspace, step.flow = next, it.PatchSeq, t.st.WorkspaceRoot, sc.flow.Name
			if m := st.Fanout.Merge; (m == nil || !m.PreMerged) && len(s.Fanout.PreMerge) > 0 && !preMergeRan {
				step.preMerge = s.Fanout.PreMerge
			} else {
				step.apply = true
			}
			return nil // nothing changed: the work happens outside the lock
		})
		if err != nil || step.stop {
			return
		}
		switch {
		case step.preMerge != nil:
			if !e.runPreMerge(runID, s, epoch, step) {
				return
			}
			preMergeRan = true
		case step.apply:
			if !e.applyPatch(runID, s, epoch, step) {
				return
			}
		}
	}
}

// runPreMerge runs a fanout's pre_merge commands; false when merging must
// stop.
func (e *Engine) runPreMerge(runID string, s *ir.Step, epoch int, step mergeStep) bool {
	for _, cmd := range step.preMerge {
		err := error(nil)
		if e.opts.Policy != nil {
			err = e.opts.Policy.Allow(Effect{Kind: EffectCommand, StepID: s.ID, Flow: step.flow, Command: cmd})
		}
		if err == nil {
			err = e.opts.Workspaces.RunCommand(e.bgCtx, step.workspace, cmd)
		}
		if err != nil {
			if e.bgCtx.Err() != nil {
				return false // the process is going away: the next one runs them again
			}
			_, _ = e.mutateBG(runID, func(t *txn) error {
				if sc, st, ok := t.currentFanout(s, epoch); ok {
					t.mergeFailed(sc, s, st, step.item, cleanText(err.Error()))
				}
				return nil
			})
			return false
		}
	}
	return true
}

// applyPatch applies one item's patch to the workspace outside the lock,
// then records the merge if no one recorded it meanwhile; false when
// merging must stop.
func (e *Engine) applyPatch(runID string, s *ir.Step, epoch int, step mergeStep) bool {
	patch, err := e.readPatch(e.bgCtx, runID, step.patchSeq)
	var already bool
	if err == nil {
		// Never interrupted half way: a cancelled context would kill git
		// while it writes the workspace (git bounds its own time).
		already, err = e.opts.Workspaces.Apply(context.WithoutCancel(e.bgCtx), step.workspace, patch)
	}
	if e.bgCtx.Err() != nil {
		return false // recorded by the next process (it finds the changes present)
	}
	stop := false
	_, merr := e.mutateBG(runID, func(t *txn) error {
		sc, st, ok := t.currentFanout(s, epoch)
		if !ok || step.item >= len(st.Fanout.Items) || st.Fanout.Items[step.item].PatchSeq != step.patchSeq {
			stop = !ok
			return nil // superseded, or recorded by a concurrent merger
		}
		it := st.Fanout.Items[step.item]
		if err != nil {
			t.mergeFailed(sc, s, st, it.Index, cleanText(fmt.Sprintf("item %d: %v", it.Index, err)))
		} else {
			t.recordMerge(sc, s, st, it, true, already)
		}
		t.advance()
		return nil
	})
	return merr == nil && !stop && err == nil
}

// recordMerge records one merged item (under the run lock): fanout_merge,
// the patch dropped, the cursor moved, in one write.
func (t *txn) recordMerge(sc *scope, s *ir.Step, st *stepState, it *itemState, changes, alreadyPresent bool) {
	merged := true
	detail := FanoutItemDetail{ItemIndex: it.Index, Success: &merged, AlreadyPresent: alreadyPresent}
	if !changes {
		none := false
		detail.Changes = &none
	}
	m := st.Fanout.Merge
	if m == nil {
		m = &mergeState{}
		st.Fanout.Merge = m
	}
	if changes {
		m.PreMerged = true
	}
	m.Next = it.Index + 1
	it.PatchSeq = 0
	t.emit(EventFanoutMerge, sc.scoped(s.ID), detail)
}

// mergeFailed records a failed merge and fails the run: a workspace that
// could not receive the fanout's changes must not be worked on by the
// steps after it, so on_fail does not apply.
func (t *txn) mergeFailed(sc *scope, s *ir.Step, st *stepState, item int, reason string) {
	failed := false
	t.emit(EventFanoutMerge, sc.scoped(s.ID), FanoutItemDetail{ItemIndex: item, Success: &failed, Reason: reason})
	t.failAttempt(sc, s, st, attemptFailure{attempt: len(st.Attempts) + 1, reason: "fanout merge failed: " + reason, noRoute: true})
}

// failExecution fails the run of a fanout that cannot be executed (its
// item's worktree cannot be made): "fanout execution failed: <msg>".
func (e *Engine) failExecution(runID string, s *ir.Step, epoch int, msg string) {
	_, _ = e.mutateBG(runID, func(t *txn) error {
		if sc, st, ok := t.currentFanout(s, epoch); ok {
			t.failAttempt(sc, s, st, attemptFailure{attempt: len(st.Attempts) + 1, reason: cleanText("fanout execution failed: " + msg), noRoute: true})
		}
		return nil
	})
}
