package engine

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
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
	if len(raw) == 0 {
		return nil, false
	}
	s, ok := fastSummary(raw)
	if !ok {
		s = storedSummary{}
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, false
		}
	}
	if s.Format != summaryFormat {
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

// ListRuns lists every run of the store, newest first, from the runs'
// summaries. A run that cannot be read is listed with its error rather
// than hiding the others.
func (e *Engine) ListRuns(ctx context.Context) ([]RunSummary, error) {
	infos, err := e.store.List(ctx)
	if err != nil {
		return nil, err
	}
	// Decoding the summaries is most of a long listing's CPU: a few
	// workers share it.
	all := make([]RunSummary, len(infos))
	gone := make([]bool, len(infos))
	workers := min(4, max(1, len(infos)/512))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			var d listDecoder
			var s storedSummary // one per worker: json.Unmarshal's target is on the heap
			for i := w; i < len(infos); i += workers {
				info := infos[i]
				s = storedSummary{}
				err := e.listSummary(ctx, info, &d, &s)
				switch {
				case errors.Is(err, ErrRunNotFound):
					gone[i] = true
				case err != nil:
					all[i] = RunSummary{RunID: info.ID, UpdatedAt: info.UpdatedAt, Error: err.Error()}
				default:
					all[i] = s.RunSummary
					if all[i].Status == StatusRunning && s.CancelRequested {
						all[i].Status = StatusCancelled
					}
				}
			}
		})
	}
	wg.Wait()
	return newestFirst(all, gone), nil
}

// newestKey is what a listing sorts a run by: its creation time (as
// seconds and nanoseconds, the order of time.Time.Compare for times
// without a monotonic reading, which decoded times never have) and its
// place in the store's order.
type newestKey struct {
	sec  int64
	nsec int32
	i    int32
}

// newestFirst is all without the gone runs, newest first and ties in the
// store's order. The keys are sorted, 16 bytes each, rather than the
// summaries (about 200 bytes) or indices into them (each comparison two
// reads far apart), and the summaries then moved into place, in all
// itself when no run is gone (docs/engine.md, "Listings").
func newestFirst(all []RunSummary, gone []bool) []RunSummary {
	keys := make([]newestKey, 0, len(all))
	for i := range all {
		if !gone[i] {
			t := all[i].CreatedAt
			keys = append(keys, newestKey{sec: t.Unix(), nsec: int32(t.Nanosecond()), i: int32(i)})
		}
	}
	// Unstable, but with the index as the last key no two keys are equal:
	// the order is the one a stable sort on the time alone gives.
	slices.SortFunc(keys, func(a, b newestKey) int {
		if c := cmp.Compare(b.sec, a.sec); c != 0 {
			return c
		}
		if c := cmp.Compare(b.nsec, a.nsec); c != 0 {
			return c
		}
		return cmp.Compare(a.i, b.i)
	})
	if len(keys) < len(all) {
		out := make([]RunSummary, len(keys))
		for k, key := range keys {
			out[k] = all[key.i]
		}
		return out
	}
	// Every run stays: all[k] = all[keys[k].i] for every k, one cycle of
	// the permutation at a time (a key whose i is -1 is in place).
	for start := range keys {
		if keys[start].i < 0 {
			continue
		}
		held := all[start]
		for k := start; ; {
			from := int(keys[k].i)
			keys[k].i = -1
			if from == start {
				all[k] = held
				break
			}
			all[k] = all[from]
			k = from
		}
	}
	return all
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
