package engine

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stratum-go/stratum/store"
)

// listSpec is a flow whose runs are listed at its first step, at its
// gate, and cancelled.
const listSpec = `version: 1
contracts:
  V: {v: string}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${last.output}", contract: V}
    steps:
      - {id: first, do: "first", out: V}
      - id: review
        gate: {on_approve: null, on_revise: null, on_kill: null}
        after: [first]
      - {id: last, do: "last", out: V, after: [review]}
`

// listOnly is a store with nothing but store.Store (ListRuns reads its
// List), listing extra runs too (runs gone by the time they are read).
type listOnly struct {
	store.Store
	extra []store.RunInfo
}

func (l listOnly) List(ctx context.Context) ([]store.RunInfo, error) {
	runs, err := l.Store.List(ctx)
	if err != nil {
		return nil, err
	}
	runs = append(runs, l.extra...)
	slices.SortFunc(runs, func(a, b store.RunInfo) int { return strings.Compare(a.ID, b.ID) })
	return runs, nil
}

// scanner is a store.Scanner over listOnly's List that hands the runs
// out shuffled, each summary in a buffer it overwrites once fn returns:
// whatever a listing keeps of the store's memory shows.
type scanner struct {
	listOnly
	seed uint64
	err  error // returned after the first run, when set
}

func (s scanner) ScanRuns(ctx context.Context, fn func(store.RunInfo) error) error {
	runs, err := s.List(ctx)
	if err != nil {
		return err
	}
	rand.New(rand.NewPCG(s.seed, 1)).Shuffle(len(runs), func(i, j int) { runs[i], runs[j] = runs[j], runs[i] })
	var buf []byte
	for _, r := range runs {
		if r.Summary != nil {
			buf = append(buf[:0], r.Summary...)
			r.Summary = buf[:len(buf):len(buf)]
		}
		if err := fn(r); err != nil {
			return err
		}
		for i := range buf {
			buf[i] = 'X'
		}
		if s.err != nil {
			return s.err
		}
	}
	return nil
}

// ListRuns from a store.Scanner lists what it lists from List: the same
// runs in the same order (creation times tied in groups, so the order of
// the ids decides between them), a run whose summary is of another
// format read from the run, a run gone by then left out.
func TestListRunsFromAScanner(t *testing.T) {
	var mu sync.Mutex
	readings := 0
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	h := newHarness(t, Options{Now: func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		readings++
		return at.Add(time.Duration(readings/7) * time.Millisecond) // several runs created at each time
	}})
	for i := range 30 {
		r := h.plan(listSpec, map[string]any{})
		if i%3 == 0 {
			continue
		}
		en := entry(t, r, "first")
		if _, err := h.e.StepDone(h.ctx, StepDoneRequest{RunID: r.RunID, StepID: "first", DispatchToken: en.DispatchToken,
			Result: StepResult{Output: js(map[string]any{"v": "x"})}}); err != nil {
			t.Fatal(err)
		}
		if i%3 == 2 {
			if _, err := h.e.Cancel(h.ctx, r.RunID, "test"); err != nil {
				t.Fatal(err)
			}
		}
	}
	runs, err := h.store.List(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	other := runs[4].ID // its summary says another format: the run is read
	if _, err := h.store.Update(h.ctx, other, func(*store.Snapshot) (*store.Change, error) {
		return &store.Change{Summary: json.RawMessage(`{"v":2}`)}, nil
	}); err != nil {
		t.Fatal(err)
	}
	plain := listOnly{Store: h.store, extra: []store.RunInfo{{ID: "00000000-0000-4000-8000-000000000015x", UpdatedAt: at}}}
	want, err := New(plain, withExecutors(Options{}, t.TempDir())).ListRuns(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != 30 {
		t.Fatalf("ListRuns from List: %d runs, want 30", len(want))
	}
	ties := 0
	for i := 1; i < len(want); i++ {
		if want[i].CreatedAt.Equal(want[i-1].CreatedAt) {
			ties++
		}
	}
	if ties < 10 {
		t.Fatalf("%d ties of the creation time, want at least 10", ties)
	}
	for seed := range uint64(5) {
		e := New(scanner{listOnly: plain, seed: seed}, withExecutors(Options{}, t.TempDir()))
		got, err := e.ListRuns(h.ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("ListRuns from ScanRuns (seed %d):\n%s\nfrom List:\n%s", seed, dump(got), dump(want))
		}
		checkSeq(t, e, want)
	}
	checkSeq(t, New(plain, withExecutors(Options{}, t.TempDir())), want)
	stop := errors.New("stop")
	if _, err := New(scanner{listOnly: plain, err: stop}, withExecutors(Options{}, t.TempDir())).ListRuns(h.ctx); err != stop {
		t.Errorf("ListRuns when ScanRuns fails: %v, want its error", err)
	}
}

// checkSeq: ListRunsSeq yields what ListRuns lists, each time it is
// ranged over.
func checkSeq(t *testing.T, e *Engine, want []RunSummary) {
	t.Helper()
	seq, err := e.ListRunsSeq(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		var got []RunSummary
		for r := range seq {
			got = append(got, *r)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("ListRunsSeq:\n%s\nListRuns:\n%s", dump(got), dump(want))
		}
	}
}
