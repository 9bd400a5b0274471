package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/stratum-go/stratum/ir"
)

// MaxCheckpoints bounds the checkpoints of one run: each holds a copy of
// the run's step states inside the state document, so an unbounded list
// would make every step cost more. Reusing a label replaces it in place.
const MaxCheckpoints = 32

// CommitResult is the answer to Commit (and of the MCP tool stratum_commit:
// docs/mcp.md, "Tools").
type CommitResult struct {
	Status string `json:"status" jsonschema:"committed"`
	RunID  string `json:"runId" jsonschema:"the run's id"`
	Label  string `json:"label" jsonschema:"the checkpoint's label as saved (trimmed)"`
	// StepNumber is the 1-based position of CurrentStepID among the root
	// steps, or len(steps)+1 when every root step is terminal.
	StepNumber    int      `json:"stepNumber" jsonschema:"1-based position of currentStepId among the entry flow's steps (one past the last when all are finished)"`
	CurrentStepID *string  `json:"currentStepId" jsonschema:"the first entry-flow step not yet finished, null when all are"`
	Checkpoints   []string `json:"checkpoints" jsonschema:"every checkpoint label of the run, oldest first"`
}

// checkpointGuards refuses commit and revert on cancelled runs and while
// a fanout is in flight.
func (t *txn) checkpointGuards(verb string) error {
	if t.st.Status == StatusCancelled || t.st.CancelRequested {
		return newErr(ErrRunCancelled, t.st.ID, "Flow '%s' is cancelled; %s is not permitted", t.st.ID, verb)
	}
	if t.st.Status != StatusRunning {
		return nil
	}
	root := t.rootScope()
	for _, s := range root.flow.Steps {
		if s.Kind != ir.KindFanout || root.statusOf(s) == StepPending {
			continue
		}
		st := root.peek(s)
		if st.Status == StepRunning {
			return newErr(ErrFanoutInFlight, t.st.ID, "flow %s has an in-flight fanout (%q); %s must wait for it to settle", t.st.ID, s.ID, verb)
		}
		if consumerFanout(s) && s.Fanout.Isolation == ir.IsolationWorktree && st.Status == StepSucceeded {
			for _, di := range s.Dependents {
				g := root.flow.Steps[di]
				if g.Kind == ir.KindGate && !g.HasWhen && !g.RouteOnly() {
					if gs := root.peek(g); gs == nil || gs.Status != StepSucceeded {
						return newErr(ErrFanoutInFlight, t.st.ID,
							"flow %s has an active consumer fanout lifecycle (%q); %s must wait for its successor gate %q to resolve", t.st.ID, s.ID, verb, g.ID)
					}
				}
			}
		}
	}
	return nil
}

// deepCopy copies a JSON-serialisable value through its encoding.
func deepCopy[T any](v T) (T, error) {
	var out T
	b, err := json.Marshal(v)
	if err != nil {
		return out, err
	}
	err = json.Unmarshal(b, &out)
	return out, err
}

// Commit saves a named, state-only checkpoint of the run (docs/engine.md,
// "Checkpoints"): status, output, failure, spend, rounds, every step state and carry.
// Workspace files are never touched. Reusing a label replaces its
// snapshot in place.
func (e *Engine) Commit(ctx context.Context, runID, label string) (*CommitResult, error) {
	label, err := checkLabel(runID, label)
	if err != nil {
		return nil, err
	}
	t, err := e.mutate(ctx, runID, func(t *txn) error {
		if err := t.checkpointGuards("commit"); err != nil {
			return err
		}
		if err := t.guardDriver(); err != nil {
			return err
		}
		// The live steps in full; the finished ones by their index (the
		// state events they refer to never change).
		if err := t.settleLoaded(); err != nil {
			return err
		}
		snap := snapshot{Status: t.st.Status, Output: t.st.Output, Failure: t.st.Failure, FlowSpent: t.st.FlowSpent,
			Rounds: t.st.Rounds, Steps: map[string]*stepState{}, ColdRecent: t.st.ColdRecent, ColdChunks: t.st.ColdChunks,
			LegacyCold: t.st.LegacyCold, Carry: t.st.Carry, CancelRequested: t.st.CancelRequested, EventSeq: t.headSeq + int64(len(t.events))}
		for id, ss := range t.st.Steps {
			if ss.coldSeq == 0 && !ss.pristine() {
				snap.Steps[id] = compactStep(ss)
			}
		}
		i := slices.IndexFunc(t.st.Checkpoints, func(c checkpointRef) bool { return c.Label == label })
		replaced := i >= 0
		if !replaced && len(t.st.Checkpoints) >= MaxCheckpoints {
			return newErr(ErrInvalidLabel, t.st.ID, "flow %s already has %d checkpoints (the limit); reuse a label to replace one", t.st.ID, MaxCheckpoints)
		}
		seq, err := t.emitBlob(evCheckpoint, "", snap)
		if err != nil {
			return err
		}
		if replaced {
			t.st.Checkpoints[i].Seq = seq
		} else {
			t.st.Checkpoints = append(t.st.Checkpoints, checkpointRef{Label: label, Seq: seq})
		}
		t.emit(EventCheckpointCommitted, "", CheckpointDetail{Label: label, Replaced: &replaced})
		res := &CommitResult{Status: "committed", RunID: t.st.ID, Label: label, Checkpoints: t.labels()}
		root := t.rootScope()
		res.StepNumber = len(root.flow.Steps) + 1
		for i, s := range root.flow.Steps {
			if !isTerminalStep(root.statusOf(s)) {
				id := s.ID
				res.StepNumber, res.CurrentStepID = i+1, &id
				break
			}
		}
		t.extra = res
		return nil
	})
	if err != nil {
		return nil, err
	}
	return t.extra.(*CommitResult), nil
}

// checkLabel trims a checkpoint label and refuses an empty one or one
// that is not valid UTF-8 (it could not be stored and found again).
func checkLabel(runID, label string) (string, error) {
	label = strings.TrimSpace(label)
	switch {
	case label == "":
		return "", newErr(ErrInvalidLabel, runID, "label must be a non-empty string")
	case !utf8.ValidString(label):
		return "", newErr(ErrInvalidLabel, runID, "label must be valid UTF-8")
	}
	return label, nil
}

func (t *txn) labels() []string {
	out := make([]string, len(t.st.Checkpoints))
	for i, cp := range t.st.Checkpoints {
		out[i] = cp.Label
	}
	return out
}

// Revert restores a checkpoint and re-advances the run (docs/engine.md,
// "Checkpoints"):
// step states, status, output, rounds and carry return to the snapshot;
// spend never goes down; every restored issuance (ready step, waiting gate,
// live fanout item) gets a new token so reports made against the reverted
// future are refused. Events are never removed: the append-only log
// records the revert (checkpoint_reverted with the event seq of the
// commit). The caller owns rolling back workspace files.
func (e *Engine) Revert(ctx context.Context, runID, label string) (*Response, error) {
	label, err := checkLabel(runID, label)
	if err != nil {
		return nil, err
	}
	t, err := e.mutate(ctx, runID, func(t *txn) error {
		if err := t.checkpointGuards("revert"); err != nil {
			return err
		}
		if err := t.guardDriver(); err != nil {
			return err
		}
		i := slices.IndexFunc(t.st.Checkpoints, func(c checkpointRef) bool { return c.Label == label })
		if i < 0 {
			err := newErr(ErrCheckpointNotFound, t.st.ID, "No checkpoint '%s' on flow '%s'", label, t.st.ID)
			err.Available = t.labels()
			return err
		}
		snap, err := t.loadSnapshot(t.st.Checkpoints[i].Seq)
		if err != nil {
			return err
		}
		live := t.st.FlowSpent
		t.st.Status, t.st.Output, t.st.Failure = snap.Status, snap.Output, snap.Failure
		t.st.Rounds, t.st.Carry, t.st.CancelRequested = snap.Rounds, snap.Carry, snap.CancelRequested
		t.st.Steps = snap.Steps
		t.st.ColdRecent, t.st.ColdChunks, t.st.LegacyCold = snap.ColdRecent, snap.ColdChunks, snap.LegacyCold
		if err := t.e.buildCold(t.ctx, t.st.ID, t.st); err != nil {
			return err
		}
		t.root = nil
		t.fullSweep = true // every step's state was replaced
		t.st.FlowSpent = live.max(t.st.ReceiptTotal)
		var restored []string
		root := t.rootScope()
		for _, s := range root.flow.Steps {
			if _, ok := t.st.Steps[s.ID]; ok {
				restored = append(restored, s.ID)
			} else if _, ok := t.st.cold[s.ID]; ok {
				restored = append(restored, s.ID)
			}
		}
		if restored == nil {
			restored = []string{}
		}
		receipts, atCommit := t.st.ReceiptCounter, snap.EventSeq
		t.emit(EventCheckpointReverted, "", CheckpointDetail{Label: label, ReceiptsAtRevert: &receipts,
			StepsRestored: restored, EventsAtCommit: &atCommit})
		t.engineReceipt()
		t.rotate(root)
		if t.st.Status == StatusRunning {
			t.advance()
			t.engineWork = true
		}
		t.result = t.response()
		t.result.RevertedTo = label
		return nil
	})
	if err != nil {
		return nil, err
	}
	return t.result, nil
}

// rotate re-issues every restored issuance of a scope (and its
// subflows): new dispatch tokens for ready steps, new gate tokens for
// waiting gates, new generations (and tokens) for live fanout items.
func (t *txn) rotate(sc *scope) {
	for _, s := range sc.flow.Steps {
		st := sc.peek(s)
		if st == nil {
			continue
		}
		if isTerminalStep(st.Status) {
			continue
		}
		st.AcceptedDispatchToken = ""
		switch st.Status {
		case StepReady:
			st.DispatchToken = t.token()
		case StepWaitingGate:
			st.GateToken = t.token()
		}
		if st.Fanout != nil {
			// Every unfinished item changes below (restored steps come
			// decoded, without a window, but that is the caller's affair).
			st.Fanout.forgetWindow()
			for _, it := range st.Fanout.Items {
				if isTerminalStep(it.Status) {
					continue // as a finished step, a finished item keeps what it accepted
				}
				it.AcceptedDispatchToken = ""
				t.st.GenerationCounter++
				it.Generation = t.st.GenerationCounter
				it.Epoch = st.Epoch
				if it.Status == StepReady || it.Status == StepRunning || it.DispatchToken != "" {
					it.DispatchToken = t.token()
				}
			}
		}
		if s.Kind == ir.KindRun && st.Sub != nil {
			if child := t.childScope(sc, s); child != nil {
				t.rotate(child)
			}
		}
	}
}

// loadSnapshot reads a checkpoint snapshot: its live steps, and its index
// of the finished ones (loaded when read, like any run's).
func (t *txn) loadSnapshot(seq int64) (*snapshot, error) {
	raw, err := t.e.blob(t.ctx, t.st.ID, seq)
	if err != nil {
		return nil, err
	}
	snap := &snapshot{}
	if err := json.Unmarshal(raw, snap); err != nil {
		return nil, fmt.Errorf("run %s: %w: checkpoint event %d: %v", t.st.ID, ErrCorrupt, seq, err)
	}
	if snap.Steps == nil {
		snap.Steps = map[string]*stepState{}
	}
	for _, ss := range snap.Steps {
		if ss.Attempts == nil {
			ss.Attempts = []Attempt{}
		}
	}
	if err := t.e.hydrateSteps(t.ctx, t.st.ID, snap.Steps); err != nil {
		return nil, err
	}
	return snap, nil
}
