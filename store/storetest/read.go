package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/stratum-go/stratum/store"
)

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
	checkScan(t, st, runs)
}

// checkScan: a store.Scanner's ScanRuns hands out the runs of want (what
// List answered), in any order, and stops at fn's error, returning it.
func checkScan(t *testing.T, st store.Store, want []store.RunInfo) {
	t.Helper()
	sc, ok := st.(store.Scanner)
	if !ok {
		return
	}
	ctx := context.Background()
	var got []store.RunInfo
	if err := sc.ScanRuns(ctx, func(info store.RunInfo) error {
		if info.Summary != nil {
			info.Summary = slices.Clone(info.Summary) // only valid during the call
		}
		got = append(got, info)
		return nil
	}); err != nil {
		t.Fatalf("ScanRuns: %v", err)
	}
	slices.SortFunc(got, func(a, b store.RunInfo) int { return strings.Compare(a.ID, b.ID) })
	if len(got) != len(want) {
		t.Fatalf("ScanRuns gave %d runs, List %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.ID != w.ID || !g.UpdatedAt.Equal(w.UpdatedAt) || g.Head != w.Head || !bytes.Equal(g.Summary, w.Summary) || (g.Summary == nil) != (w.Summary == nil) {
			t.Errorf("ScanRuns: %+v (summary %q)\nList:     %+v (summary %q)", g, g.Summary, w, w.Summary)
		}
	}
	stop := errors.New("stop")
	calls := 0
	err := sc.ScanRuns(ctx, func(store.RunInfo) error { calls++; return stop })
	if len(want) > 0 && (err != stop || calls != 1) {
		t.Errorf("ScanRuns stopped by fn: %v after %d calls, want fn's error after 1", err, calls)
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
		checkScan(t, st, runs)
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
