package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stratum-go/stratum/expr"
	"github.com/stratum-go/stratum/store"
)

// seqIDs is a deterministic id source: valid UUID-shaped ids.
type seqIDs struct {
	mu sync.Mutex
	n  int
}

func (s *seqIDs) next() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	return fmt.Sprintf("00000000-0000-4000-8000-%012d", s.n)
}

// fakeClock advances one millisecond per reading.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Millisecond)
	return c.t
}

type harness struct {
	t     *testing.T
	ctx   context.Context
	root  string
	store store.Store
	// files is the file store of a harness made by newFileHarness (tests
	// of crashes, processes and locks), nil on the memory store.
	files *store.FileStore
	e     *Engine
	ws    string
}

// newHarness is an engine over the in-memory store: the scenario tests
// exercise decisions, not fsync (the store contract suite holds the two
// stores to the same behaviour).
func newHarness(t *testing.T, opts Options) *harness {
	t.Helper()
	return newHarnessOn(t, opts, store.NewMemory(), nil)
}

// newFileHarness is an engine over a file store, for the tests whose
// subject is files, processes or the run lock.
func newFileHarness(t *testing.T, opts Options) *harness {
	t.Helper()
	fs, err := store.NewFileStore(filepath.Join(t.TempDir(), "flows"), nil)
	if err != nil {
		t.Fatal(err)
	}
	return newHarnessOn(t, opts, fs, fs)
}

func newHarnessOn(t *testing.T, opts Options, fs store.Store, files *store.FileStore) *harness {
	t.Helper()
	root := t.TempDir()
	ws := filepath.Join(root, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	ids := &seqIDs{}
	clock := &fakeClock{t: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
	if opts.NewID == nil {
		opts.NewID = ids.next
	}
	if opts.Now == nil {
		opts.Now = clock.now
	}
	if opts.Workspace.Default == "" {
		opts.Workspace.Default = ws
	}
	opts = withExecutors(opts, t.TempDir())
	e := New(fs, opts)
	e.verifyWrites = true
	t.Cleanup(e.Close)
	return &harness{t: t, ctx: context.Background(), root: root, store: fs, files: files, e: e, ws: ws}
}

// reopen returns a fresh Engine over the same store (a new process).
func (h *harness) reopen(opts Options) *Engine {
	if opts.Workspace.Default == "" {
		opts.Workspace.Default = h.ws
	}
	opts = withExecutors(opts, h.t.TempDir())
	e := New(h.store, opts)
	e.verifyWrites = true
	h.t.Cleanup(e.Close)
	return e
}

func example(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "examples", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (h *harness) plan(spec string, input any) *Response {
	h.t.Helper()
	r, err := h.e.Plan(h.ctx, PlanRequest{Spec: []byte(spec), Input: js(input)})
	if err != nil {
		h.t.Fatalf("plan: %v", err)
	}
	return r
}

// entry finds the ready entry for id.
func entry(t *testing.T, r *Response, id string) ReadyEntry {
	t.Helper()
	for _, e := range r.Ready {
		if e.ID == id {
			return e
		}
	}
	t.Fatalf("no ready entry %q in %s", id, dump(r))
	return ReadyEntry{}
}

func dump(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%#v (%v)", v, err)
	}
	return string(b)
}

// report answers the ready entry id of r with res.
func (h *harness) report(r *Response, id string, res StepResult) *Response {
	h.t.Helper()
	en := entry(h.t, r, id)
	out, err := h.e.StepDone(h.ctx, StepDoneRequest{RunID: r.RunID, StepID: id, DispatchToken: en.DispatchToken, Result: res})
	if err != nil {
		h.t.Fatalf("step done %s: %v", id, err)
	}
	return out
}

// ok reports an output (given as JSON text) for id.
func (h *harness) ok(r *Response, id, outputJSON string) *Response {
	h.t.Helper()
	return h.report(r, id, StepResult{Output: json.RawMessage(outputJSON)})
}

// script maps a step id to the outputs (JSON text) or failures ("!reason")
// to report for successive attempts; the last one repeats.
type script map[string][]string

// drive answers every ready entry from the script until the run stops
// being ready; it returns the last response.
func (h *harness) drive(r *Response, sc script) *Response {
	h.t.Helper()
	seen := map[string]int{}
	for i := 0; r.Status == StatusReady; i++ {
		if i > 500 {
			h.t.Fatalf("drive: no end after 500 reports: %s", dump(r))
		}
		en := r.Ready[0]
		outs, ok := sc[en.ID]
		if !ok {
			// Items of a fanout share a script entry "fan/*".
			if j := strings.IndexByte(en.ID, '/'); j > 0 {
				outs, ok = sc[en.ID[:j]+"/*"]
			}
		}
		if !ok {
			h.t.Fatalf("drive: no script for ready step %q (%s)", en.ID, dump(r))
		}
		n := seen[en.ID]
		seen[en.ID]++
		o := outs[min(n, len(outs)-1)]
		res := StepResult{Output: json.RawMessage(o)}
		if strings.HasPrefix(o, "!") {
			res = StepResult{Failure: o[1:]}
		}
		r = h.report(r, en.ID, res)
	}
	return r
}

func (h *harness) audit(runID string) *AuditReport {
	h.t.Helper()
	a, err := h.e.Audit(h.ctx, runID)
	if err != nil {
		h.t.Fatalf("audit: %v", err)
	}
	return a
}

// eventTypes lists "type(stepId)" of a run's events.
func (h *harness) eventTypes(runID string) []string {
	h.t.Helper()
	var out []string
	for _, ev := range h.audit(runID).Events {
		if ev.StepID != "" {
			out = append(out, string(ev.Type)+"("+ev.StepID+")")
		} else {
			out = append(out, string(ev.Type))
		}
	}
	return out
}

func wantStatus(t *testing.T, r *Response, status RunStatus) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %q, want %q: %s", r.Status, status, dump(r))
	}
}

func wantFailure(t *testing.T, r *Response, status RunStatus, reasonPart string) {
	t.Helper()
	wantStatus(t, r, status)
	if r.Failure == nil || !strings.Contains(r.Failure.Reason, reasonPart) {
		t.Fatalf("failure %s, want reason containing %q", dump(r.Failure), reasonPart)
	}
}

func wantCode(t *testing.T, err error, kind error) *Error {
	t.Helper()
	if !errors.Is(err, kind) {
		t.Fatalf("error %v, want %v", err, kind)
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %T is not *Error", err)
	}
	return e
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	if val, ok := v.(Value); ok {
		if !val.Present {
			t.Fatal("jsonOf: absent value")
		}
		v = val.Data
	}
	b, err := expr.EncodeJSON(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func readyIDs(r *Response) []string {
	var ids []string
	for _, e := range r.Ready {
		ids = append(ids, e.ID)
	}
	return ids
}

// persisted is the run's state as stored (bookkeeping included), for
// checks the audit view does not show.
func (h *harness) persisted(runID string) *runState {
	h.t.Helper()
	st, _, _, err := h.e.load(h.ctx, runID)
	if err != nil {
		h.t.Fatal(err)
	}
	// The finished steps too, read back from the log (into a copy: st may
	// be the engine's own decoded state).
	c := *st
	st = &c
	st.Steps = maps.Clone(st.Steps)
	for id, ref := range st.cold {
		if st.Steps[id] == nil {
			ss, err := h.e.coldState(h.ctx, runID, ref)
			if err != nil {
				h.t.Fatal(err)
			}
			st.Steps[id] = ss
		}
	}
	return st
}

func (h *harness) stepState(runID, id string) *StepView {
	h.t.Helper()
	a := h.audit(runID)
	head, rest, nested := strings.Cut(id, "/")
	st := a.Steps[head]
	if nested {
		if st == nil || st.Sub == nil {
			h.t.Fatalf("no subflow state for %s", id)
		}
		st = st.Sub.Steps[rest]
	}
	if st == nil {
		h.t.Fatalf("no step state %s", id)
	}
	return st
}

// js is the JSON of v, for requests the tests build from Go values.
func js(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// allEventTypes are the types of every event in a run's log, internal
// records included.
func (h *harness) allEventTypes(runID string) []string {
	h.t.Helper()
	evs, err := h.store.Events(h.ctx, runID, 0, 0)
	if err != nil {
		h.t.Fatal(err)
	}
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.Type
	}
	return out
}
