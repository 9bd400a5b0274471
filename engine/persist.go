package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

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
)

func internalEvent(typ string) bool { return strings.HasPrefix(typ, "engine.") }

// doc is the persisted form of runState.
type doc struct {
	*runState
	Steps map[string]*stepState `json:"steps"`
	// Cold is spliced in by encode (after the other fields, unsorted and
	// not re-compacted by encoding/json: its cost must stay flat).
	Cold coldIndex `json:"-"`
}

// coldIndex maps finished root step ids to event seqs. It is written in
// declaration order without sorting (encoding/json sorts map keys, which
// dominates the cost of a long run's document).
type coldIndex struct {
	ids  []string
	seqs []int64
	m    map[string]int64 // when decoded
}

func (c coldIndex) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 2+len(c.ids)*16)
	b = append(b, '{')
	for i, id := range c.ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, id)
		b = append(b, ':')
		b = strconv.AppendInt(b, c.seqs[i], 10)
	}
	return append(b, '}'), nil
}

func (c *coldIndex) UnmarshalJSON(b []byte) error { return json.Unmarshal(b, &c.m) }

func (c *coldIndex) add(id string, seq int64) {
	c.ids = append(c.ids, id)
	c.seqs = append(c.seqs, seq)
}

// attemptPatch is the payload of an engine.attempt_patch event.
type attemptPatch struct {
	StepID  string `json:"stepId"`
	Attempt int    `json:"attempt"`
	Patch   []byte `json:"patch"` // base64 in JSON: a patch need not be UTF-8
}

// recordChanges writes an attempt's patch into the log (once) and returns
// the changes to keep with the attempt (without the patch).
func (t *txn) recordChanges(stepID string, attempt int, ch *Changes) *Changes {
	if ch == nil {
		return nil
	}
	c := *ch
	c.Stat = cleanText(c.Stat)
	c.PatchBytes, c.Patch = len(ch.Patch), nil
	if len(ch.Patch) > 0 {
		if _, err := t.emitBlob(evAttemptPatch, stepID, attemptPatch{StepID: stepID, Attempt: attempt, Patch: ch.Patch}); err != nil {
			c.Stat += " (the patch could not be recorded: " + err.Error() + ")"
		}
	}
	return &c
}

// emitBlob records an internal event whose payload is JSON text and
// returns its seq.
func (t *txn) emitBlob(typ EventType, stepID string, v any) (int64, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return 0, fmt.Errorf("encode %s: %w", typ, err)
	}
	t.emit(typ, stepID, map[string]any{"json": string(b)})
	return t.headSeq + int64(len(t.events)), nil
}

// encode writes the state document, first recording each newly finished
// root step in an engine.step_state event.
func (t *txn) encode() ([]byte, error) {
	st := t.st
	hot := make(map[string]*stepState, 8)
	var cold coldIndex
	for _, s := range t.rootScope().flow.Steps {
		ss, ok := st.Steps[s.ID]
		if !ok {
			continue
		}
		switch {
		case ss.coldSeq != 0:
			cold.add(s.ID, ss.coldSeq)
		case isTerminalStep(ss.Status):
			seq, err := t.emitBlob(evStepState, s.ID, ss)
			if err != nil {
				return nil, err
			}
			ss.coldSeq = seq
			cold.add(s.ID, seq)
		case !ss.pristine():
			hot[s.ID] = compactStep(ss)
		}
	}
	b, err := json.Marshal(doc{runState: st, Steps: hot})
	if err != nil {
		return nil, fmt.Errorf("encode run state: %w", err)
	}
	ci, _ := cold.MarshalJSON()
	out := make([]byte, 0, len(b)+len(ci)+10)
	out = append(out, b[:len(b)-1]...)
	out = append(out, `,"cold":`...)
	out = append(out, ci...)
	return append(out, '}'), nil
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

// decodeDoc reads the state document alone (finished steps not loaded).
func decodeDoc(runID string, b []byte) (*runState, map[string]int64, error) {
	var d struct {
		doc
		Cold coldIndex `json:"cold"`
	}
	d.runState = &runState{}
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, nil, fmt.Errorf("run %s: %w: state document: %v", runID, ErrCorrupt, err)
	}
	st := d.runState
	if st.Format != stateFormat {
		return nil, nil, fmt.Errorf("run %s: %w: state document format %q, want %q", runID, ErrCorrupt, st.Format, stateFormat)
	}
	st.Steps = d.Steps
	if st.Steps == nil {
		st.Steps = map[string]*stepState{}
	}
	return st, d.Cold.m, nil
}

// decodeRun reads a run: the document, then (when full) the finished root
// steps from their events, and the spec snapshot when this process has no
// compiled plan for it.
func (e *Engine) decodeRun(ctx context.Context, snap *store.Snapshot, full bool) (*runState, error) {
	st, cold, err := decodeDoc(snap.RunID, snap.State)
	if err != nil {
		return nil, err
	}
	want := map[int64]string{}
	if full {
		for id, seq := range cold {
			want[seq] = id
		}
	}
	e.mu.Lock()
	_, havePlan := e.plans[st.RevisionDigest]
	e.mu.Unlock()
	if !havePlan {
		want[st.SpecSeq] = ""
	}
	if len(want) == 0 {
		return st, nil
	}
	found, err := e.readBlobs(ctx, snap.RunID, snap.Head.Seq, want)
	if err != nil {
		return nil, err
	}
	for seq, id := range want {
		raw, ok := found[seq]
		if !ok {
			return nil, fmt.Errorf("run %s: %w: event %d (%s) is missing", snap.RunID, ErrCorrupt, seq, blobName(id))
		}
		if seq == st.SpecSeq && id == "" {
			st.Spec = raw
			continue
		}
		ss := &stepState{}
		if err := json.Unmarshal(raw, ss); err != nil {
			return nil, fmt.Errorf("run %s: %w: step %s state: %v", snap.RunID, ErrCorrupt, id, err)
		}
		if ss.Attempts == nil {
			ss.Attempts = []Attempt{}
		}
		ss.coldSeq = seq
		st.Steps[id] = ss
	}
	return st, nil
}

func blobName(id string) string {
	if id == "" {
		return "spec snapshot"
	}
	return "state of step " + id
}

// readBlobs reads the payloads of the internal events with the wanted
// seqs (one read from the smallest to the head).
func (e *Engine) readBlobs(ctx context.Context, runID string, head int64, want map[int64]string) (map[int64][]byte, error) {
	lo := head
	for seq := range want {
		lo = min(lo, seq)
	}
	if lo < 1 {
		return nil, fmt.Errorf("run %s: %w: event seq %d", runID, ErrCorrupt, lo)
	}
	evs, err := e.store.Events(ctx, runID, lo-1, 0)
	if err != nil {
		return nil, mapStoreErr(runID, err)
	}
	found := make(map[int64][]byte, len(want))
	for _, ev := range evs {
		if _, ok := want[ev.Seq]; !ok || !internalEvent(ev.Type) {
			continue
		}
		var d struct {
			Detail struct {
				JSON string `json:"json"`
			} `json:"detail"`
		}
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return nil, fmt.Errorf("run %s: %w: event %d: %v", runID, ErrCorrupt, ev.Seq, err)
		}
		found[ev.Seq] = []byte(d.Detail.JSON)
	}
	return found, nil
}
