package engine

import (
	"context"
	"encoding/json"
	"fmt"
)

// How a fanout is persisted (docs/engine.md, "What is persisted"): the
// state document holds the fanout's live items and the recently settled
// ones; settled items move, fanoutChunkSize at a time, into
// engine.fanout_items records written once, and the array the items are
// drawn from into an engine.fanout_over record. An item's report thus
// rewrites the live part of its fanout, not every item, and a fanout of
// thousands of items costs per item what one of a hundred does. In
// memory a fanout always has all its items (hydrate reads them back).
const (
	evFanoutItems EventType = "engine.fanout_items"
	evFanoutOver  EventType = "engine.fanout_over"
)

// fanoutChunkSize is how many settled items one engine.fanout_items
// record holds.
const fanoutChunkSize = 16

// persistedFanout is fanoutState without its methods (the form encoding
// and decoding use).
type persistedFanout fanoutState

// MarshalJSON writes a fanout as the store keeps it: the items not yet in
// a record, and the array drawn from only when no record holds it.
func (f *fanoutState) MarshalJSON() ([]byte, error) {
	p := persistedFanout(*f)
	if f.OverSeq != 0 {
		p.Over = Value{}
	}
	if len(f.Chunks) > 0 || f.Gen0 != 0 {
		items := f.Items // read only: a fanout without a window is not given one here
		if f.win.ok {
			items = f.win.live
		}
		p.Items = make([]*itemState, 0, min(len(items), 2*fanoutChunkSize))
		for _, it := range items {
			if !it.chunked && !f.pristineItem(it) {
				p.Items = append(p.Items, it)
			}
		}
	}
	return json.Marshal(p)
}

// newItem is item i as a fanout creates it.
func (f *fanoutState) newItem(i int) *itemState {
	return &itemState{Index: i, Status: StepPending, Generation: f.Gen0 + int64(i), Epoch: f.ItemEpoch, Attempts: []Attempt{}}
}

// pristineItem reports an item exactly as newItem made it (its every field
// is checked: TestPristineItemCoversEveryField).
func (f *fanoutState) pristineItem(it *itemState) bool {
	return f.Gen0 != 0 && it.Status == StepPending && it.Generation == f.Gen0+int64(it.Index) && it.Epoch == f.ItemEpoch &&
		it.Stage == 0 && it.StageAttempts == 0 && len(it.Attempts) == 0 && it.DispatchToken == "" && it.AcceptedDispatchToken == "" &&
		it.Task == "" && !it.Prev.Present && !it.Output.Present && it.Failure == nil && !it.InFlight && it.Started == nil &&
		it.Interrupted == nil && it.PatchSeq == 0 && it.PatchBytes == 0 && !it.chunked
}

// UnmarshalJSON reads a fanout as the store keeps it; hydrate completes
// it.
func (f *fanoutState) UnmarshalJSON(b []byte) error {
	var p persistedFanout
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*f = fanoutState(p)
	return nil
}

// settledItem reports an item that will never change again: finished,
// held by no dispatcher, with no changes waiting to be merged.
func settledItem(it *itemState) bool {
	return isTerminalStep(it.Status) && !it.InFlight && it.PatchSeq == 0 && it.DispatchToken == ""
}

// persistFanouts writes the records of the fanouts among steps (subflows
// included): the array drawn from, once, and every full chunk of settled
// items.
func (t *txn) persistFanouts(prefix string, steps map[string]*stepState) error {
	for id, ss := range steps {
		if ss != nil && ss.Fanout != nil {
			if err := t.persistFanout(prefix+id, ss.Fanout); err != nil {
				return err
			}
		}
		if ss != nil && ss.Sub != nil {
			if err := t.persistFanouts(prefix+id+"/", ss.Sub.Steps); err != nil {
				return err
			}
		}
	}
	return nil
}

func (t *txn) persistFanout(stepID string, f *fanoutState) error {
	if f.OverSeq == 0 && f.Over.Present {
		seq, n, err := t.emitBlobLen(evFanoutOver, stepID, f.Over)
		if err != nil {
			return err
		}
		f.OverSeq = seq
		f.held += n
	}
	var settled []*itemState
	for _, it := range f.liveItems() {
		if settledItem(it) {
			settled = append(settled, it)
		}
	}
	if len(settled) >= fanoutChunkSize {
		defer f.dropChunked()
	}
	for len(settled) >= fanoutChunkSize {
		chunk := settled[:fanoutChunkSize]
		seq, n, err := t.emitBlobLen(evFanoutItems, stepID, chunk)
		if err != nil {
			return err
		}
		f.held += n
		for _, it := range chunk {
			it.chunked = true
		}
		f.Chunks = append(f.Chunks, seq)
		settled = settled[fanoutChunkSize:]
	}
	return nil
}

// hydrateSteps completes the fanouts among decoded steps (subflows
// included) from their records.
func (e *Engine) hydrateSteps(ctx context.Context, runID string, steps map[string]*stepState) error {
	for _, ss := range steps {
		if err := e.hydrateStep(ctx, runID, ss); err != nil {
			return err
		}
	}
	return nil
}

func (e *Engine) hydrateStep(ctx context.Context, runID string, ss *stepState) error {
	if ss == nil {
		return nil // a corrupt document: checkState says so
	}
	if ss.Fanout != nil {
		if err := e.hydrateFanout(ctx, runID, ss.Fanout); err != nil {
			return err
		}
	}
	if ss.Sub != nil {
		return e.hydrateSteps(ctx, runID, ss.Sub.Steps)
	}
	return nil
}

// hydrateFanout reads back a fanout's array and its settled items.
func (e *Engine) hydrateFanout(ctx context.Context, runID string, f *fanoutState) error {
	f.held = 0
	if f.OverSeq != 0 && !f.Over.Present {
		// Shared read-only between the states decoded from this record:
		// nothing changes a value in place.
		v, n, err := e.parsedBlob(ctx, runID, f.OverSeq, "fanout array", func(raw []byte) (any, error) {
			var over Value
			err := json.Unmarshal(raw, &over)
			return over, err
		})
		if err != nil {
			return err
		}
		f.Over = v.(Value)
		f.held += n
	}
	if len(f.Chunks) == 0 && f.Gen0 == 0 {
		return nil
	}
	chunks := make([][]itemState, len(f.Chunks))
	for i, seq := range f.Chunks {
		v, n, err := e.parsedBlob(ctx, runID, seq, "fanout items", func(raw []byte) (any, error) {
			var items []itemState
			err := json.Unmarshal(raw, &items)
			return items, err
		})
		if err != nil {
			return err
		}
		chunks[i] = v.([]itemState)
		f.held += n
	}
	total := -1      // the items are those held (the state's and the records')
	if f.Gen0 != 0 { // and those not yet started: one per element
		arr, ok := f.Over.Data.([]any)
		if !ok {
			return fmt.Errorf("run %s: %w: a fanout's array is not an array", runID, ErrCorrupt)
		}
		total = len(arr)
	}
	items, err := f.placeItems(chunks, total)
	if err != nil {
		return fmt.Errorf("run %s: %w: %v", runID, ErrCorrupt, err)
	}
	f.Items = items
	f.forgetWindow()
	return nil
}

// placeItems is the fanout's items in order: the state's own (f.Items),
// copies of the settled ones of chunks (each state has its own items;
// settled ones never change), and, when total is not -1, pristine items
// for the indexes up to total that neither holds. The copies share one
// allocation: a poll of a large fanout decodes it whole, and an
// allocation, a map entry and a sort per item were most of that.
func (f *fanoutState) placeItems(chunks [][]itemState, total int) ([]*itemState, error) {
	held := len(f.Items)
	for _, c := range chunks {
		held += len(c)
	}
	if total == -1 {
		total = held
	}
	if held > total {
		return nil, fmt.Errorf("the fanout holds %d items for %d elements", held, total)
	}
	items := make([]*itemState, total)
	place := func(it *itemState, where string) error {
		switch {
		case it == nil:
			return fmt.Errorf("a fanout item (%s) is null", where)
		case it.Index < 0 || it.Index >= total:
			return fmt.Errorf("fanout item %d (%s) is not one of its %d items", it.Index, where, total)
		case items[it.Index] != nil:
			return fmt.Errorf("fanout item %d (%s) repeats an item", it.Index, where)
		}
		items[it.Index] = it
		return nil
	}
	for _, it := range f.Items {
		if err := place(it, "in the state"); err != nil {
			return nil, err
		}
	}
	copies := make([]itemState, 0, total-len(f.Items)) // never grown: the pointers stay
	for _, c := range chunks {
		for _, shared := range c {
			copies = append(copies, shared)
			it := &copies[len(copies)-1]
			it.chunked = true
			if err := place(it, "in a record of settled items"); err != nil {
				return nil, err
			}
		}
	}
	for i, it := range items {
		if it == nil {
			if f.Gen0 == 0 {
				return nil, fmt.Errorf("fanout item %d is missing", i)
			}
			copies = append(copies, *f.newItem(i))
			items[i] = &copies[len(copies)-1]
		}
	}
	return items, nil
}

// parsedBlob returns the decoded form of an internal record, decoding it
// once per process while the record is cached.
// A payload that does not decode is corrupt (what names the record).
// It also returns the estimate of the decoded form's heap (decodedBytes,
// what a holder of it counts: runHeapEstimate).
func (e *Engine) parsedBlob(ctx context.Context, runID string, seq int64, what string, parse func([]byte) (any, error)) (any, int, error) {
	if v, n, ok := e.blobs.getParsed(runID, seq); ok {
		return v, n, nil
	}
	raw, err := e.blob(ctx, runID, seq)
	if err != nil {
		return nil, 0, err
	}
	v, err := parse(raw)
	if err != nil {
		return nil, 0, fmt.Errorf("run %s: %w: %s record %d: %v", runID, ErrCorrupt, what, seq, err)
	}
	heap := decodedBytes(raw)
	e.blobs.putParsed(runID, seq, v, heap)
	return v, heap, nil
}
