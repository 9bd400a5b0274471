package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stratum-go/stratum/store"
)

// Steps that finish out of declaration order (c, then b, then a, each
// after the others' records) stream in declaration order, each with its
// own state; pages of events put together are every event once.
func TestAuditStreamOrderAndPages(t *testing.T) {
	h := newHarness(t, Options{})
	var spec strings.Builder
	spec.WriteString("version: 1\ncontracts:\n  V: {v: string}\nflows:\n  entry: main\n  main:\n    input: {}\n    output: {from: \"${z.output}\", contract: V}\n    steps:\n")
	ids := []string{}
	for i := 0; i < 70; i++ { // more than a chunk of the index
		id := fmt.Sprintf("p%02d", i)
		ids = append(ids, id)
		fmt.Fprintf(&spec, "      - {id: %s, do: \"task %s\", out: V}\n", id, id)
	}
	fmt.Fprintf(&spec, "      - {id: z, do: \"last\", out: V, after: [%s]}\n", strings.Join(ids, ", "))
	r := h.plan(spec.String(), map[string]any{})
	for i := len(ids) - 1; i >= 0; i-- { // the last declared finishes first
		r = h.report(r, ids[i], StepResult{Output: js(map[string]any{"v": "out " + ids[i]})})
	}
	r = h.report(r, "z", StepResult{Output: js(map[string]any{"v": "done"})})
	wantStatus(t, r, StatusCompleted)

	e2 := h.reopen(Options{}) // a fresh process: every finished step from the log
	var got []string
	streamed := map[string]*StepView{}
	rep, err := e2.AuditStream(h.ctx, r.RunID, AuditOptions{}, AuditVisitor{Step: func(id string, v *StepView) error {
		got = append(got, id)
		streamed[id] = v
		if id != "z" && jsonOf(t, v.Output.Data) != fmt.Sprintf(`{"v":"out %s"}`, id) {
			t.Errorf("%s streamed with output %s", id, jsonOf(t, v.Output.Data))
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if want := append(slices.Clone(ids), "z"); !slices.Equal(got, want) {
		t.Fatalf("streamed steps %v", got)
	}
	if rep.Status != StatusCompleted || len(rep.Events) != 0 || len(rep.Steps) != 0 {
		t.Fatalf("stream report %s", dump(rep))
	}

	full, err := e2.Audit(h.ctx, r.RunID)
	if err != nil {
		t.Fatal(err)
	}
	// The steps read alone (every record from the log) are the steps
	// read with the events (records kept by the events pass), and so
	// they are when the events pass may keep only a few, or none before
	// a cursor.
	if a, b := dump(full.Steps), dump(streamed); a != b {
		t.Fatalf("steps with the events differ from the steps alone:\n %s\n %s", a, b)
	}
	defer func(n int) { maxKeptRecords = n }(maxKeptRecords)
	maxKeptRecords = 3000
	for _, after := range []int64{0, full.Events[len(full.Events)/2].Seq} {
		few, err := e2.AuditWith(h.ctx, r.RunID, AuditOptions{EventsAfter: after})
		if err != nil {
			t.Fatal(err)
		}
		if a, b := dump(full.Steps), dump(few.Steps); a != b {
			t.Fatalf("steps with a few records kept, events after %d, differ:\n %s\n %s", after, a, b)
		}
	}
	var paged []Event
	for after, pages := int64(0), 0; ; pages++ {
		page, err := e2.AuditWith(h.ctx, r.RunID, AuditOptions{EventsAfter: after, EventsLimit: 7, Steps: []string{}})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Steps) != 0 || len(page.Events) > 7 {
			t.Fatalf("page %d: %d steps, %d events", pages, len(page.Steps), len(page.Events))
		}
		paged = append(paged, page.Events...)
		if page.NextEventsAfter == 0 {
			break
		}
		after = page.NextEventsAfter
	}
	a, _ := json.Marshal(full.Events)
	b, _ := json.Marshal(paged)
	if string(a) != string(b) {
		t.Fatalf("pages put together differ from the events:\n %s\n %s", a, b)
	}
	_, err = e2.AuditWith(h.ctx, r.RunID, AuditOptions{Steps: []string{"p05", "nope"}})
	wantCode(t, err, ErrInvalidStep)
	one, err := e2.AuditWith(h.ctx, r.RunID, AuditOptions{Steps: []string{"p05"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(one.Steps) != 1 || one.Steps["p05"] == nil || len(one.Events) != len(full.Events) {
		t.Fatalf("one step: %d steps, %d events", len(one.Steps), len(one.Events))
	}
	_, err = e2.AuditWith(h.ctx, r.RunID, AuditOptions{EventsAfter: 1 << 40})
	wantCode(t, err, ErrInvalidCursor)
}

// An audit stopped by its visitor or by its context, in the events pass or
// the steps pass (both read ahead on a second goroutine), returns why it
// stopped: the visitor's error, or the context's, never a corrupt run.
func TestAuditStreamStops(t *testing.T) {
	h := newFileHarness(t, Options{})
	var spec strings.Builder
	spec.WriteString("version: 1\ncontracts:\n  V: {v: string}\nflows:\n  entry: main\n  main:\n    input: {}\n    output: {from: \"${s399.output}\", contract: V}\n    steps:\n")
	for i := 0; i < 400; i++ { // more than a page of events
		fmt.Fprintf(&spec, "      - {id: s%d, do: \"task %d\", out: V}\n", i, i)
	}
	r := h.plan(spec.String(), map[string]any{})
	for i := 0; i < 400; i++ {
		r = h.report(r, fmt.Sprintf("s%d", i), StepResult{Output: js(map[string]any{"v": "out"})})
	}
	wantStatus(t, r, StatusCompleted)
	e2 := h.reopen(Options{})
	full, err := e2.Audit(h.ctx, r.RunID)
	if err != nil {
		t.Fatal(err)
	}
	last := full.Events[len(full.Events)-10]
	if last.Seq <= auditPage {
		t.Fatalf("event %d is on the first page", last.Seq)
	}
	errStop := errors.New("stop here")
	for _, c := range []struct {
		name string
		at   int // the call of the visitor that stops it
		step bool
		stop func(cancel context.CancelFunc) error
	}{
		{"event error", len(full.Events) - 10, false, func(context.CancelFunc) error { return errStop }},
		{"event cancel", 5, false, func(cancel context.CancelFunc) error { cancel(); return nil }},
		{"step error", 3, true, func(context.CancelFunc) error { return errStop }},
		{"step cancel", 3, true, func(cancel context.CancelFunc) error { cancel(); return nil }},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(h.ctx)
			defer cancel()
			calls := 0
			visit := func() error {
				if calls++; calls == c.at {
					return c.stop(cancel)
				}
				return nil
			}
			v := AuditVisitor{Event: func(Event) error { return visit() }}
			if c.step {
				v = AuditVisitor{Step: func(string, *StepView) error { return visit() }}
			}
			_, err := e2.AuditStream(ctx, r.RunID, AuditOptions{}, v)
			want := errStop
			if strings.HasSuffix(c.name, "cancel") {
				want = context.Canceled
			}
			if !errors.Is(err, want) {
				t.Fatalf("audit stopped with %v, want %v", err, want)
			}
		})
	}
}

// countingStore counts the pages of events read from a store.
type countingStore struct {
	store.Store
	pages atomic.Int32
}

func (c *countingStore) Events(ctx context.Context, runID string, afterSeq int64, limit int) ([]store.Event, error) {
	c.pages.Add(1)
	return c.Store.Events(ctx, runID, afterSeq, limit)
}

// A small page of events (what stratum_audit asks for) reads one page of
// the log, not the pages the read-ahead would fetch for a whole audit; a
// whole audit reads each page once. A state decoded with its plan hands
// the plan on once, so that a state kept in the state cache does not hold
// it past the plan cache's budget.
func TestAuditReadsWhatItPasses(t *testing.T) {
	h := newFileHarness(t, Options{})
	var spec strings.Builder
	spec.WriteString("version: 1\ncontracts:\n  V: {v: string}\nflows:\n  entry: main\n  main:\n    input: {}\n    output: {from: \"${s699.output}\", contract: V}\n    steps:\n")
	for i := 0; i < 700; i++ {
		fmt.Fprintf(&spec, "      - {id: s%d, do: \"task %d\", out: V}\n", i, i)
	}
	r := h.plan(spec.String(), map[string]any{})
	for i := 0; i < 700; i++ {
		r = h.report(r, fmt.Sprintf("s%d", i), StepResult{Output: js(map[string]any{"v": "out"})})
	}
	cs := &countingStore{Store: h.store}
	e2 := New(cs, Options{Workspace: WorkspacePolicy{Default: h.ws}})
	defer e2.Close()
	head, err := h.store.Load(h.ctx, r.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if head.Head.Seq <= 2*auditPage {
		t.Fatalf("the run has %d events, want more than two pages", head.Head.Seq)
	}
	if _, err := e2.AuditWith(h.ctx, r.RunID, AuditOptions{EventsLimit: 100, Steps: []string{}}); err != nil {
		t.Fatal(err)
	}
	if n := cs.pages.Load(); n != 1 {
		t.Errorf("a page of 100 events read %d pages of the log, want 1", n)
	}
	cs.pages.Store(0)
	if _, err := e2.AuditWith(h.ctx, r.RunID, AuditOptions{Steps: []string{}}); err != nil {
		t.Fatal(err)
	}
	if n, want := cs.pages.Load(), int32((head.Head.Seq+auditPage-1)/auditPage); n != want {
		t.Errorf("a whole audit read %d pages of the log, want %d", n, want)
	}

	e3 := New(h.store, Options{Workspace: WorkspacePolicy{Default: h.ws}})
	defer e3.Close()
	st, err := e3.decodeRun(h.ctx, head)
	if err != nil {
		t.Fatal(err)
	}
	if st.plan == nil {
		t.Fatal("a cold decode compiled no plan")
	}
	if c, err := e3.planFor(st); err != nil || c == nil {
		t.Fatalf("planFor: %v", err)
	}
	if st.plan != nil {
		t.Error("the state still holds its plan after planFor took it")
	}
}
