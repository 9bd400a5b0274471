package engine

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/stratum-go/stratum/internal/worktree"
	"github.com/stratum-go/stratum/ir"
)

// Worktree isolation of engine fanouts (spec/engine.md 5.4, 5.4.2).
//
// Each item works in its own git worktree (fanout_engine.go makes and
// removes it). After the final stage the item's changes are captured as a
// binary patch; the patch is written into an internal engine.patch event
// in the same durable change that records the item's success, and the
// item keeps only the event's seq (the state document stays small; a
// patch is bounded by Options.PatchLimit).
//
// When every item is terminal and `require` is met, the process driving
// the fanout merges the succeeded items in index order, one durable
// change per item: under the run lock it applies the item's patch to the
// workspace (all or nothing, worktree.Apply), then records fanout_merge,
// drops the patch reference and moves the merge cursor, in one write. The
// pre_merge commands run once before the first patch, outside the lock
// (they may take long; the run stays answerable meanwhile).
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
func (t *txn) readPatch(seq int64) ([]byte, error) {
	found, err := t.e.readBlobs(t.ctx, t.st.ID, t.headSeq, map[int64]string{seq: ""})
	if err != nil {
		return nil, err
	}
	raw, ok := found[seq]
	if !ok {
		return nil, fmt.Errorf("run %s: %w: the patch event %d is missing", t.st.ID, ErrCorrupt, seq)
	}
	var b patchBlob
	if err := json.Unmarshal(raw, &b); err != nil {
		return nil, fmt.Errorf("run %s: %w: patch event %d: %v", t.st.ID, ErrCorrupt, seq, err)
	}
	return b.Patch, nil
}

// fileRoot is the jail of file helpers: root when set (an item's
// worktree), else the run's workspace root.
func (t *txn) fileRoot(root string) string {
	if root != "" {
		return root
	}
	return t.st.WorkspaceRoot
}

func worktreeFanout(s *ir.Step) bool {
	return !consumerFanout(s) && s.Fanout.Isolation == "worktree"
}

// mergeNext is the index of the next succeeded item of an engine
// worktree fanout still to merge, or -1 when none is left (or the fanout
// merges nothing).
func mergeNext(s *ir.Step, st *stepState) int {
	if !worktreeFanout(s) || st.Fanout == nil {
		return -1
	}
	from := 0
	if st.Fanout.Merge != nil {
		from = st.Fanout.Merge.Next
	}
	for i := from; i < len(st.Fanout.Items); i++ {
		if st.Fanout.Items[i].Status == StepSucceeded {
			return i
		}
	}
	return -1
}

// mergeStep is what one merge transition found to do.
type mergeStep struct {
	stop bool
	// preMerge: run these commands (outside the lock) before item's patch.
	preMerge  []string
	item      int
	workspace string
}

// mergeFanout merges the succeeded items of a settled engine worktree
// fanout into the workspace, one durable change per item, then lets the
// scheduler settle the fanout. It stops when the fanout is no longer
// current (cancelled, reset, the run ended), and then tears down the
// worktrees a killed process left for items that are already finished.
func (e *Engine) mergeFanout(runID string, s *ir.Step, epoch int) {
	preMergeRan := false
	workspace := ""
	defer func() {
		if workspace != "" && e.bgCtx.Err() == nil {
			e.worktreeMu.Lock()
			defer e.worktreeMu.Unlock()
			worktree.RemoveLeftovers(e.bgCtx, workspace, e.opts.WorktreeDir, worktree.Prefix(runID, s.ID, -1), e.liveWorktree)
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
			if worktreeFanout(s) {
				workspace = t.st.WorkspaceRoot
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
			m := st.Fanout.Merge
			if it.PatchSeq != 0 && (m == nil || !m.PreMerged) && len(s.Fanout.PreMerge) > 0 && !preMergeRan {
				step.preMerge, step.item, step.workspace = s.Fanout.PreMerge, next, t.st.WorkspaceRoot
				return nil // nothing changed: the commands run outside the lock
			}
			t.mergeItem(sc, s, st, it)
			t.advance()
			return nil
		})
		if err != nil || step.stop {
			return
		}
		if step.preMerge == nil {
			continue
		}
		for _, cmd := range step.preMerge {
			if err := worktree.RunCommand(e.bgCtx, step.workspace, cmd, 0); err != nil {
				if e.bgCtx.Err() != nil {
					return // the process is going away: the next one runs them again
				}
				_, _ = e.mutateBG(runID, func(t *txn) error {
					if sc, st, ok := t.currentFanout(s, epoch); ok {
						t.mergeFailed(sc, s, st, step.item, cleanText(err.Error()))
					}
					return nil
				})
				return
			}
		}
		preMergeRan = true
	}
}

// mergeItem merges one succeeded item (under the run lock): its patch is
// applied to the workspace, then fanout_merge is recorded and the patch
// dropped in the same write.
func (t *txn) mergeItem(sc *scope, s *ir.Step, st *stepState, it *itemState) {
	merged := true
	detail := FanoutItemDetail{ItemIndex: it.Index, Success: &merged}
	if it.PatchSeq == 0 {
		none := false
		detail.Changes = &none
	} else {
		patch, err := t.readPatch(it.PatchSeq)
		var how worktree.Applied
		if err == nil {
			// Never interrupted half way: a cancelled context would kill
			// git while it writes the workspace (git bounds its own time).
			how, err = worktree.Apply(context.WithoutCancel(t.ctx), t.st.WorkspaceRoot, patch)
		}
		if err != nil {
			t.mergeFailed(sc, s, st, it.Index, cleanText(fmt.Sprintf("item %d: %v", it.Index, err)))
			return
		}
		detail.AlreadyPresent = how == worktree.AlreadyPresent
	}
	m := st.Fanout.Merge
	if m == nil {
		m = &mergeState{}
		st.Fanout.Merge = m
	}
	if it.PatchSeq != 0 {
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
