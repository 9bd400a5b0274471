package storetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stratum-go/stratum/store"
)

// tamperRun builds run "t": a Create and seven updates, recording the head
// and restore points of each write.
type tamperRun struct {
	st    store.Store
	tm    Tamperer
	heads []store.Head // heads[i] after write i (0: Create)
}

func (s suite) buildTamperRun(t *testing.T, tm Tamperer, st store.Store, saveAt int, parts ...string) (*tamperRun, func() error) {
	t.Helper()
	r := &tamperRun{st: st, tm: tm}
	r.heads = append(r.heads, mustCreate(t, st, "t", `{"w":0}`, 2))
	var restore func() error
	for i := 1; i <= 7; i++ {
		if i == saveAt {
			var err error
			if restore, err = tm.SaveParts("t", parts...); err != nil {
				t.Fatal(err)
			}
		}
		r.heads = append(r.heads, mustUpdate(t, st, "t", func(cur *store.Snapshot) (*store.Change, error) {
			return &store.Change{State: fmt.Appendf(nil, `{"w":%d}`, i), Summary: fmt.Appendf(nil, `{"w":%d}`, i), Events: events("result", int(cur.Head.Seq)+1, 1+i%2)}, nil
		}))
	}
	return r, restore
}

func (r *tamperRun) last() store.Head { return r.heads[len(r.heads)-1] }

// flipData changes a digit of a stored line's data.
func flipData(line []byte) []byte {
	i := bytes.Index(line, []byte(`"i":`)) + 4
	line[i] = '0' + (line[i]-'0'+1)%10
	return line
}

// forgedLine is a well-formed event line after prev with a correct hash of
// its own, computed as docs/storage.md defines it: what someone who can
// write the log and has read the documentation can produce.
func forgedLine(prev store.Head) []byte {
	body := fmt.Sprintf(`{"at":"2026-03-01T12:00:00Z","data":{"forged":true},"prevHash":"%s","seq":%d,"type":"forged"}`, prev.Hash, prev.Seq+1)
	sum := sha256.Sum256([]byte(body))
	line := strings.Replace(body, `,"prevHash":`, `,"hash":"`+hex.EncodeToString(sum[:])+`","prevHash":`, 1)
	return []byte(line + "\n")
}

// forgedLineLike is a well-formed event line after prev, with a hash of
// its own, exactly as long as orig (and ending in a newline when orig
// does), so that only the chain can tell it from the line it replaces.
func forgedLineLike(orig []byte, prev store.Head) []byte {
	nl := bytes.HasSuffix(orig, []byte("\n"))
	build := func(pad int) []byte {
		body := fmt.Sprintf(`{"at":"2026-03-01T12:00:00Z","data":{"p":"%s"},"prevHash":"%s","seq":%d,"type":"forged"}`, strings.Repeat("x", pad), prev.Hash, prev.Seq+1)
		sum := sha256.Sum256([]byte(body))
		line := strings.Replace(body, `,"prevHash":`, `,"hash":"`+hex.EncodeToString(sum[:])+`","prevHash":`, 1)
		if nl {
			line += "\n"
		}
		return []byte(line)
	}
	return build(max(0, len(orig)-len(build(0))))
}

// refused checks that Load, Update and Verify all refuse the run as
// corrupt (part, text), and that the refused Update wrote nothing.
func refused(t *testing.T, st store.Store, part, text string) {
	t.Helper()
	ctx := context.Background()
	_, errL := st.Load(ctx, "t")
	wantCorrupt(t, "Load", errL, part, text)
	_, errU := st.Update(ctx, "t", func(*store.Snapshot) (*store.Change, error) {
		t.Error("Update ran fn on a corrupt run")
		return &store.Change{Events: events("x", 1, 1)}, nil
	})
	wantCorrupt(t, "Update", errU, part, text)
	_, errV := st.Verify(ctx, "t", store.VerifyOptions{})
	wantCorrupt(t, "Verify", errV, part, text)
	_, errL2 := st.Load(ctx, "t")
	wantCorrupt(t, "Load after the refused Update", errL2, part, text)
}

func (s suite) tamper(t *testing.T) {
	if _, ok := s.newStore(t).(Tamperer); !ok {
		t.Skip("the store does not implement storetest.Tamperer")
	}
	ctx := context.Background()
	fresh := func(t *testing.T) (store.Store, Tamperer) {
		st := s.newStore(t)
		return st, st.(Tamperer)
	}

	t.Run("edit an interior event", func(t *testing.T) {
		st, tm := fresh(t)
		r, _ := s.buildTamperRun(t, tm, st, 0)
		if err := tm.TamperEvent("t", 3, flipData); err != nil {
			t.Fatal(err)
		}
		_, err := st.Verify(ctx, "t", store.VerifyOptions{})
		wantCorrupt(t, "Verify", err, store.PartEvents, "")
		var ce *store.CorruptError
		if errors.As(err, &ce) && ce.Seq != 3 {
			t.Errorf("Verify names seq %d, want 3", ce.Seq)
		}
		_, err = st.Event(ctx, "t", 3)
		wantCorrupt(t, "Event(3)", err, store.PartEvents, "")
		_, err = st.Events(ctx, "t", 0, 0)
		wantCorrupt(t, "Events from 0", err, store.PartEvents, "")
		if snap, err := st.Load(ctx, "t"); err != nil || snap.Head != r.last() {
			t.Errorf("Load checks only the head, which is intact: %v", err)
		}
		if _, err := st.Events(ctx, "t", 3, 0); err != nil {
			t.Errorf("Events after the damage: %v", err)
		}
		// Pages that stop before the head: one holding the damage is
		// refused, the ones before and after it are not.
		for _, p := range []struct {
			after int64
			limit int
			bad   bool
		}{{0, 2, false}, {1, 2, true}, {2, 1, true}, {0, 3, true}, {3, 1, false}} {
			_, err := st.Events(ctx, "t", p.after, p.limit)
			if p.bad {
				wantCorrupt(t, fmt.Sprintf("Events(%d, %d)", p.after, p.limit), err, store.PartEvents, "")
			} else if err != nil {
				t.Errorf("Events(%d, %d) beside the damage: %v", p.after, p.limit, err)
			}
		}
	})

	t.Run("relink a page", func(t *testing.T) {
		// An event replaced by one with a hash of its own breaks the link
		// to the event after it: a page starting just after the forgery
		// is refused.
		st, tm := fresh(t)
		s.buildTamperRun(t, tm, st, 0)
		evs, err := st.Events(ctx, "t", 0, 0)
		if err != nil || len(evs) < 4 {
			t.Fatalf("Events: %d, %v", len(evs), err)
		}
		if err := tm.TamperEvent("t", 3, func(orig []byte) []byte { return forgedLineLike(orig, store.Head{Seq: 2, Hash: evs[1].Hash}) }); err != nil {
			t.Fatal(err)
		}
		_, err = st.Events(ctx, "t", 3, 1)
		wantCorrupt(t, "Events(3, 1)", err, store.PartEvents, "")
		_, err = st.Events(ctx, "t", 2, 2)
		wantCorrupt(t, "Events(2, 2)", err, store.PartEvents, "")
	})

	t.Run("edit the head event", func(t *testing.T) {
		st, tm := fresh(t)
		r, _ := s.buildTamperRun(t, tm, st, 0)
		if err := tm.TamperEvent("t", r.last().Seq, flipData); err != nil {
			t.Fatal(err)
		}
		refused(t, st, store.PartEvents, "")
	})

	for _, seq := range []int64{4, 0} {
		name := "delete an interior event"
		if seq == 0 {
			name = "delete the head event"
		}
		t.Run(name, func(t *testing.T) {
			st, tm := fresh(t)
			r, _ := s.buildTamperRun(t, tm, st, 0)
			if seq == 0 {
				seq = r.last().Seq
			}
			if err := tm.TamperEvent("t", seq, func([]byte) []byte { return nil }); err != nil {
				t.Fatal(err)
			}
			refused(t, st, store.PartEvents, "")
		})
	}

	t.Run("append garbage", func(t *testing.T) {
		st, tm := fresh(t)
		s.buildTamperRun(t, tm, st, 0)
		tm.AppendLog("t", []byte("garbage, no event\n"))
		refused(t, st, store.PartEvents, "not what one interrupted write can leave")
	})

	t.Run("append a forged line that does not chain", func(t *testing.T) {
		st, tm := fresh(t)
		r, _ := s.buildTamperRun(t, tm, st, 0)
		tm.AppendLog("t", forgedLine(r.heads[3]))
		refused(t, st, store.PartEvents, "does not continue the chain")
	})

	t.Run("append two writes", func(t *testing.T) {
		st, tm := fresh(t)
		r, _ := s.buildTamperRun(t, tm, st, 0)
		one := forgedLine(r.last())
		var d struct{ Hash string }
		json.Unmarshal(one, &d)
		two := strings.Replace(string(forgedLine(store.Head{Seq: r.last().Seq + 1, Hash: d.Hash})), `"data"`, `"begin":true,"data"`, 1)
		sum := sha256.Sum256([]byte(cutHash(two)))
		two = strings.Replace(two, hashOf(two), hex.EncodeToString(sum[:]), 1)
		tm.AppendLog("t", append(one, two...))
		refused(t, st, store.PartEvents, "more than one write")
	})

	t.Run("append a forged line that chains", func(t *testing.T) {
		// Indistinguishable from what an interrupted write leaves: it is
		// never acknowledged, is reported, and the next write keeps it
		// aside with a repair event.
		st, tm := fresh(t)
		r, _ := s.buildTamperRun(t, tm, st, 0)
		line := forgedLine(r.last())
		tm.AppendLog("t", line)
		checkRepaired(t, st, r.last(), line, 1)
	})

	t.Run("interrupted write", func(t *testing.T) {
		// The events of a write are stored but neither its state nor its
		// head record: what a crash between the two leaves.
		st, tm := fresh(t)
		r, _ := s.buildTamperRun(t, tm, st, 0)
		restore, err := tm.SaveParts("t", store.PartState, store.PartHead)
		if err != nil {
			t.Fatal(err)
		}
		mustUpdate(t, st, "t", write(`{"w":"lost"}`, 3))
		if err := restore(); err != nil {
			t.Fatal(err)
		}
		checkRepaired(t, st, r.last(), nil, 3)
	})

	rollbacks := []struct {
		name   string
		saveAt int
		parts  []string
		part   string
		text   string
	}{
		{"roll back the state by one write", 7, []string{store.PartState}, store.PartState, "older than the run's head record"},
		{"roll back the state by many writes", 2, []string{store.PartState}, store.PartState, "older than the run's head record"},
		{"roll back the events", 3, []string{store.PartEvents}, store.PartEvents, ""},
		{"roll back state and events to an earlier consistent pair", 3, []string{store.PartState, store.PartEvents}, store.PartState, "older than the run's head record"},
		{"roll back the head record by many writes", 3, []string{store.PartHead}, store.PartHead, "rolled back"},
	}
	for _, tc := range rollbacks {
		t.Run(tc.name, func(t *testing.T) {
			st, tm := fresh(t)
			_, restore := s.buildTamperRun(t, tm, st, tc.saveAt, tc.parts...)
			if err := restore(); err != nil {
				t.Fatal(err)
			}
			refused(t, st, tc.part, tc.text)
		})
	}

	t.Run("roll back the head record by one write", func(t *testing.T) {
		// What a crash after the state was durable leaves: completed by
		// the next Load.
		st, tm := fresh(t)
		r, restore := s.buildTamperRun(t, tm, st, 7, store.PartHead)
		restore()
		if rep := mustVerify(t, st, "t"); rep.HeadRecord != store.HeadRecordBehind || rep.Head != r.last() {
			t.Errorf("Verify = %+v, want the head record reported one write behind", rep)
		}
		mustLoad(t, st, "t")
		if rep := mustVerify(t, st, "t"); rep.HeadRecord != store.HeadRecordMatch {
			t.Errorf("after Load: head record %s, want it completed", rep.HeadRecord)
		}
		runs, _ := st.List(ctx)
		if len(runs) != 1 || runs[0].Head != r.last() || string(runs[0].Summary) != `{"w":7}` {
			t.Errorf("List after the record was completed: %+v", runs)
		}
		checkScan(t, st, runs)
	})

	t.Run("roll back everything", func(t *testing.T) {
		// Consistent to every local check: caught only against an anchor.
		st, tm := fresh(t)
		r, restore := s.buildTamperRun(t, tm, st, 4, store.PartState, store.PartEvents, store.PartHead)
		restore()
		if rep := mustVerify(t, st, "t"); rep.Head != r.heads[3] {
			t.Errorf("a consistent rollback verifies locally at %+v, want %+v", rep.Head, r.heads[3])
		}
		wantCorrupt(t, "Verify with the last head as anchor", verifyErr(st, "t", r.last().Hash), store.PartEvents, "not on the run's chain")
		if err := verifyErr(st, "t", r.heads[2].Hash); err != nil {
			t.Errorf("an anchor from before the rollback: %v", err)
		}
	})

	t.Run("remove the run", func(t *testing.T) {
		st, tm := fresh(t)
		s.buildTamperRun(t, tm, st, 0)
		if err := tm.RemoveRun("t", false); err != nil {
			t.Fatal(err)
		}
		refused(t, st, store.PartRun, "removed")
		_, err := st.Events(ctx, "t", 0, 0)
		wantCorrupt(t, "Events", err, store.PartRun, "removed")
		_, err = st.Event(ctx, "t", 1)
		wantCorrupt(t, "Event", err, store.PartRun, "removed")
		if _, err := st.Create(ctx, "t", store.Change{State: []byte(`{}`)}); !errors.Is(err, store.ErrRunExists) {
			t.Errorf("Create over a removed run: %v, want ErrRunExists", err)
		}
		runs, _ := st.List(ctx)
		if len(runs) != 1 || runs[0].ID != "t" {
			t.Errorf("List of a removed run: %+v, want it listed", runs)
		}
		checkScan(t, st, runs)
	})

	t.Run("remove the run and its head record", func(t *testing.T) {
		st, tm := fresh(t)
		r, _ := s.buildTamperRun(t, tm, st, 0)
		tm.RemoveRun("t", true)
		if _, err := st.Load(ctx, "t"); !errors.Is(err, store.ErrRunNotFound) {
			t.Errorf("Load: %v", err)
		}
		wantCorrupt(t, "Verify with an anchor", verifyErr(st, "t", r.last().Hash), store.PartRun, "removed")
	})

	t.Run("rewrite consistently", func(t *testing.T) {
		st, tm := fresh(t)
		r, _ := s.buildTamperRun(t, tm, st, 0)
		tm.RemoveRun("t", true)
		// The same writes, with one result changed: every hash from there on
		// is recomputed.
		if _, err := st.Create(ctx, "t", store.Change{State: []byte(`{"w":0}`), Events: events("planned", 1, 2)}); err != nil {
			t.Fatal(err)
		}
		for i := 1; i <= 7; i++ {
			mustUpdate(t, st, "t", func(cur *store.Snapshot) (*store.Change, error) {
				evs := events("result", int(cur.Head.Seq)+1, 1+i%2)
				if i == 4 {
					evs[0].Data = json.RawMessage(`{"i":"forged"}`)
				}
				return &store.Change{State: fmt.Appendf(nil, `{"w":%d}`, i), Events: evs}, nil
			})
		}
		if rep := mustVerify(t, st, "t"); rep.Head.Seq != r.last().Seq {
			t.Fatalf("the rewrite has head %+v", rep.Head)
		}
		wantCorrupt(t, "Verify with an anchor", verifyErr(st, "t", r.last().Hash), store.PartEvents, "not on the run's chain")
	})
}

// checkRepaired checks a run whose log holds, after head, what one
// interrupted write leaves (n complete events; tail is its bytes when the
// caller knows them): invisible to Load, reported by Verify, and kept
// aside by the next write behind a repair event that fn's snapshot already
// counts.
func checkRepaired(t *testing.T, st store.Store, head store.Head, tail []byte, n int) {
	t.Helper()
	ctx := context.Background()
	if snap := mustLoad(t, st, "t"); snap.Head != head {
		t.Errorf("Load with a tail: head %+v, want %+v", snap.Head, head)
	}
	rep := mustVerify(t, st, "t")
	if rep.Head != head || !rep.Tail.Chained || rep.Tail.Events != n || rep.Tail.Bytes == 0 || (tail != nil && rep.Tail.Bytes != int64(len(tail))) {
		t.Errorf("Verify = %+v, want a chained tail of %d events", rep.Tail, n)
	}
	var seen store.Head
	h := mustUpdate(t, st, "t", func(cur *store.Snapshot) (*store.Change, error) {
		seen = cur.Head
		return &store.Change{Events: events("after", int(cur.Head.Seq)+1, 1)}, nil
	})
	if seen.Seq != head.Seq+1 || h.Seq != head.Seq+2 {
		t.Errorf("fn saw head %+v and the write ended at %+v; want the repair event at %d first", seen, h, head.Seq+1)
	}
	repair, err := st.Event(ctx, "t", head.Seq+1)
	if err != nil || repair.Type != store.EventRepair || repair.Hash != seen.Hash || !repair.Begin {
		t.Fatalf("event %d = %+v, %v; want the repair event fn's snapshot named", head.Seq+1, repair, err)
	}
	var d struct {
		Detail struct{ Kept []store.KeptTail }
		Run    string
		Seq    int64
	}
	if err := json.Unmarshal(repair.Data, &d); err != nil || len(d.Detail.Kept) != 1 || d.Run != "t" || d.Seq != head.Seq+1 {
		t.Fatalf("repair data %s (%v)", repair.Data, err)
	}
	k := d.Detail.Kept[0]
	if k.Bytes != rep.Tail.Bytes || k.Events != n || len(k.SHA256) != 64 || k.Name == "" {
		t.Errorf("kept %+v, want %d bytes and %d events", k, rep.Tail.Bytes, n)
	}
	if tail != nil {
		if sum := sha256.Sum256(tail); k.SHA256 != hex.EncodeToString(sum[:]) {
			t.Errorf("kept digest %s is not the tail's", k.SHA256)
		}
	}
	after := mustVerify(t, st, "t")
	if after.Tail.Bytes != 0 || len(after.Repairs) != 1 || after.Repairs[0].Seq != head.Seq+1 || after.Head != h {
		t.Errorf("Verify after the repair: %+v", after)
	}
}

// cutHash removes the hash member of a line (the hash input).
func cutHash(line string) string {
	h := hashOf(line)
	return strings.Replace(strings.TrimSuffix(line, "\n"), `,"hash":"`+h+`"`, "", 1)
}

func hashOf(line string) string {
	i := strings.Index(line, `"hash":"`) + len(`"hash":"`)
	return line[i : i+64]
}
