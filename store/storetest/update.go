package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratum-go/stratum/store"
)

func (s suite) update(t *testing.T) {
	ctx := context.Background()
	st := s.newStore(t)
	h0 := mustCreate(t, st, "r", `{"v":0}`, 2)

	var seen *store.Snapshot
	h1 := mustUpdate(t, st, "r", func(cur *store.Snapshot) (*store.Change, error) {
		seen = cur
		return &store.Change{State: []byte(`{"v":1}`), Events: []store.NewEvent{ev("result", 3), ev("ready", 4)}}, nil
	})
	if seen.Head != h0 || string(seen.State) != `{"v":0}` || seen.RunID != "r" {
		t.Errorf("fn saw %+v", seen)
	}
	if h1.Seq != 4 {
		t.Errorf("head after an update with two events = %+v", h1)
	}
	if snap := mustLoad(t, st, "r"); string(snap.State) != `{"v":1}` || snap.Head != h1 {
		t.Errorf("after the update: %+v", snap)
	}
	evs, _ := st.Events(ctx, "r", 2, 0)
	if len(evs) != 2 || !evs[0].Begin || evs[1].Begin {
		t.Errorf("the update's events = %+v, want the first marked as beginning the write", evs)
	}
	// A state-only change keeps the head; a nil State keeps the document.
	h2 := mustUpdate(t, st, "r", func(*store.Snapshot) (*store.Change, error) { return &store.Change{State: []byte(`{"v":2}`)}, nil })
	if h2 != h1 {
		t.Errorf("a state-only update moved the head: %+v", h2)
	}
	h3 := mustUpdate(t, st, "r", func(*store.Snapshot) (*store.Change, error) {
		return &store.Change{Events: []store.NewEvent{ev("x", 5)}}, nil
	})
	if h3.Seq != 5 {
		t.Errorf("an events-only update: %+v", h3)
	}
	if snap := mustLoad(t, st, "r"); string(snap.State) != `{"v":2}` {
		t.Errorf("a nil State changed the document: %s", snap.State)
	}
	// fn's own error comes back as the same value, unwrapped.
	errStale := errors.New("stale token")
	if _, err := st.Update(ctx, "r", func(*store.Snapshot) (*store.Change, error) {
		return &store.Change{State: []byte(`{"v":9}`)}, errStale
	}); err != errStale {
		t.Errorf("fn's error came back as %v, want the same value", err)
	}
	// Mutating the snapshot changes nothing stored.
	mustUpdate(t, st, "r", func(cur *store.Snapshot) (*store.Change, error) {
		cur.State[0] = 'X'
		return nil, nil
	})
	if snap := mustLoad(t, st, "r"); string(snap.State) != `{"v":2}` {
		t.Errorf("mutating fn's snapshot changed the stored state: %s", snap.State)
	}
}

func (s suite) updateRefusals(t *testing.T) {
	ctx := context.Background()
	st := s.newStore(t)
	mustCreate(t, st, "r", `{"v":0}`, 2)
	mustUpdate(t, st, "r", write(`{"v":1}`, 1))
	before := fingerprintOf(t, st, "r")
	errStale := errors.New("stale")
	refusals := map[string]struct {
		fn   func(*store.Snapshot) (*store.Change, error)
		want error // nil: Update succeeds writing nothing
	}{
		"fn error":         {func(*store.Snapshot) (*store.Change, error) { return &store.Change{State: []byte(`{}`)}, errStale }, errStale},
		"nil change":       {func(*store.Snapshot) (*store.Change, error) { return nil, nil }, nil},
		"empty change":     {func(*store.Snapshot) (*store.Change, error) { return &store.Change{}, nil }, nil},
		"state not object": {func(*store.Snapshot) (*store.Change, error) { return &store.Change{State: []byte(`"x"`)}, nil }, store.ErrInvalidInput},
		"bad event": {func(*store.Snapshot) (*store.Change, error) {
			return &store.Change{Events: []store.NewEvent{ev("ok", 1), {Type: "bad type", At: t0}}}, nil
		}, store.ErrInvalidInput},
		"store event type": {func(*store.Snapshot) (*store.Change, error) {
			return &store.Change{Events: []store.NewEvent{{Type: "store.forged", At: t0}}}, nil
		}, store.ErrInvalidInput},
		"summary too large": {func(*store.Snapshot) (*store.Change, error) {
			return &store.Change{Summary: bigSummary(store.MaxSummaryBytes + 1)}, nil
		}, store.ErrInvalidInput},
	}
	for name, tc := range refusals {
		h, err := st.Update(ctx, "r", tc.fn)
		switch {
		case tc.want == nil && (err != nil || h != before.head):
			t.Errorf("%s: %+v, %v; want the current head and no error", name, h, err)
		case tc.want != nil && !errors.Is(err, tc.want):
			t.Errorf("%s: err = %v, want %v", name, err, tc.want)
		}
		if after := fingerprintOf(t, st, "r"); after != before {
			t.Errorf("%s wrote to the run: %+v -> %+v", name, before, after)
		}
	}
}

func (s suite) updateDurable(t *testing.T) {
	if s.cfg.reopen == nil {
		t.Skip("no Reopen option: this store has no second view of its data")
	}
	st := s.newStore(t)
	mustCreate(t, st, "d", `{"n":0}`, 1)
	h := mustUpdate(t, st, "d", func(*store.Snapshot) (*store.Change, error) {
		return &store.Change{State: []byte(`{"n":1}`), Summary: json.RawMessage(`{"n":1}`), Events: events("result", 2, 2)}, nil
	})
	other := s.cfg.reopen(t, st)
	snap := mustLoad(t, other, "d")
	if snap.Head != h || string(snap.State) != `{"n":1}` || string(snap.Summary) != `{"n":1}` {
		t.Errorf("a reopened store sees %+v, want head %+v and the update's state and summary", snap, h)
	}
	if rep := mustVerify(t, other, "d"); rep.Head != h || rep.HeadRecord != store.HeadRecordMatch {
		t.Errorf("reopened Verify: %+v", rep)
	}
}

func (s suite) concurrentUpdates(t *testing.T) {
	ctx := context.Background()
	st := s.newStore(t)
	mustCreate(t, st, "c", `{"n":0}`, 0)
	g, each := s.cfg.goroutines, s.cfg.updates
	var inside, maxInside atomic.Int32
	var wg sync.WaitGroup
	for range g {
		wg.Go(func() {
			for done := 0; done < each; {
				_, err := st.Update(ctx, "c", func(cur *store.Snapshot) (*store.Change, error) {
					if n := inside.Add(1); n > maxInside.Load() {
						maxInside.Store(n)
					}
					defer inside.Add(-1)
					var v struct{ N int }
					if err := json.Unmarshal(cur.State, &v); err != nil {
						return nil, err
					}
					time.Sleep(100 * time.Microsecond) // widen the window for a lost update
					return &store.Change{State: fmt.Appendf(nil, `{"n":%d}`, v.N+1), Summary: fmt.Appendf(nil, `{"n":%d}`, v.N+1), Events: []store.NewEvent{ev("inc", v.N+1)}}, nil
				})
				switch {
				case err == nil:
					done++
				case errors.Is(err, store.ErrLocked):
					// The suite runs stores with a short lock timeout;
					// under contention a caller retries, as engine clients
					// retry run_locked.
				default:
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	total := g * each
	snap := mustLoad(t, st, "c")
	if string(snap.State) != fmt.Sprintf(`{"n":%d}`, total) || snap.Head.Seq != int64(total) || string(snap.Summary) != fmt.Sprintf(`{"n":%d}`, total) {
		t.Errorf("after %d increments: state %s, summary %s, head %d (a lost update)", total, snap.State, snap.Summary, snap.Head.Seq)
	}
	if maxInside.Load() != 1 {
		t.Errorf("%d update functions ran at once", maxInside.Load())
	}
	rep := mustVerify(t, st, "c")
	if rep.Events != int64(total) || rep.Writes != int64(total) {
		t.Errorf("Verify after concurrent updates: %+v", rep)
	}
	evs, _ := st.Events(ctx, "c", 0, 0)
	for i, e := range evs {
		if string(e.Data) != fmt.Sprintf(`{"i":%d}`, i+1) {
			t.Fatalf("event %d carries %s: the increments interleaved", e.Seq, e.Data)
		}
	}
}

func (s suite) lockTimeout(t *testing.T) {
	ctx := context.Background()
	st := s.newStore(t)
	mustCreate(t, st, "busy", `{}`, 1)
	holding, done, finished := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		st.Update(ctx, "busy", func(*store.Snapshot) (*store.Change, error) {
			close(holding)
			<-done
			return nil, nil
		})
	}()
	<-holding
	_, err := st.Update(ctx, "busy", func(*store.Snapshot) (*store.Change, error) {
		t.Error("fn ran while another Update held the lock")
		return nil, nil
	})
	var le *store.LockedError
	if !errors.As(err, &le) || !errors.Is(err, store.ErrLocked) || le.RunID != "busy" {
		t.Errorf("Update of a locked run: %v, want a *store.LockedError", err)
	}
	if _, err := st.Load(ctx, "busy"); err != nil {
		t.Errorf("Load while a writer holds the lock: %v", err)
	}
	if _, err := st.Events(ctx, "busy", 0, 0); err != nil {
		t.Errorf("Events while a writer holds the lock: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := st.Update(cctx, "busy", write(`{}`, 1)); errors.Is(err, store.ErrLocked) || !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled caller: %v, want context.Canceled, not ErrLocked", err)
	}
	close(done)
	<-finished
	if _, err := st.Update(ctx, "busy", write(`{}`, 1)); err != nil {
		t.Errorf("after the holder released: %v", err)
	}
}
