package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/stratum-go/stratum/ir"
	"github.com/stratum-go/stratum/store"
)

// A run's summary is written with every update into the store's per-run
// summary (store.Change.Summary), so listings read one small record per
// run and never the run's log or state (docs/engine.md, "Listings").

// summaryFormat versions the stored summary; a summary of another format
// (or none: a run written before summaries) is rebuilt from the run.
const summaryFormat = 1

// Bounds on what a summary lists, so that it stays far below
// store.MaxSummaryBytes; a run over them is marked More and its listing
// reads the run itself.
const (
	summaryMaxWaiting = 32
	summaryMaxGates   = 8
)

// RunSummary describes one run in a listing.
type RunSummary struct {
	RunID string `json:"runId"`
	Flow  string `json:"flow"`
	// Status is the run's status; a running run whose cancel was requested
	// is listed as cancelled.
	Status    RunStatus `json:"status"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
	// FailureCause says what ended a failed run.
	FailureCause FailureCause `json:"failureCause,omitempty"`
	// Rounds is how many gate revise rounds the run has had.
	Rounds int `json:"rounds"`
	// Steps is the number of the entry flow's steps, Done how many of them
	// succeeded or were skipped.
	Steps int `json:"steps"`
	Done  int `json:"done"`
	// Current is the step the run is at: the first (in declaration order)
	// waiting at a gate, else running, else ready, else pending; empty
	// unless the run is running.
	Current string `json:"current,omitempty"`
	// GateWaits reports a gate waiting for a decision, in the run or any
	// of its running subflows.
	GateWaits bool `json:"gateWaits,omitempty"`
	// Waiting lists the gates and engine work a running run waits on.
	Waiting []Waiting `json:"waiting,omitempty"`
	// Error is set when the run could not be read (it is still listed).
	Error string `json:"error,omitempty"`
}

// storedSummary is the persisted summary.
type storedSummary struct {
	Format int `json:"v"`
	RunSummary
	CancelRequested bool          `json:"cancelRequested,omitempty"`
	Background      bool          `json:"background,omitempty"` // driven by a server (lease.go)
	Gates           []WaitingGate `json:"gates,omitempty"`
	// More is set when Waiting or Gates were cut to the bounds.
	More bool `json:"more,omitempty"`
}

// summary builds the run's summary from its state.
func (t *txn) summary() (s *storedSummary, err error) {
	defer recoverLoad(&err)
	st := t.st
	root := t.rootScope()
	s = &storedSummary{Format: summaryFormat, CancelRequested: st.CancelRequested, Background: st.Background != nil, RunSummary: RunSummary{
		RunID: st.ID, Flow: st.FlowName, Status: st.Status, CreatedAt: st.CreatedAt, UpdatedAt: st.UpdatedAt,
		Rounds: st.Rounds, Steps: len(root.flow.Steps), Done: t.doneSteps(),
	}}
	if st.Failure != nil {
		s.FailureCause = st.Failure.Cause
	}
	if st.Status != StatusRunning {
		return s, nil
	}
	s.Current = t.currentStep(root)
	s.GateWaits = gateWaiting(st.Steps)
	if st.CancelRequested {
		return s, nil
	}
	s.Waiting = t.waiting()
	t.eachWaitingGate(func(_ *scope, _ *ir.Step, _ *stepState, wg WaitingGate) {
		s.Gates = append(s.Gates, wg)
	})
	if len(s.Waiting) > summaryMaxWaiting || len(s.Gates) > summaryMaxGates {
		s.Waiting, s.Gates, s.More = nil, nil, true
	}
	return s, nil
}

// summaryJSON is the summary as the store keeps it.
func (t *txn) summaryJSON() (json.RawMessage, error) {
	s, err := t.summary()
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("encode run summary: %w", err)
	}
	if len(b) > store.MaxSummaryBytes { // long step ids: list the run by reading it
		s.Waiting, s.Gates, s.More = nil, nil, true
		if b, err = json.Marshal(s); err != nil {
			return nil, fmt.Errorf("encode run summary: %w", err)
		}
	}
	return b, nil
}

// doneSteps counts the root steps that succeeded or were skipped: the
// finished ones from the index's running count, corrected by the live
// states (which shadow their index entries).
func (t *txn) doneSteps() int {
	st := t.st
	n := st.coldDone
	for id, ss := range st.Steps {
		if countsDone(ss.Status) {
			n++
		}
		if ref, ok := st.cold[id]; ok && countsDone(ref.Status) {
			n--
		}
	}
	return n
}

// countsDone is a step status that counts as done in a listing.
func countsDone(s StepStatus) bool { return s == StepSucceeded || s == StepSkipped }

// currentStep is RunSummary.Current: gates, running, ready and pending
// steps are looked for in that order. Only a run with nothing live can be
// at a pending step; that rare case reads the index of every step.
func (t *txn) currentStep(root *scope) string {
	live := root.liveSteps()
	for _, want := range []StepStatus{StepWaitingGate, StepRunning, StepReady} {
		for _, s := range live {
			if root.statusOf(s) == want {
				return s.ID
			}
		}
	}
	for _, s := range root.flow.Steps {
		if root.statusOf(s) == StepPending {
			return s.ID
		}
	}
	return ""
}

// gateWaiting reports a step waiting at a gate among steps, subflows
// included.
func gateWaiting(steps map[string]*stepState) bool {
	for _, ss := range steps {
		if ss.Status == StepWaitingGate || ss.Sub != nil && gateWaiting(ss.Sub.Steps) {
			return true
		}
	}
	return false
}

// decodeSummary reads a stored summary (by hand in the shape the engine
// writes, see fastSummary, else with encoding/json); ok is false when
// there is none of this format.
func decodeSummary(raw json.RawMessage) (*storedSummary, bool) {
	var s storedSummary
	if !(&summaryScan{b: raw}).stored(&s) {
		return nil, false
	}
	return &s, true
}

// listSummary reads into s a run's summary, for a listing: the stored
// one (read by d, without its gates), or one built from the run when the
// store has none of this format.
func (e *Engine) listSummary(ctx context.Context, info store.RunInfo, d *listDecoder, s *storedSummary) error {
	if d.decode(info.Summary, info.ID, s) {
		return nil
	}
	st, c, _, err := e.load(ctx, info.ID)
	if err != nil {
		return err
	}
	built, err := newTxn(ctx, e, st, c).summary()
	if err != nil {
		return err
	}
	*s = *built
	return nil
}

// ListGates lists the gates awaiting a decision: of one run (read from
// the run), or of every running run when runID is empty (from the runs'
// summaries; a run with more gates than a summary lists is read).
func (e *Engine) ListGates(ctx context.Context, runID string) (_ []WaitingGate, err error) {
	defer recoverLoad(&err)
	out := []WaitingGate{}
	if runID != "" {
		st, c, _, err := e.load(ctx, runID)
		if err != nil {
			return nil, err
		}
		return append(out, runGates(newTxn(ctx, e, st, c))...), nil
	}
	infos, err := e.store.List(ctx)
	if err != nil {
		return nil, err
	}
	for _, info := range infos {
		s, ok := decodeSummary(info.Summary)
		if ok && !s.More {
			if s.Status == StatusRunning && !s.CancelRequested {
				out = append(out, s.Gates...)
			}
			continue
		}
		st, c, _, err := e.load(ctx, info.ID)
		if err != nil {
			continue // a listing of every run skips what it cannot read
		}
		out = append(out, runGates(newTxn(ctx, e, st, c))...)
	}
	return out, nil
}

// runGates are a run's waiting gates (none unless it is running).
func runGates(t *txn) []WaitingGate {
	var out []WaitingGate
	if t.st.Status != StatusRunning || t.st.CancelRequested {
		return out
	}
	t.eachWaitingGate(func(_ *scope, _ *ir.Step, _ *stepState, wg WaitingGate) {
		out = append(out, wg)
	})
	return out
}
