package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratum-go/stratum/store"
)

func (s suite) createLoad(t *testing.T) {
	ctx := context.Background()
	st := s.newStore(t)
	h, err := st.Create(ctx, "r1", store.Change{State: []byte(`{"status":"running"}`), Summary: json.RawMessage(`{ "status": "running" }`), Events: events("planned", 1, 3)})
	if err != nil {
		t.Fatal(err)
	}
	if h.Seq != 3 || len(h.Hash) != 64 {
		t.Fatalf("head = %+v", h)
	}
	snap := mustLoad(t, st, "r1")
	if string(snap.State) != `{"status":"running"}` || snap.Head != h || snap.RunID != "r1" || string(snap.Summary) != `{"status":"running"}` || snap.Lease != nil {
		t.Errorf("snapshot = %+v (summary %s)", snap, snap.Summary)
	}
	all, err := st.Events(ctx, "r1", 0, 0)
	if err != nil || len(all) != 3 {
		t.Fatalf("Events = %d, %v", len(all), err)
	}
	prev := genesis("r1")
	for i, e := range all {
		if e.Seq != int64(i+1) || e.Type != "planned" || e.PrevHash != prev || !e.At.Equal(t0.Add(fmtSeconds(i+1))) || string(e.Data) != fmt.Sprintf(`{"i":%d}`, i+1) || e.Begin != (i == 0) {
			t.Errorf("event %d = %+v", i, e)
		}
		prev = e.Hash
	}
	if all[2].Hash != h.Hash {
		t.Error("the last event's hash is not the head")
	}
	h0, err := st.Create(ctx, "r0", store.Change{State: []byte(`{}`)})
	if err != nil || h0 != (store.Head{Seq: 0, Hash: genesis("r0")}) {
		t.Errorf("Create without events: %+v, %v (want seq 0 and the genesis hash)", h0, err)
	}
	if evs, err := st.Events(ctx, "r0", 0, 0); err != nil || len(evs) != 0 {
		t.Errorf("Events of a run without events: %v, %v", evs, err)
	}
	if snap := mustLoad(t, st, "r0"); snap.Summary != nil {
		t.Errorf("a run created without a summary has summary %s", snap.Summary)
	}
}

func (s suite) createRejects(t *testing.T) {
	ctx := context.Background()
	st := s.newStore(t)
	mustCreate(t, st, "r1", `{}`, 1)
	if _, err := st.Create(ctx, "r1", store.Change{State: []byte(`{}`)}); !errors.Is(err, store.ErrRunExists) {
		t.Errorf("second Create of r1: %v, want ErrRunExists", err)
	}
	bad := map[string]store.Change{
		"no state":          {},
		"state not object":  {State: []byte(`[1]`)},
		"state cut":         {State: []byte(`{"a":`)},
		"bad event type":    {State: []byte(`{}`), Events: []store.NewEvent{{Type: "bad type", At: t0}}},
		"zero event time":   {State: []byte(`{}`), Events: []store.NewEvent{{Type: "x"}}},
		"bad event data":    {State: []byte(`{}`), Events: []store.NewEvent{{Type: "x", At: t0, Data: json.RawMessage(`{`)}}},
		"store event type":  {State: []byte(`{}`), Events: []store.NewEvent{{Type: store.EventRepair, At: t0}}},
		"summary not JSON":  {State: []byte(`{}`), Summary: json.RawMessage(`{"a"`)},
		"summary an array":  {State: []byte(`{}`), Summary: json.RawMessage(`[1,2]`)},
		"summary too large": {State: []byte(`{}`), Summary: bigSummary(store.MaxSummaryBytes + 1)},
	}
	for name, c := range bad {
		id := "bad-" + strings.ReplaceAll(name, " ", "-")
		if _, err := st.Create(ctx, id, c); !errors.Is(err, store.ErrInvalidInput) {
			t.Errorf("Create (%s): %v, want ErrInvalidInput", name, err)
		}
		if _, err := st.Load(ctx, id); !errors.Is(err, store.ErrRunNotFound) {
			t.Errorf("a refused Create (%s) left a run: %v", name, err)
		}
	}
	runs, err := st.List(ctx)
	if err != nil || len(runs) != 1 {
		t.Errorf("List after refused Creates: %v, %v (want only r1)", runs, err)
	}
	if _, err := st.Create(ctx, "ok-summary", store.Change{State: []byte(`{}`), Summary: bigSummary(store.MaxSummaryBytes)}); err != nil {
		t.Errorf("a summary of exactly MaxSummaryBytes: %v", err)
	}
}

// bigSummary is a compact JSON object of n bytes.
func bigSummary(n int) json.RawMessage {
	return json.RawMessage(`{"p":"` + strings.Repeat("x", n-len(`{"p":""}`)) + `"}`)
}

func (s suite) createConcurrent(t *testing.T) {
	st := s.newStore(t)
	var wins, exists atomic.Int32
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			_, err := st.Create(context.Background(), "same", store.Change{State: fmt.Appendf(nil, `{"by":%d}`, i), Events: events("planned", i, 1)})
			switch {
			case err == nil:
				wins.Add(1)
			case errors.Is(err, store.ErrRunExists):
				exists.Add(1)
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if wins.Load() != 1 || exists.Load() != 7 {
		t.Fatalf("%d Creates won, %d were told the run exists; want 1 and 7", wins.Load(), exists.Load())
	}
	if rep := mustVerify(t, st, "same"); rep.Events != 1 {
		t.Errorf("Verify: %+v", rep)
	}
}

func (s suite) invalidRunID(t *testing.T) {
	ctx := context.Background()
	st := s.newStore(t)
	for _, id := range []string{"", ".", "..", "../x", "/abs", "a/b", `a\b`, "-x", "a.b", "a b", "a\x00b", "é", strings.Repeat("a", 129)} {
		checks := map[string]error{}
		_, checks["Create"] = st.Create(ctx, id, store.Change{State: []byte(`{}`)})
		_, checks["Update"] = st.Update(ctx, id, func(*store.Snapshot) (*store.Change, error) { return &store.Change{State: []byte(`{}`)}, nil })
		_, checks["Load"] = st.Load(ctx, id)
		_, checks["Events"] = st.Events(ctx, id, 0, 0)
		_, checks["Event"] = st.Event(ctx, id, 1)
		_, checks["Verify"] = st.Verify(ctx, id, store.VerifyOptions{})
		_, checks["AcquireLease"] = st.AcquireLease(ctx, id, "o", 1e9)
		for name, err := range checks {
			if !errors.Is(err, store.ErrInvalidRunID) {
				t.Errorf("%s(%q) = %v, want ErrInvalidRunID", name, id, err)
			}
		}
	}
}

func (s suite) notFound(t *testing.T) {
	ctx := context.Background()
	st := s.newStore(t)
	mustCreate(t, st, "exists", `{}`, 1)
	called := false
	checks := map[string]error{}
	_, checks["Update"] = st.Update(ctx, "nope", func(*store.Snapshot) (*store.Change, error) { called = true; return nil, nil })
	_, checks["Load"] = st.Load(ctx, "nope")
	_, checks["Events"] = st.Events(ctx, "nope", 0, 0)
	_, checks["Event"] = st.Event(ctx, "nope", 1)
	_, checks["Verify"] = st.Verify(ctx, "nope", store.VerifyOptions{})
	_, checks["AcquireLease"] = st.AcquireLease(ctx, "nope", "o", 1e9)
	_, checks["RenewLease"] = st.RenewLease(ctx, "nope", store.Lease{Owner: "o", Epoch: 1}, 1e9)
	checks["ReleaseLease"] = st.ReleaseLease(ctx, "nope", store.Lease{Owner: "o", Epoch: 1})
	for name, err := range checks {
		if !errors.Is(err, store.ErrRunNotFound) {
			t.Errorf("%s: %v, want ErrRunNotFound", name, err)
		}
	}
	if called {
		t.Error("Update called fn for a missing run")
	}
	if runs, _ := st.List(ctx); len(runs) != 1 {
		t.Errorf("lookups of a missing run made it appear: %v", runs)
	}
}

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

func (s suite) events(t *testing.T) {
	ctx := context.Background()
	st := s.newStore(t)
	mustCreate(t, st, "r", `{}`, 3)
	cases := []struct {
		after int64
		limit int
		want  []int64
	}{
		{0, 0, []int64{1, 2, 3}}, {0, 1, []int64{1}}, {1, 0, []int64{2, 3}}, {1, 1, []int64{2}}, {2, 5, []int64{3}}, {3, 0, nil},
	}
	for _, c := range cases {
		got, err := st.Events(ctx, "r", c.after, c.limit)
		if err != nil {
			t.Fatalf("Events(%d, %d): %v", c.after, c.limit, err)
		}
		var seqs []int64
		for _, e := range got {
			seqs = append(seqs, e.Seq)
		}
		if !slices.Equal(seqs, c.want) {
			t.Errorf("Events(%d, %d) = %v, want %v", c.after, c.limit, seqs, c.want)
		}
	}
	for _, after := range []int64{-1, 4} {
		if _, err := st.Events(ctx, "r", after, 0); !errors.Is(err, store.ErrSeqOutOfRange) {
			t.Errorf("Events after %d: %v, want ErrSeqOutOfRange", after, err)
		}
	}
	if _, err := st.Events(ctx, "r", 0, -1); !errors.Is(err, store.ErrInvalidInput) {
		t.Errorf("negative limit: %v, want ErrInvalidInput", err)
	}
	// Data is stored canonically; large payloads survive.
	big := strings.Repeat("x", 40<<10)
	mustUpdate(t, st, "r", func(*store.Snapshot) (*store.Change, error) {
		return &store.Change{Events: []store.NewEvent{
			{Type: "canon", At: t0, Data: json.RawMessage(`{ "z": 1, "a": {"y": [1, 2.50, "<&>"], "b": null}, "m": "\u00e9\n" }`)},
			{Type: "big", At: t0, Data: json.RawMessage(`{"pad":"` + big + `"}`)},
			{Type: "null", At: t0},
		}}, nil
	})
	got, err := st.Events(ctx, "r", 3, 0)
	if err != nil || len(got) != 3 {
		t.Fatalf("Events: %v, %v", got, err)
	}
	if string(got[0].Data) != `{"a":{"b":null,"y":[1,2.50,"<&>"]},"m":"é\n","z":1}` || len(got[1].Data) != len(big)+10 || string(got[2].Data) != "null" {
		t.Errorf("stored data: %s / %d bytes / %s", got[0].Data, len(got[1].Data), got[2].Data)
	}
}

func (s suite) event(t *testing.T) {
	ctx := context.Background()
	st := s.newStore(t)
	mustCreate(t, st, "r", `{}`, 2)
	for i := range 6 {
		mustUpdate(t, st, "r", write(`{}`, i%3))
	}
	all, err := st.Events(ctx, "r", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range all {
		got, err := st.Event(ctx, "r", want.Seq)
		if err != nil || got.Seq != want.Seq || got.Hash != want.Hash || got.PrevHash != want.PrevHash || got.Type != want.Type ||
			!bytes.Equal(got.Data, want.Data) || !got.At.Equal(want.At) || got.Begin != want.Begin {
			t.Errorf("Event(%d) = %+v, %v; Events has %+v", want.Seq, got, err, want)
		}
	}
	for _, seq := range []int64{0, -1, int64(len(all)) + 1} {
		if _, err := st.Event(ctx, "r", seq); !errors.Is(err, store.ErrSeqOutOfRange) {
			t.Errorf("Event(%d): %v, want ErrSeqOutOfRange", seq, err)
		}
	}
}

func (s suite) list(t *testing.T) {
	ctx := context.Background()
	st := s.newStore(t)
	if runs, err := st.List(ctx); err != nil || len(runs) != 0 {
		t.Fatalf("List of an empty store: %v, %v", runs, err)
	}
	for _, id := range []string{"b", "a", "c-1"} {
		mustCreate(t, st, id, `{}`, 1)
	}
	h := mustUpdate(t, st, "b", write(`{}`, 2))
	runs, err := st.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range runs {
		ids = append(ids, r.ID)
		if r.UpdatedAt.IsZero() {
			t.Errorf("run %s: zero UpdatedAt", r.ID)
		}
		if want := mustLoad(t, st, r.ID).Head; r.Head != want {
			t.Errorf("run %s: List head %+v, Load head %+v", r.ID, r.Head, want)
		}
	}
	if !slices.Equal(ids, []string{"a", "b", "c-1"}) {
		t.Errorf("List = %v, want sorted ids", ids)
	}
	if runs[1].Head != h {
		t.Errorf("List does not show b's update: %+v", runs[1])
	}
}

func (s suite) summary(t *testing.T) {
	ctx := context.Background()
	st := s.newStore(t)
	mustCreate(t, st, "r", `{"d":1}`, 1)
	listed := func() store.RunInfo {
		runs, err := st.List(ctx)
		if err != nil || len(runs) != 1 {
			t.Fatalf("List: %v, %v", runs, err)
		}
		return runs[0]
	}
	if r := listed(); r.Summary != nil {
		t.Errorf("summary before any was written: %s", r.Summary)
	}
	mustUpdate(t, st, "r", func(*store.Snapshot) (*store.Change, error) {
		return &store.Change{Summary: json.RawMessage("{\n  \"status\": \"running\",\n  \"waiting\": [\"g1\"]\n}")}, nil
	})
	want := `{"status":"running","waiting":["g1"]}`
	r := listed()
	if string(r.Summary) != want {
		t.Errorf("listed summary %s, want %s (compacted)", r.Summary, want)
	}
	if snap := mustLoad(t, st, "r"); string(snap.Summary) != want || string(snap.State) != `{"d":1}` || snap.Head.Seq != 1 {
		t.Errorf("a summary-only update: %+v", snap)
	}
	// A nil Summary keeps it; a new one replaces it.
	before := r.UpdatedAt
	mustUpdate(t, st, "r", write(`{"d":2}`, 1))
	if r := listed(); string(r.Summary) != want || r.UpdatedAt.Before(before) {
		t.Errorf("a nil summary changed it: %s", r.Summary)
	}
	var seen string
	mustUpdate(t, st, "r", func(cur *store.Snapshot) (*store.Change, error) {
		seen = string(cur.Summary)
		return &store.Change{Summary: json.RawMessage(`{"status":"completed"}`)}, nil
	})
	if seen != want {
		t.Errorf("fn saw summary %s, want %s", seen, want)
	}
	if r := listed(); string(r.Summary) != `{"status":"completed"}` {
		t.Errorf("summary not replaced: %s", r.Summary)
	}
}

func (s suite) verify(t *testing.T) {
	ctx := context.Background()
	st := s.newStore(t)
	mustCreate(t, st, "v", `{}`, 2)
	mustUpdate(t, st, "v", write(`{"a":1}`, 3))
	mustUpdate(t, st, "v", func(*store.Snapshot) (*store.Change, error) { return &store.Change{State: []byte(`{"a":2}`)}, nil })
	rep := mustVerify(t, st, "v")
	snap := mustLoad(t, st, "v")
	if rep.RunID != "v" || rep.Head != snap.Head || rep.Events != 5 || rep.Writes != 2 || rep.StateBytes != len(`{"a":2}`) ||
		rep.HeadRecord != store.HeadRecordMatch || rep.Tail.Bytes != 0 || !rep.Tail.Chained || rep.Anchor != nil || len(rep.Checks) == 0 {
		t.Errorf("Verify = %+v", rep)
	}
	if _, err := st.Verify(ctx, "v", store.VerifyOptions{Head: "not-a-hash"}); !errors.Is(err, store.ErrInvalidInput) {
		t.Errorf("a malformed anchor: %v, want ErrInvalidInput", err)
	}
}

func (s suite) verifyAnchor(t *testing.T) {
	ctx := context.Background()
	st := s.newStore(t)
	heads := []store.Head{mustCreate(t, st, "a", `{}`, 1)}
	for range 4 {
		heads = append(heads, mustUpdate(t, st, "a", write(`{}`, 2)))
	}
	heads = append(heads, store.Head{Seq: 0, Hash: genesis("a")})
	for _, h := range heads {
		rep, err := st.Verify(ctx, "a", store.VerifyOptions{Head: h.Hash})
		if err != nil || rep.Anchor == nil || *rep.Anchor != h {
			t.Errorf("anchor %+v: %+v, %v", h, rep, err)
		}
	}
	wantCorrupt(t, "an anchor not on the chain", verifyErr(st, "a", strings.Repeat("ab", 32)), "", "not on the run's chain")
	wantCorrupt(t, "an anchor of another run", verifyErr(st, "a", genesis("b")), "", "not on the run's chain")
	wantCorrupt(t, "an anchor for a run that does not exist", verifyErr(st, "gone", heads[0].Hash), store.PartRun, "removed")
	if _, err := st.Verify(ctx, "gone", store.VerifyOptions{}); !errors.Is(err, store.ErrRunNotFound) {
		t.Errorf("a missing run without an anchor: %v, want ErrRunNotFound", err)
	}
}

func verifyErr(st store.Store, id, anchor string) error {
	_, err := st.Verify(context.Background(), id, store.VerifyOptions{Head: anchor})
	return err
}
