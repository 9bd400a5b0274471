package engine

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/stratum-go/stratum/store"
)

// Reading a long run's record (docs/engine.md, "Cancel, audit, poll"):
// AuditStream hands the events and the steps to the caller one at a time,
// reading the log in pages, so that its memory does not depend on the
// run's length; Audit collects them into one report.

// auditPage is how many log records one read of an audit takes.
const auditPage = 1000

// AuditVisitor receives a run's record piece by piece. A nil function
// skips that part (and its reading); an error it returns stops the read
// and is returned.
type AuditVisitor struct {
	// Header is called first, with the report without events and steps.
	Header func(*AuditReport) error
	// Event is called for each event after AuditOptions.EventsAfter,
	// oldest first.
	Event func(Event) error
	// Step is called for each root step in declaration order (steps of a
	// subflow are in the run step's view).
	Step func(id string, v *StepView) error
}

// AuditOptions narrow what an audit reads.
type AuditOptions struct {
	// EventsAfter skips the events up to this seq (a cursor).
	EventsAfter int64
	// EventsLimit stops after this many events (0: no limit);
	// AuditReport.NextEventsAfter is then the cursor of the next page.
	EventsLimit int
	// Steps, when not nil, are the only root steps read.
	Steps []string
	// StepsFirst visits the steps before the events.
	StepsFirst bool
}

// AuditStream reads a run's record and passes its events and steps to v.
// The report it returns has everything else (status, input, spend,
// output, failure, carry, checkpoints); its Events and Steps are empty.
// Read-only, without the run lock: the store gives one acknowledged
// state, and events are read up to that state's head.
func (e *Engine) AuditStream(ctx context.Context, runID string, opts AuditOptions, v AuditVisitor) (_ *AuditReport, err error) {
	defer recoverLoad(&err)
	st, c, head, err := e.load(ctx, runID)
	if err != nil {
		return nil, err
	}
	t := newTxn(ctx, e, st, c)
	labels := make([]string, len(st.Checkpoints))
	for i, cp := range st.Checkpoints {
		labels[i] = cp.Label
	}
	rep := &AuditReport{Status: st.Status, RunID: st.ID, Flow: st.FlowName, RevisionDigest: st.RevisionDigest,
		WorkspaceRoot: st.WorkspaceRoot, CreatedAt: st.CreatedAt, UpdatedAt: st.UpdatedAt, Events: []Event{}, Steps: map[string]*StepView{},
		FlowSpent: st.FlowSpent, Ledger: t.ledgerView(), Output: st.Output, Failure: st.Failure, Carry: st.Carry,
		Rounds: st.Rounds, Checkpoints: labels, Input: st.Input}
	if opts.EventsAfter < 0 || opts.EventsAfter > head.Seq {
		return nil, &Error{Kind: ErrInvalidCursor, RunID: runID,
			Message: fmt.Sprintf("invalid event cursor %d: the run has %d events; use 0..%d", opts.EventsAfter, head.Seq, head.Seq)}
	}
	if v.Header != nil {
		if err := v.Header(rep); err != nil {
			return nil, err
		}
	}
	events := func() error {
		if v.Event == nil {
			return nil
		}
		next, err := e.streamEvents(ctx, runID, opts, head.Seq, v.Event)
		rep.NextEventsAfter = next
		return err
	}
	steps := func() error {
		if v.Step == nil {
			return nil
		}
		return t.streamSteps(head.Seq, opts.Steps, v.Step)
	}
	first, second := events, steps
	if opts.StepsFirst {
		first, second = steps, events
	}
	if err := first(); err != nil {
		return nil, err
	}
	if err := second(); err != nil {
		return nil, err
	}
	return rep, nil
}

// streamEvents passes the events after opts.EventsAfter to fn, a page at
// a time; it returns the cursor of the next page when opts.EventsLimit
// stopped it (0 when every event was read).
func (e *Engine) streamEvents(ctx context.Context, runID string, opts AuditOptions, head int64, fn func(Event) error) (int64, error) {
	sent := 0
	for after := opts.EventsAfter; after < head; {
		page, err := e.store.Events(ctx, runID, after, min(auditPage, int(head-after)))
		if err != nil {
			return 0, mapStoreErr(runID, err)
		}
		if len(page) == 0 {
			return 0, fmt.Errorf("run %s: %w: the log ends at event %d, before the head %d", runID, ErrCorrupt, after, head)
		}
		for _, raw := range page {
			after = raw.Seq
			ev, ok, err := toEvent(runID, raw)
			if err != nil {
				return 0, err
			}
			if !ok {
				continue
			}
			if opts.EventsLimit > 0 && sent == opts.EventsLimit {
				return ev.Seq - 1, nil
			}
			if err := fn(ev); err != nil {
				return 0, err
			}
			sent++
		}
	}
	return 0, nil
}

// toEvent is a log record as an audit event; ok is false for the
// engine's internal records.
func toEvent(runID string, raw store.Event) (Event, bool, error) {
	if internalEvent(raw.Type) {
		return Event{}, false, nil
	}
	var d struct {
		StepID string          `json:"stepId"`
		Detail json.RawMessage `json:"detail"`
	}
	if len(raw.Data) > 0 {
		if err := json.Unmarshal(raw.Data, &d); err != nil {
			return Event{}, false, fmt.Errorf("run %s: event %d: %w: %v", runID, raw.Seq, ErrCorrupt, err)
		}
	}
	return Event{Seq: raw.Seq, At: raw.At, Type: EventType(raw.Type), StepID: d.StepID, Detail: d.Detail, Hash: raw.Hash}, true, nil
}

// streamSteps passes the root steps (only those named in only, when not
// nil) to fn in declaration order. The finished ones are read in one
// pass over the log, each record decoded when reached and dropped once
// passed on; a record reached before its turn waits (records are written
// as steps finish, mostly in declaration order).
func (t *txn) streamSteps(head int64, only []string, fn func(string, *StepView) error) error {
	root := t.rootScope()
	steps := root.flow.Steps
	if only != nil {
		want := make(map[string]bool, len(only))
		for _, id := range only {
			want[id] = true
		}
		steps = steps[:0:0]
		for _, s := range root.flow.Steps {
			if want[s.ID] {
				steps = append(steps, s)
			}
		}
	}
	bySeq := map[int64]string{}
	for _, s := range steps {
		if root.steps[s.ID] == nil {
			if ref, ok := t.st.cold[s.ID]; ok {
				bySeq[ref.Seq] = s.ID
			}
		}
	}
	read := make(map[string]*stepState, 8)
	next := 0
	flush := func() error {
		for ; next < len(steps); next++ {
			s := steps[next]
			ss := root.steps[s.ID]
			if ss == nil {
				if _, cold := t.st.cold[s.ID]; cold {
					if ss = read[s.ID]; ss == nil {
						return nil // its record is further on
					}
					delete(read, s.ID)
				} else {
					ss = newStepState()
				}
			}
			fillStep(t.c.plan, s, ss)
			if err := fn(s.ID, ss.view()); err != nil {
				return err
			}
		}
		return nil
	}
	if err := flush(); err != nil {
		return err
	}
	for after := int64(0); after < head && next < len(steps); {
		page, err := t.e.store.Events(t.ctx, t.st.ID, after, min(auditPage, int(head-after)))
		if err != nil {
			return mapStoreErr(t.st.ID, err)
		}
		if len(page) == 0 {
			break
		}
		for _, raw := range page {
			after = raw.Seq
			id, ok := bySeq[raw.Seq]
			if !ok {
				continue
			}
			ss, err := t.e.stepRecord(t.ctx, t.st.ID, raw)
			if err != nil {
				return err
			}
			read[id] = ss
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if next < len(steps) {
		return fmt.Errorf("run %s: %w: the record of step %s is missing from the log", t.st.ID, ErrCorrupt, steps[next].ID)
	}
	return nil
}

// stepRecord decodes an engine.step_state record read from the log.
func (e *Engine) stepRecord(ctx context.Context, runID string, raw store.Event) (*stepState, error) {
	var d struct {
		Detail struct {
			JSON string `json:"json"`
		} `json:"detail"`
	}
	if raw.Type != string(evStepState) || json.Unmarshal(raw.Data, &d) != nil {
		return nil, fmt.Errorf("run %s: %w: event %d is not a step record", runID, ErrCorrupt, raw.Seq)
	}
	ss := &stepState{}
	if err := json.Unmarshal([]byte(d.Detail.JSON), ss); err != nil {
		return nil, fmt.Errorf("run %s: %w: step record %d: %v", runID, ErrCorrupt, raw.Seq, err)
	}
	if ss.Attempts == nil {
		ss.Attempts = []Attempt{}
	}
	if err := e.hydrateStep(ctx, runID, ss); err != nil {
		return nil, err
	}
	return ss, nil
}
