package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

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
