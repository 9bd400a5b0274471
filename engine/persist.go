package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/stratum-go/stratum/ir"
	"github.com/stratum-go/stratum/store"
)

// How a run is laid out in the store (see docs/engine.md, "What is
// persisted"):
//
//   - The state document holds the run header, the live root steps (not
//     finished; pristine pending steps are left out), carry, counters and
//     two small indexes: finished root step id → event seq, checkpoint
//     label → event seq. It never holds history, so its size — which is
//     what every update costs, since the store rewrites it — depends on
//     the live part of the run, not on how long it has been going.
//   - Immutable bulk goes into internal events, written once: the spec
//     snapshot (engine.spec), the final state of each finished root step
//     (engine.step_state), checkpoint snapshots (engine.checkpoint), the
//     changes of worktree fanout items until merged (engine.patch). Their
//     payload is a JSON string, so the store's canonical form (sorted keys)
//     cannot reorder outputs. Audit and Poll leave internal events out.
//   - A result is stored once, in the result event that accepted it: step
//     records and the completed event refer to it (see record.go).
//
// A process that last wrote a run keeps its decoded state (validated
// byte for byte against the stored document), so a step costs one small
// document and a few events. Another process rebuilds the finished steps
// from the log once.
const (
	evSpec       EventType = "engine.spec"
	evStepState  EventType = "engine.step_state"
	evCheckpoint EventType = "engine.checkpoint"
	// evPatch holds the changes of a succeeded worktree fanout item until
	// they are merged (see merge.go).
	evPatch EventType = "engine.patch"
	// evAttemptPatch holds the working-tree changes one attempt of a do
	// step made (driver-reported; see Changes).
	evAttemptPatch EventType = "engine.attempt_patch"
	// evColdIndex holds coldChunkSize refs of finished steps (see encode).
	evColdIndex EventType = "engine.cold_index"
	// evInput holds the run's input (written once, at plan).
	evInput EventType = "engine.input"
)

func internalEvent(typ string) bool { return strings.HasPrefix(typ, "engine.") }

// doc is the persisted form of runState. Input, when a record holds it
// (InputSeq), is left out (the field shadows runState's).
type doc struct {
	*runState
	Input *Value                `json:"input,omitempty"`
	Steps map[string]*stepState `json:"steps"`
}

// coldChunkSize is how many finished steps the state document indexes
// itself before their refs move into an engine.cold_index event: the
// document holds at most this many refs and one seq per chunk.
const coldChunkSize = 64

// coldRef locates a finished root step's final state (an engine.step_state
// event) and says its status, so that scheduling reads statuses without
// loading states.
type coldRef struct {
	ID     string     `json:"id"`
	Seq    int64      `json:"seq"`
	Status StepStatus `json:"status,omitempty"`
}

// emitBlob records an internal event whose payload is JSON text and
// returns its seq.
func (t *txn) emitBlob(typ EventType, stepID string, v any) (int64, error) {
	seq, _, err := t.emitBlobLen(typ, stepID, v)
	return seq, err
}

// emitBlobLen is emitBlob that also returns the estimate of the heap the
// payload's decoded form takes (decodedBytes).
func (t *txn) emitBlobLen(typ EventType, stepID string, v any) (int64, int, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return 0, 0, fmt.Errorf("encode %s: %w", typ, err)
	}
	return t.emitJSON(typ, stepID, b), decodedBytes(b), nil
}

// emitJSON records an internal event whose payload is the JSON text b and
// returns its seq. The payload is a string: the store's canonical form
// sorts object keys, and the key order of the values in it is theirs.
func (t *txn) emitJSON(typ EventType, stepID string, b []byte) int64 {
	t.emit(typ, stepID, map[string]any{"json": string(b)})
	return t.headSeq + int64(len(t.events))
}

// encode writes the state document. The steps that finished in this
// transition are written once, each into an engine.step_state event (in
// declaration order), and indexed; finished steps loaded from the log and
// left unchanged are dropped from memory (the log and the engine's blob
// cache have them). The document thus holds the live steps and a bounded
// index, whatever the run's length (docs/engine.md, "Cost").
func (t *txn) encode() ([]byte, error) {
	st := t.st
	if err := t.settleLoaded(); err != nil {
		return nil, err
	}
	hot := make(map[string]*stepState, 8)
	var finished []*ir.Step
	f := t.c.plan.Flow(st.FlowName)
	for id, ss := range st.Steps {
		switch {
		case ss.coldSeq != 0:
			delete(st.Steps, id)
		case isTerminalStep(ss.Status):
			if s := f.Step(id); s != nil {
				finished = append(finished, s)
			} else {
				hot[id] = compactStep(ss)
			}
		case ss.pristine():
			if _, indexed := st.cold[id]; indexed {
				hot[id] = ss // shadows a finished state in the index
			} else {
				delete(st.Steps, id)
			}
		default:
			hot[id] = compactStep(ss)
		}
	}
	sort.Slice(finished, func(i, j int) bool { return finished[i].Index < finished[j].Index })
	recorded := make([]*stepStateOf, len(finished))
	for i, s := range finished {
		recorded[i] = &stepStateOf{id: s.ID, ss: st.Steps[s.ID]}
	}
	if err := t.linkResults(recorded); err != nil {
		return nil, err
	}
	for _, s := range finished {
		ss := st.Steps[s.ID]
		b, err := encodeStepRecord(ss)
		if err != nil {
			return nil, fmt.Errorf("encode %s: %w", evStepState, err)
		}
		seq := t.emitJSON(evStepState, s.ID, b)
		if err := t.indexCold(coldRef{ID: s.ID, Seq: seq, Status: ss.Status}); err != nil {
			return nil, err
		}
		delete(st.Steps, s.ID)
	}
	// An index of the first format (a map without statuses, statuses
	// filled in when it was read) moves into the chunked index once.
	if len(st.LegacyCold) > 0 {
		ids := make([]string, 0, len(st.LegacyCold))
		for id := range st.LegacyCold {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		for _, id := range ids {
			ref, ok := st.cold[id]
			if !ok || ref.Seq != st.LegacyCold[id] {
				continue // replaced by a later ref
			}
			if err := t.indexCold(ref); err != nil {
				return nil, err
			}
		}
		st.LegacyCold = nil
	}
	if err := t.persistFanouts("", hot); err != nil {
		return nil, err
	}
	if st.InputSeq == 0 && st.Input.Present {
		seq, n, err := t.emitBlobLen(evInput, "", st.Input)
		if err != nil {
			return nil, err
		}
		st.InputSeq, st.inputBytes = seq, n
	}
	// A fresh map: a Go map keeps the room of every key it ever held, and
	// iterating it costs that room, so the steps deleted above would make
	// every later scan of the live steps cost the run's history.
	live := make(map[string]*stepState, len(hot))
	for id := range hot {
		live[id] = st.Steps[id]
	}
	st.Steps = live
	b, err := json.Marshal(st.doc(hot))
	if err != nil {
		return nil, fmt.Errorf("encode run state: %w", err)
	}
	return b, nil
}

// doc is the persisted form of a state whose document steps are steps.
func (st *runState) doc(steps map[string]*stepState) doc {
	d := doc{runState: st, Steps: steps}
	if st.InputSeq == 0 {
		d.Input = &st.Input
	}
	return d
}

// settleLoaded finds the finished steps read from the log in this
// transition that it changed: each is compared with the record it was read
// from and, when different, is live again (written anew by encode).
// Comparing, rather than trusting every writer to mark what it changes,
// means a change to a finished step can never be dropped as "unchanged".
func (t *txn) settleLoaded() error {
	for id, ss := range t.st.Steps {
		if ss.coldSeq == 0 {
			continue
		}
		was, err := t.e.blob(t.ctx, t.st.ID, ss.coldSeq)
		if err != nil {
			return err
		}
		same, err := sameAsRecord(ss, was)
		if err != nil {
			return fmt.Errorf("encode state of step %s: %w", id, err)
		}
		if !same {
			ss.touch()
		}
	}
	return nil
}

// sameAsRecord reports whether ss is the state its record was holds, in
// either form a record has (results referred to, or the first form: every
// value in full).
func sameAsRecord(ss *stepState, was []byte) (bool, error) {
	now, err := encodeStepRecord(ss)
	if err != nil || bytes.Equal(was, now) {
		return err == nil, err
	}
	if now, err = json.Marshal(ss); err != nil {
		return false, err
	}
	return bytes.Equal(was, now), nil
}

// indexCold adds a finished step's ref to the index, moving a full chunk
// of recent refs into an engine.cold_index event.
func (t *txn) indexCold(ref coldRef) error {
	st := t.st
	st.ColdRecent = append(st.ColdRecent, ref)
	st.setCold(ref)
	if len(st.ColdRecent) >= coldChunkSize {
		cseq, err := t.emitBlob(evColdIndex, "", st.ColdRecent)
		if err != nil {
			return err
		}
		st.ColdChunks = append(st.ColdChunks, cseq)
		st.ColdRecent = nil
	}
	return nil
}

// setCold records a finished step's ref in the in-memory index.
func (st *runState) setCold(ref coldRef) {
	if st.cold == nil {
		st.cold = map[string]coldRef{}
	}
	if was, ok := st.cold[ref.ID]; ok && countsDone(was.Status) {
		st.coldDone--
	}
	if countsDone(ref.Status) {
		st.coldDone++
	}
	st.cold[ref.ID] = ref
}

// compactStep leaves pristine child steps out of a run step's subflow.
func compactStep(s *stepState) *stepState {
	if s.Sub == nil {
		return s
	}
	c := *s
	sub := *s.Sub
	sub.Steps = make(map[string]*stepState, len(s.Sub.Steps))
	for id, cs := range s.Sub.Steps {
		if !cs.pristine() {
			sub.Steps[id] = cs
		}
	}
	c.Sub = &sub
	return &c
}

// decodeDoc reads the state document alone (the cold index not built).
func decodeDoc(runID string, b []byte) (*runState, error) {
	d := doc{runState: &runState{}}
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("run %s: %w: state document: %v", runID, ErrCorrupt, err)
	}
	st := d.runState
	if d.Input != nil {
		st.Input = *d.Input
	}
	switch st.Format {
	case stateFormat:
	case stateFormatV1:
		st.Format = stateFormat // its next update writes records with refs
	default:
		return nil, fmt.Errorf("run %s: %w: state document format %q, want %q (a later release of stratum may have written it)", runID, ErrCorrupt, st.Format, stateFormat)
	}
	st.Steps = d.Steps
	if st.Steps == nil {
		st.Steps = map[string]*stepState{}
	}
	return st, nil
}

// decodeRun reads a run: the document, its cold index (chunks read once
// per process and cached: they never change) and, when this process has
// no compiled plan for it, the spec snapshot, which it compiles (into
// st.plan and the plan cache) while it reads the rest. Finished steps are loaded
// when the run's logic reads them (scope.peek), so reading a long run
// costs its live part and its index, not its history.
func (e *Engine) decodeRun(ctx context.Context, snap *store.Snapshot) (*runState, error) {
	return e.decodeRunState(ctx, snap, true)
}

// decodeRunState is decodeRun that compiles the spec snapshot (when this
// process has not) only if compile is set: a reader of the record needs
// no more than its outline (see loadOutline).
func (e *Engine) decodeRunState(ctx context.Context, snap *store.Snapshot, compile bool) (*runState, error) {
	st, err := decodeDoc(snap.RunID, snap.State)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	_, havePlan := e.plans[st.RevisionDigest]
	e.mu.Unlock()
	var compiling chan planResult
	if !havePlan && compile {
		raw, err := e.blob(ctx, snap.RunID, st.SpecSeq)
		if err != nil {
			return nil, err
		}
		st.Spec = raw
		// A large spec takes longer to compile than the rest of the
		// state takes to read (docs/engine.md, "Cost"): both at once.
		compiling = make(chan planResult, 1)
		go func(runID, digest string) {
			c, err := e.compileSnapshot(runID, digest, raw)
			compiling <- planResult{c, err}
		}(st.ID, st.RevisionDigest)
	}
	if err := e.decodeRest(ctx, snap, st); err != nil {
		if compiling != nil {
			<-compiling
		}
		return nil, err
	}
	if compiling != nil {
		r := <-compiling
		if r.err != nil {
			return nil, r.err
		}
		st.plan = r.c
	}
	return st, nil
}

// planResult is a plan compiled on another goroutine, or why it could not
// be.
type planResult struct {
	c   *compiled
	err error
}

// decodeRest reads what a decoded state refers to: the cold index, the
// steps' parts held in records, the input.
func (e *Engine) decodeRest(ctx context.Context, snap *store.Snapshot, st *runState) error {
	if err := e.buildCold(ctx, snap.RunID, st); err != nil {
		return err
	}
	if err := e.hydrateSteps(ctx, snap.RunID, st.Steps); err != nil {
		return err
	}
	if st.InputSeq != 0 { // shared read-only, as a fanout's array
		v, n, err := e.parsedBlob(ctx, snap.RunID, st.InputSeq, "input", func(raw []byte) (any, error) {
			var in Value
			err := json.Unmarshal(raw, &in)
			return in, err
		})
		if err != nil {
			return err
		}
		st.Input, st.inputBytes = v.(Value), n
	}
	return nil
}

// buildCold builds a decoded state's cold index: the chunks in order,
// then the recent refs (a later ref of a step replaces an earlier one),
// then the index of the first format (a map, statuses unknown).
func (e *Engine) buildCold(ctx context.Context, runID string, st *runState) error {
	st.cold = make(map[string]coldRef, len(st.ColdChunks)*coldChunkSize+len(st.ColdRecent)+len(st.LegacyCold))
	for id, seq := range st.LegacyCold {
		st.cold[id] = coldRef{ID: id, Seq: seq}
	}
	for _, seq := range st.ColdChunks {
		refs, err := e.coldChunk(ctx, runID, seq)
		if err != nil {
			return err
		}
		for _, r := range refs {
			st.cold[r.ID] = r
		}
	}
	for _, r := range st.ColdRecent {
		st.cold[r.ID] = r
	}
	st.coldDone = 0
	for id, r := range st.cold {
		if r.Status == "" { // an index of the first format: no statuses
			ss, err := e.coldState(ctx, runID, r)
			if err != nil {
				return err
			}
			r.Status = ss.Status
			st.cold[id] = r
		}
		if countsDone(r.Status) {
			st.coldDone++
		}
	}
	return nil
}

// coldChunk reads one engine.cold_index event.
func (e *Engine) coldChunk(ctx context.Context, runID string, seq int64) ([]coldRef, error) {
	raw, err := e.blob(ctx, runID, seq)
	if err != nil {
		return nil, err
	}
	if refs, ok := parseColdRefs(raw); ok {
		return refs, nil
	}
	var refs []coldRef
	if err := json.Unmarshal(raw, &refs); err != nil {
		return nil, fmt.Errorf("run %s: %w: cold index event %d: %v", runID, ErrCorrupt, seq, err)
	}
	return refs, nil
}

// coldState reads a finished step's final state.
func (e *Engine) coldState(ctx context.Context, runID string, ref coldRef) (*stepState, error) {
	raw, err := e.blob(ctx, runID, ref.Seq)
	if err != nil {
		return nil, err
	}
	ss, err := decodeStepRecord(runID, fmt.Sprintf("state of step %s (event %d)", ref.ID, ref.Seq), raw, e.storeResolver(ctx, runID))
	if err != nil {
		return nil, err
	}
	if ss.Attempts == nil {
		ss.Attempts = []Attempt{}
	}
	if err := e.hydrateStep(ctx, runID, ss); err != nil {
		return nil, err
	}
	ss.coldSeq = ref.Seq
	return ss, nil
}

// blob returns the payload of an internal event (its JSON text), from the
// engine's cache (blobs never change) or the store (by seq: the cost does
// not depend on the run's length).
func (e *Engine) blob(ctx context.Context, runID string, seq int64) ([]byte, error) {
	if raw, ok := e.blobs.get(runID, seq); ok {
		return raw, nil
	}
	ev, err := e.store.Event(ctx, runID, seq)
	if err != nil {
		return nil, mapStoreErr(runID, fmt.Errorf("internal event %d: %w", seq, err))
	}
	if !internalEvent(ev.Type) {
		return nil, fmt.Errorf("run %s: %w: event %d is %s, not an internal record", runID, ErrCorrupt, seq, ev.Type)
	}
	raw, err := blobPayload(ev.Data)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w: event %d: %v", runID, ErrCorrupt, seq, err)
	}
	e.blobs.put(runID, seq, raw)
	return raw, nil
}

// readBlobs reads the payloads of several internal events by seq.
func (e *Engine) readBlobs(ctx context.Context, runID string, _ int64, want map[int64]string) (map[int64][]byte, error) {
	found := make(map[int64][]byte, len(want))
	for seq := range want {
		raw, err := e.blob(ctx, runID, seq)
		if err != nil {
			return nil, err
		}
		found[seq] = raw
	}
	return found, nil
}

// attemptPatch is the payload of an engine.attempt_patch event.
type attemptPatch struct {
	StepID  string `json:"stepId"`
	Attempt int    `json:"attempt"`
	Patch   []byte `json:"patch"` // base64 in JSON: a patch need not be UTF-8
}

// recordChanges writes an attempt's patch into the log (once) and returns
// the changes to keep with the attempt (without the patch).
func (t *txn) recordChanges(st *stepState, stepID string, attempt int, ch *Changes) *Changes {
	if ch == nil {
		return nil
	}
	c := *ch
	c.Stat = cleanText(c.Stat)
	c.Patch = nil
	switch {
	case len(ch.Patch) > 0:
		c.PatchBytes, c.PatchOmitted = len(ch.Patch), false
		seq, err := t.emitBlob(evAttemptPatch, stepID, attemptPatch{StepID: stepID, Attempt: attempt, Patch: ch.Patch})
		if err != nil {
			c.Stat += " (the patch could not be recorded: " + err.Error() + ")"
			break
		}
		if st.PatchSeqs == nil {
			st.PatchSeqs = map[int]int64{}
		}
		st.PatchSeqs[attempt] = seq
	case !ch.PatchOmitted:
		c.PatchBytes = 0
	}
	return &c
}
