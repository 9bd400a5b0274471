package engine

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/stratum-go/stratum/ir"
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
	// StepsAfter skips the root steps (of those Steps selects, in
	// declaration order) up to and including this one: the cursor of the
	// previous page. It must name one of them.
	StepsAfter string
	// StepsLimit stops after this many steps (0: no limit);
	// AuditReport.NextStepsAfter is then the cursor of the next page.
	StepsLimit int
}

// AuditStream reads a run's record and passes its events and steps to v.
// The report it returns has everything else (status, input, spend,
// output, failure, carry, checkpoints); its Events and Steps are empty.
// Read-only, without the run lock: the store gives one acknowledged
// state, and events are read up to that state's head.
func (e *Engine) AuditStream(ctx context.Context, runID string, opts AuditOptions, v AuditVisitor) (*AuditReport, error) {
	st, outline, head, err := e.loadOutline(ctx, runID)
	if err != nil {
		return nil, err
	}
	a := &auditRead{ctx: ctx, e: e, st: st, outline: outline, flow: outline.EntryFlow()}
	labels := make([]string, len(st.Checkpoints))
	for i, cp := range st.Checkpoints {
		labels[i] = cp.Label
	}
	rep := &AuditReport{Status: st.Status, RunID: st.ID, Flow: st.FlowName, RevisionDigest: st.RevisionDigest,
		WorkspaceRoot: st.WorkspaceRoot, CreatedAt: st.CreatedAt, UpdatedAt: st.UpdatedAt, Events: []Event{}, Steps: map[string]*StepView{},
		FlowSpent: st.FlowSpent, Ledger: ledgerViewOf(st.FlowSpent, a.flow.Budget), Output: st.Output, Failure: st.Failure, Carry: st.Carry,
		Rounds: st.Rounds, Checkpoints: labels, Input: st.Input, Outline: outline}
	if opts.EventsAfter < 0 || opts.EventsAfter > head.Seq {
		return nil, &Error{Kind: ErrInvalidCursor, RunID: runID,
			Message: fmt.Sprintf("invalid event cursor %d: the run has %d events; use 0..%d", opts.EventsAfter, head.Seq, head.Seq)}
	}
	if v.Header != nil {
		if err := v.Header(rep); err != nil {
			return nil, err
		}
	}
	var steps []ir.StepOutline
	records := &stepRecords{}
	if v.Step != nil {
		if steps, err = a.auditSteps(opts.Steps); err != nil {
			return nil, err
		}
		if steps, rep.NextStepsAfter, err = a.stepsPage(steps, opts); err != nil {
			return nil, err
		}
		records = a.stepRecordSeqs(steps)
		// The audit's own state (not shared: load decodes it afresh)
		// needs no more of the index than records holds; let the index
		// go (about 2 MB for 10,000 steps).
		st.cold = nil
	}
	if v.Event != nil {
		next, err := e.streamEvents(ctx, runID, opts, head.Seq, v.Event, records)
		if err != nil {
			return nil, err
		}
		rep.NextEventsAfter = next
	}
	if v.Step != nil {
		if err := a.streamSteps(head.Seq, steps, records, v.Step); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// auditRead is one audit's reading of a run: its state, and the outline
// of its plan (see loadOutline), not the plan.
type auditRead struct {
	ctx     context.Context
	e       *Engine
	st      *runState
	outline *ir.Outline
	flow    *ir.FlowOutline // the run's entry flow
}

// stepRecords are the log records an audit's steps pass needs, by seq;
// the events pass, which reads them first, keeps their data (up to
// maxKeptRecords bytes in all) so that the steps pass reads again only
// the pages of those it could not keep.
type stepRecords struct {
	// records are the finished steps' records, by seq (slices, not maps:
	// an audit of 10,000 steps holds 10,000 of them), and steps their
	// ids, sorted; neither changes once made, and the goroutines reading
	// pages share them.
	records []stepRecordAt
	steps   []string
	// kept holds the payloads of the records the events pass read (the
	// record's JSON, without the event around it), until the steps pass
	// decodes them; results holds the logged results (detail.result) of
	// the steps' result events, which their records refer to (see
	// record.go). Both are in the order of the log (pages are merged in
	// order), so slices searched by seq. The goroutine calling the
	// visitor appends to them in the events pass; the one decoding
	// records consumes kept in the steps pass, which starts after the
	// events pass ends. size, the bytes they hold, is shared by the
	// goroutines reading pages.
	kept    []keptData
	results []keptData
	size    atomic.Int64
}

// stepRecordAt is where a finished step's record is in the log.
type stepRecordAt struct {
	seq  int64
	step string
}

// maxKeptRecords bounds the record data an audit keeps between its two
// passes; beyond it the steps pass re-reads the log where it must, so an
// audit's memory stays bounded whatever the run's length.
var maxKeptRecords = 16 << 20 // a variable for tests

// pageKeep is what the steps pass will want of one page of the log,
// taken by the goroutine that read the page.
type pageKeep struct {
	payloads, results []keptData
}

type keptData struct {
	seq  int64
	data []byte
}

// keepOf takes from a page the payloads of the steps' records and the
// logged results they refer to, while there is room. A record or result
// that is not what it should be is not kept: the steps pass reads it
// again and says what is wrong.
func (r *stepRecords) keepOf(runID string, page []store.Event) (k pageKeep) {
	if len(r.records) == 0 || len(page) == 0 {
		return k
	}
	next, _ := slices.BinarySearchFunc(r.records, page[0].Seq, func(a stepRecordAt, seq int64) int { return cmp.Compare(a.seq, seq) })
	for _, raw := range page {
		switch raw.Type {
		case string(evStepState):
			for next < len(r.records) && r.records[next].seq < raw.Seq {
				next++
			}
			if next == len(r.records) || r.records[next].seq != raw.Seq || !r.room(len(raw.Data)) {
				continue
			}
			if payload, err := blobPayload(raw.Data); err == nil { // a new slice, not the page's
				k.payloads = append(k.payloads, keptData{raw.Seq, payload})
			}
		case string(EventResult):
			stepID, _, err := eventData(raw.Data)
			if _, found := slices.BinarySearch(r.steps, stepID); err != nil || !found || !r.room(len(raw.Data)) {
				continue
			}
			if logged, err := resultOf(runID, raw); err == nil {
				k.results = append(k.results, keptData{raw.Seq, bytes.Clone(logged)}) // not the page it was read with
			}
		}
	}
	return k
}

// room reserves n bytes of the budget, if there are n left.
func (r *stepRecords) room(n int) bool {
	if r.size.Add(int64(n)) > int64(maxKeptRecords) {
		r.size.Add(-int64(n))
		return false
	}
	return true
}

// merge adds what was taken from the next page of the log.
func (r *stepRecords) merge(k pageKeep) {
	r.kept = append(r.kept, k.payloads...)
	r.results = append(r.results, k.results...)
}

// keptAt is the kept data of event seq (kept is in seq order).
func keptAt(kept []keptData, seq int64) ([]byte, bool) {
	i, ok := slices.BinarySearchFunc(kept, seq, func(k keptData, seq int64) int { return cmp.Compare(k.seq, seq) })
	if !ok {
		return nil, false
	}
	return kept[i].data, true
}

// resolver gives the values the steps' records refer to: from the result
// events the events pass kept, else from the log.
func (r *stepRecords) resolver(ctx context.Context, e *Engine, runID string) refResolver {
	fromStore := e.storeResolver(ctx, runID)
	return func(ref *valueRef) (Value, error) {
		logged, ok := keptAt(r.results, ref.Seq)
		if !ok {
			return fromStore(ref)
		}
		return refValue(runID, ref, logged)
	}
}

// streamEvents passes the events after opts.EventsAfter to fn, a page at
// a time; it returns the cursor of the next page when opts.EventsLimit
// stopped it (0 when every event was read). The next pages are read and
// checked by the store, and what the steps pass wants is taken from them,
// on other goroutines while this one passes a page on, so that the work
// is spread over two cores (docs/engine.md, "Cancel, audit, poll"). Pages
// have the store's fixed length up to the head, so where each starts is
// known before the one before it is read.
func (e *Engine) streamEvents(parent context.Context, runID string, opts AuditOptions, head int64, fn func(Event) error, records *stepRecords) (int64, error) {
	ctx, cancel := context.WithCancel(parent)
	var pending []<-chan eventPage // in the order of the log
	defer func() {
		cancel()
		for _, ch := range pending {
			<-ch // the store is not read after the audit returns
		}
	}()
	nextRead := opts.EventsAfter
	readAhead := func(sent int) {
		for len(pending) < pagesAhead && nextRead < head && (opts.EventsLimit == 0 || sent+len(pending)*auditPage <= opts.EventsLimit) {
			after, n := nextRead, min(auditPage, int(head-nextRead))
			nextRead += int64(n)
			ch := make(chan eventPage, 1)
			go func() {
				page, err := e.store.Events(ctx, runID, after, n)
				var k pageKeep
				if err == nil {
					k = records.keepOf(runID, page)
				}
				ch <- eventPage{page, k, err}
			}()
			pending = append(pending, ch)
		}
	}
	sent := 0
	for after := opts.EventsAfter; after < head; {
		if err := parent.Err(); err != nil {
			return 0, err // even if the pages were read already
		}
		readAhead(sent)
		got := <-pending[0]
		pending = pending[1:]
		if got.err != nil {
			return 0, mapStoreErr(runID, got.err)
		}
		page := got.events
		if len(page) == 0 || page[0].Seq != after+1 {
			return 0, fmt.Errorf("run %s: %w: the log ends at event %d, before the head %d", runID, ErrCorrupt, after, head)
		}
		records.merge(got.keep)
		readAhead(sent + len(page)) // as if this page's events were all sent

		for _, raw := range page {
			after = raw.Seq
			ev, ok, err := e.toEvent(ctx, runID, raw)
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

// pagesAhead is how many pages of the log an audit reads ahead.
const pagesAhead = 2

// eventPage is a page of the log read ahead, or why it could not be.
type eventPage struct {
	events []store.Event
	keep   pageKeep
	err    error
}

// toEvent is a log record as an audit event; ok is false for the
// engine's internal records.
// A completed event that refers to the result holding the flow's output
// is shown with the output (see record.go).
func (e *Engine) toEvent(ctx context.Context, runID string, raw store.Event) (Event, bool, error) {
	if internalEvent(raw.Type) {
		return Event{}, false, nil
	}
	var d struct {
		StepID string
		Detail json.RawMessage
	}
	var err error
	if d.StepID, d.Detail, err = eventData(raw.Data); err != nil {
		return Event{}, false, fmt.Errorf("run %s: event %d: %w: %v", runID, raw.Seq, ErrCorrupt, err)
	}
	if raw.Type == string(EventCompleted) {
		detail, err := completedOutput(d.Detail, func(seq int64) ([]byte, error) { return e.loggedResult(ctx, runID, seq) })
		if err != nil {
			return Event{}, false, fmt.Errorf("run %s: event %d: %w", runID, raw.Seq, err)
		}
		d.Detail = detail
	}
	return Event{Seq: raw.Seq, At: raw.At, Type: EventType(raw.Type), StepID: d.StepID, Detail: d.Detail, Hash: raw.Hash}, true, nil
}

// auditSteps are the root steps an audit reads (only those named in
// only, when not nil), in declaration order; a name that is not a step of
// the run's entry flow is refused (ErrInvalidStep), never ignored.
func (a *auditRead) auditSteps(only []string) ([]ir.StepOutline, error) {
	flow := a.flow
	if only == nil {
		return flow.Steps, nil
	}
	want := make(map[string]bool, len(only))
	for _, id := range only {
		want[id] = true
	}
	var out []ir.StepOutline
	for _, s := range flow.Steps {
		if want[s.ID] {
			out = append(out, s)
			delete(want, s.ID)
		}
	}
	for _, id := range only { // the first of those named that are not steps
		if want[id] {
			return nil, &Error{Kind: ErrInvalidStep, RunID: a.st.ID, StepID: id,
				Message: fmt.Sprintf("flow %s has no step %q; its steps are listed in the run's plan", flow.Name, id)}
		}
	}
	return out, nil
}

// stepsPage is the page of steps opts.StepsAfter and opts.StepsLimit
// select, and the cursor of the next page ("" when none follows). A
// cursor that is not one of steps is refused (ErrInvalidCursor), never
// read as "from the start".
func (a *auditRead) stepsPage(steps []ir.StepOutline, opts AuditOptions) ([]ir.StepOutline, string, error) {
	if opts.StepsAfter != "" {
		at := slices.IndexFunc(steps, func(s ir.StepOutline) bool { return s.ID == opts.StepsAfter })
		if at < 0 {
			return nil, "", &Error{Kind: ErrInvalidCursor, RunID: a.st.ID,
				Message: fmt.Sprintf("invalid step cursor %q: not one of the steps this audit reads; pass the nextStepsAfter of the previous page", opts.StepsAfter)}
		}
		steps = steps[at+1:]
	}
	if opts.StepsLimit > 0 && len(steps) > opts.StepsLimit {
		return steps[:opts.StepsLimit], steps[opts.StepsLimit-1].ID, nil
	}
	return steps, "", nil
}

// stepRecordSeqs finds the records of the finished steps among steps.
func (a *auditRead) stepRecordSeqs(steps []ir.StepOutline) *stepRecords {
	r := &stepRecords{records: make([]stepRecordAt, 0, len(steps)), steps: make([]string, 0, len(steps))}
	for _, s := range steps {
		if a.st.Steps[s.ID] == nil {
			if ref, ok := a.st.cold[s.ID]; ok {
				r.records = append(r.records, stepRecordAt{ref.Seq, s.ID})
				r.steps = append(r.steps, s.ID)
			}
		}
	}
	slices.SortFunc(r.records, func(a, b stepRecordAt) int { return cmp.Compare(a.seq, b.seq) })
	slices.Sort(r.steps)
	return r
}

// streamSteps passes steps to fn in declaration order. The finished ones
// come from their records, in the order of the log: those the events
// pass kept, and pages read from the first record it did not, so that a
// few steps cost a few pages. Each record is decoded when reached and
// dropped once passed on; one reached before its turn waits (records are
// written as steps finish, mostly in declaration order). The records are
// decoded by a second goroutine a few ahead of the one passing steps on,
// so that the two halves of the work overlap (docs/engine.md, "Cancel,
// audit, poll").
func (a *auditRead) streamSteps(head int64, steps []ir.StepOutline, records *stepRecords, fn func(string, *StepView) error) error {
	read := make(map[string]*stepState, 8)
	next := 0
	flush := func() error {
		for ; next < len(steps); next++ {
			s := steps[next]
			ss := a.st.Steps[s.ID]
			if ss == nil {
				if _, cold := slices.BinarySearch(records.steps, s.ID); cold {
					if ss = read[s.ID]; ss == nil {
						return nil // its record is further on
					}
					delete(read, s.ID)
				} else {
					ss = newStepState()
				}
			}
			fillStep(a.outline, s, ss)
			if err := fn(s.ID, ss.view()); err != nil {
				return err
			}
		}
		return nil
	}
	if err := flush(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(a.ctx)
	decoded := make(chan decodedRecord, decodeAhead)
	go a.decodeRecords(ctx, head, records, decoded)
	defer func() {
		cancel()
		for range decoded { // the store is not read after the audit returns
		}
	}()
	for d := range decoded {
		if d.err != nil {
			return d.err
		}
		read[d.step] = d.state
		if err := flush(); err != nil {
			return err
		}
	}
	if err := a.ctx.Err(); err != nil {
		return err // the decoding stopped for it
	}
	if next < len(steps) {
		return fmt.Errorf("run %s: %w: the record of step %s is missing from the log", a.st.ID, ErrCorrupt, steps[next].ID)
	}
	return nil
}

// decodeAhead is how many decoded step records may wait for their turn.
const decodeAhead = 64

// decodedRecord is a finished step's state decoded from its record, or
// why it could not be.
type decodedRecord struct {
	step  string
	state *stepState
	err   error
}

// decodeRecords decodes the records, in the order of the log, into out,
// which it closes; it stops at the first error (sent) or when ctx ends.
func (a *auditRead) decodeRecords(ctx context.Context, head int64, records *stepRecords, out chan<- decodedRecord) {
	defer close(out)
	resolve := records.resolver(ctx, a.e, a.st.ID)
	var page []store.Event // the last page read (consecutive seqs)
	inPage := func(seq int64) bool { return len(page) > 0 && page[0].Seq <= seq && seq <= page[len(page)-1].Seq }
	for _, at := range records.records {
		seq := at.seq
		var ss *stepState
		var err error
		for len(records.kept) > 0 && records.kept[0].seq < seq {
			records.kept = records.kept[1:]
		}
		if len(records.kept) > 0 && records.kept[0].seq == seq {
			payload := records.kept[0].data
			records.kept[0].data = nil // decoded once: its memory can go
			ss, err = a.e.stepRecordPayload(ctx, a.st.ID, seq, payload, resolve)
		} else {
			if !inPage(seq) {
				if page, err = a.e.store.Events(ctx, a.st.ID, seq-1, min(auditPage, int(head-seq+1))); err != nil {
					err = mapStoreErr(a.st.ID, err)
				} else if !inPage(seq) {
					err = fmt.Errorf("run %s: %w: the log ends before event %d, the record of step %s", a.st.ID, ErrCorrupt, seq, at.step)
				}
			}
			if err == nil {
				ss, err = a.e.stepRecord(ctx, a.st.ID, page[seq-page[0].Seq], resolve)
			}
		}
		select {
		case out <- decodedRecord{at.step, ss, err}:
		case <-ctx.Done():
			return
		}
		if err != nil {
			return
		}
	}
}

// stepRecord decodes an engine.step_state record read from the log.
// resolve gives the values its refs stand for.
func (e *Engine) stepRecord(ctx context.Context, runID string, raw store.Event, resolve refResolver) (*stepState, error) {
	payload, err := blobPayload(raw.Data)
	if raw.Type != string(evStepState) || err != nil {
		return nil, fmt.Errorf("run %s: %w: event %d is not a step record", runID, ErrCorrupt, raw.Seq)
	}
	return e.stepRecordPayload(ctx, runID, raw.Seq, payload, resolve)
}

// stepRecordPayload decodes the payload of step record seq.
func (e *Engine) stepRecordPayload(ctx context.Context, runID string, seq int64, payload []byte, resolve refResolver) (*stepState, error) {
	ss, err := decodeStepRecord(runID, fmt.Sprintf("step record %d", seq), payload, resolve)
	if err != nil {
		return nil, err
	}
	if ss.Attempts == nil {
		ss.Attempts = []Attempt{}
	}
	if err := e.hydrateStep(ctx, runID, ss); err != nil {
		return nil, err
	}
	return ss, nil
}
