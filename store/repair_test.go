package store

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTailRepair: what an interrupted write can leave after the head is
// invisible to readers, reported by Verify, and kept aside by the next
// write, which records it in a store.repair event before its own events;
// fn already sees the head after that event. Nothing is deleted.
func TestTailRepair(t *testing.T) {
	tests := []struct {
		name   string
		tail   func(t *testing.T, s *FileStore) []byte
		events int
	}{
		{"two unacknowledged events", func(t *testing.T, s *FileStore) []byte { return unackedEvents(t, s, 2) }, 2},
		{"torn line", func(t *testing.T, s *FileStore) []byte { b := unackedEvents(t, s, 1); return b[:len(b)/2] }, 0},
		{"event then torn line", func(t *testing.T, s *FileStore) []byte { b := unackedEvents(t, s, 2); return b[:len(b)-10] }, 1},
		{"zeros (power loss)", func(t *testing.T, s *FileStore) []byte { return make([]byte, 4096) }, 0},
	}
	ctx := context.Background()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var repairs []Tail
			s := tamperRun(t, &Options{OnRepair: func(id string, r Tail) {
				if id != "t" {
					t.Errorf("repair of %s", id)
				}
				repairs = append(repairs, r)
			}})
			before, _ := s.Load(ctx, "t")
			tail := tc.tail(t, s)
			appendFile(t, s.pathOf(eventsFile), tail)
			logWithTail, _ := os.ReadFile(s.pathOf(eventsFile))

			snap, err := s.Load(ctx, "t")
			if err != nil || snap.Head != before.Head || string(snap.State) != string(before.State) {
				t.Fatalf("Load with a tail: %+v, %v", snap, err)
			}
			if evs, err := s.Events(ctx, "t", 0, 0); err != nil || len(evs) != 5 {
				t.Fatalf("Events with a tail: %d, %v", len(evs), err)
			}
			rep, err := s.Verify(ctx, "t", VerifyOptions{})
			if err != nil || rep.Tail.Bytes != int64(len(tail)) || rep.Tail.Events != tc.events || !rep.Tail.Chained || rep.Head != snap.Head {
				t.Fatalf("Verify = %+v, %v", rep, err)
			}

			var seen Head
			h, err := s.Update(ctx, "t", func(cur *Snapshot) (*Change, error) {
				seen = cur.Head
				return appendEvents(`{"step":3}`, 1)(cur)
			})
			if err != nil || seen.Seq != 6 || h.Seq != 7 {
				t.Fatalf("Update after the tail: fn saw %+v, got %+v, %v", seen, h, err)
			}
			kept, err := os.ReadFile(s.pathOf("tail-after-5.1.jsonl"))
			if err != nil || !bytes.Equal(kept, tail) {
				t.Fatalf("the tail was not kept aside byte for byte: %v", err)
			}
			if len(repairs) != 1 || repairs[0].Bytes != int64(len(tail)) || repairs[0].KeptAs != "tail-after-5.1.jsonl" {
				t.Errorf("OnRepair calls %+v", repairs)
			}
			// The log is the acknowledged part, then the repair and the
			// change: the tail's bytes left the log only for the file.
			logNow, _ := os.ReadFile(s.pathOf(eventsFile))
			if !bytes.HasPrefix(logNow, logWithTail[:len(logWithTail)-len(tail)]) {
				t.Error("acknowledged events changed")
			}
			rep, err = s.Verify(ctx, "t", VerifyOptions{})
			if err != nil || rep.Events != 7 || rep.Tail.Bytes != 0 || len(rep.Repairs) != 1 || rep.Repairs[0].Seq != 6 || rep.Repairs[0].Kept[0].Bytes != int64(len(tail)) {
				t.Fatalf("Verify after the repair: %+v, %v", rep, err)
			}
			evs, _ := s.Events(ctx, "t", 5, 0)
			if len(evs) != 2 || evs[0].Type != EventRepair || !evs[0].Begin || evs[0].Hash != seen.Hash || evs[1].Type != "result" || evs[1].Begin {
				t.Fatalf("events after the head = %+v", evs)
			}
			var d repairData
			if err := json.Unmarshal(evs[0].Data, &d); err != nil || d.Run != "t" || d.Seq != 6 || d.Detail.Kept[0].Events != tc.events || d.Detail.Kept[0].Torn != tailTorn(tail) {
				t.Errorf("repair data %s (%v)", evs[0].Data, err)
			}
		})
	}
}

// TestTailRefused: data after the head that no interrupted write can
// leave makes the run corrupt for every reader and writer, and nothing is
// written to it (no truncation, no repair) until a person decides.
func TestTailRefused(t *testing.T) {
	tests := []struct {
		name string
		tail func(t *testing.T, s *FileStore) []byte
		text string
	}{
		{"a line that does not chain", func(t *testing.T, s *FileStore) []byte { return []byte("{\"forged\":true}\n") }, "not an event of this run"},
		{"a chained event then junk", func(t *testing.T, s *FileStore) []byte { return append(unackedEvents(t, s, 1), "junk\n"...) }, "line 2 after the head"},
		{"two writes", func(t *testing.T, s *FileStore) []byte { return twoWrites(t, s) }, "more than one write"},
		{"a write then a torn line", func(t *testing.T, s *FileStore) []byte {
			b := twoWrites(t, s)
			return b[:len(b)-5]
		}, ""},
		{"an event of another seq", func(t *testing.T, s *FileStore) []byte {
			w, _ := encodeWrite("t", Head{Seq: 9, Hash: genesisHash("t")}, nil, []NewEvent{ev("x", 1)})
			return w.lines
		}, "does not continue the chain"},
	}
	ctx := context.Background()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := tamperRun(t, nil)
			appendFile(t, s.pathOf(eventsFile), tc.tail(t, s))
			before := runFiles(t, s, "t")
			_, errL := s.Load(ctx, "t")
			_, errU := s.Update(ctx, "t", func(*Snapshot) (*Change, error) { t.Error("fn ran"); return nil, nil })
			_, errV := s.Verify(ctx, "t", VerifyOptions{})
			for op, err := range map[string]error{"Load": errL, "Update": errU, "Verify": errV} {
				wantCorrupt(t, op, err, corruptWant{PartEvents, 6, tc.text})
			}
			if after := runFiles(t, s, "t"); !mapsEqual(before, after) {
				t.Error("a refused write changed the run's files")
			}
		})
	}
}

// twoWrites encodes two writes after the head, as only two interrupted
// writes (impossible: each repairs the last) or a forger could leave.
func twoWrites(t *testing.T, s *FileStore) []byte {
	snap, err := s.Load(context.Background(), "t")
	if err != nil {
		t.Fatal(err)
	}
	w1, _ := encodeWrite("t", snap.Head, nil, []NewEvent{ev("a", 1)})
	w2, _ := encodeWrite("t", w1.head, nil, []NewEvent{ev("b", 2), ev("c", 3)})
	return append(w1.lines, w2.lines...)
}

// TestCrashBetweenWrites reproduces the exact on-disk result of an Update
// that appended its events and died before replacing the state: the state
// file and head record of before plus the log of after.
func TestCrashBetweenWrites(t *testing.T) {
	ctx := context.Background()
	s := tamperRun(t, nil)
	oldState, _ := os.ReadFile(s.pathOf(stateFile))
	oldHead, _ := os.ReadFile(s.headPath("t"))
	old, _ := s.Load(ctx, "t")
	if _, err := s.Update(ctx, "t", appendEvents(`{"step":"new"}`, 3)); err != nil {
		t.Fatal(err)
	}
	writeFile(t, s.pathOf(stateFile), oldState) // the replace never happened
	writeFile(t, s.headPath("t"), oldHead)
	snap, err := s.Load(ctx, "t")
	if err != nil || snap.Head != old.Head || string(snap.State) != `{"step":2}` {
		t.Fatalf("Load = %+v, %v; want the old acknowledged run", snap, err)
	}
	rep, err := s.Verify(ctx, "t", VerifyOptions{})
	if err != nil || rep.Tail.Events != 3 || !rep.Tail.Chained {
		t.Fatalf("Verify = %+v, %v", rep, err)
	}
	h, err := s.Update(ctx, "t", appendEvents(`{"step":"retry"}`, 1))
	if err != nil || h.Seq != 7 {
		t.Fatalf("retry: %+v, %v", h, err)
	}
	if rep, err := s.Verify(ctx, "t", VerifyOptions{}); err != nil || rep.Events != 7 || rep.Tail.Bytes != 0 || len(rep.Repairs) != 1 || rep.Repairs[0].Kept[0].Events != 3 {
		t.Fatalf("Verify after retry = %+v, %v", rep, err)
	}
}

// TestCrashAfterStateReplace: an Update that died after its state was
// durable but before its head record leaves the record one write behind;
// Load completes it (when the lock is free), and so does the next write.
func TestCrashAfterStateReplace(t *testing.T) {
	ctx := context.Background()
	for _, finish := range []string{"Load", "Update"} {
		t.Run(finish, func(t *testing.T) {
			s := tamperRun(t, nil)
			oldHead, _ := os.ReadFile(s.headPath("t"))
			h, err := s.Update(ctx, "t", func(*Snapshot) (*Change, error) {
				return &Change{State: []byte(`{"step":3}`), Summary: []byte(`{"s":3}`), Events: []NewEvent{ev("r", 9)}}, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, s.headPath("t"), oldHead)
			if rep, err := s.Verify(ctx, "t", VerifyOptions{}); err != nil || rep.HeadRecord != HeadRecordBehind {
				t.Fatalf("Verify = %+v, %v", rep, err)
			}
			if runs, _ := s.List(ctx); runs[0].Head == h {
				t.Fatal("the test did not roll the record back")
			}
			switch finish {
			case "Load":
				if snap, err := s.Load(ctx, "t"); err != nil || snap.Head != h {
					t.Fatalf("Load = %+v, %v", snap, err)
				}
			case "Update":
				if h, err = s.Update(ctx, "t", appendEvents(`{"step":4}`, 1)); err != nil {
					t.Fatal(err)
				}
			}
			runs, _ := s.List(ctx)
			if runs[0].Head != h || string(runs[0].Summary) != `{"s":3}` {
				t.Errorf("List after %s: %+v, want head %+v", finish, runs[0], h)
			}
			if rep, err := s.Verify(ctx, "t", VerifyOptions{}); err != nil || rep.HeadRecord != HeadRecordMatch {
				t.Errorf("Verify = %+v, %v", rep, err)
			}
		})
	}
}

// TestInterruptedRepair: a repair that kept the tail aside but did not
// complete its write (killed after the kept file, after cutting the log,
// or after appending) is finished by the next write, which records every
// kept file once.
func TestInterruptedRepair(t *testing.T) {
	ctx := context.Background()
	for _, stage := range []string{"after keeping", "after cutting the log", "after appending"} {
		t.Run(stage, func(t *testing.T) {
			s := tamperRun(t, nil)
			acked, _ := os.ReadFile(s.pathOf(eventsFile))
			tail := unackedEvents(t, s, 2)
			appendFile(t, s.pathOf(eventsFile), tail)
			writeFile(t, s.pathOf(keptName(5, 1)), tail) // the kept file is whole (written, fsynced, renamed)
			switch stage {
			case "after cutting the log":
				writeFile(t, s.pathOf(eventsFile), acked)
			case "after appending": // the repair's own write, state not replaced
				snap, _ := s.Load(ctx, "t")
				pre := []NewEvent{repairEvent("t", 6, []KeptTail{keptTail(keptName(5, 1), tail, classifyTail(tail, snap.Head))}, t0)}
				w, _ := encodeWrite("t", snap.Head, pre, []NewEvent{ev("lost", 1)})
				writeFile(t, s.pathOf(eventsFile), append(bytes.Clone(acked), w.lines...))
			}
			if _, err := s.Load(ctx, "t"); err != nil {
				t.Fatalf("Load: %v", err)
			}
			rep, err := s.Verify(ctx, "t", VerifyOptions{})
			if err != nil || len(rep.Pending) != 1 {
				t.Fatalf("Verify = %+v, %v; want the pending kept file reported", rep, err)
			}
			h, err := s.Update(ctx, "t", appendEvents(`{"step":3}`, 1))
			if err != nil || h.Seq != 7 {
				t.Fatalf("Update: %+v, %v", h, err)
			}
			rep, err = s.Verify(ctx, "t", VerifyOptions{})
			if err != nil || len(rep.Repairs) != 1 || len(rep.Pending) != 0 {
				t.Fatalf("Verify = %+v, %v", rep, err)
			}
			kept := rep.Repairs[0].Kept
			want := 1
			if stage == "after appending" {
				want = 2 // the interrupted repair's own write is kept too
			}
			if len(kept) != want || kept[0].Name != keptName(5, 1) {
				t.Errorf("kept %+v, want %d files", kept, want)
			}
		})
	}
}

// TestKeptTailTampered: the data a repair kept aside is evidence; Verify
// checks it against the repair event's digest.
func TestKeptTailTampered(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		tamper func(path string)
		text   string
	}{
		{"removed", func(p string) { os.Remove(p) }, "cannot be read"},
		{"edited", func(p string) { b, _ := os.ReadFile(p); b[3] ^= 1; os.WriteFile(p, b, 0o600) }, "changed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tamperRun(t, nil)
			appendFile(t, s.pathOf(eventsFile), unackedEvents(t, s, 1))
			if _, err := s.Update(ctx, "t", appendEvents(`{}`, 1)); err != nil {
				t.Fatal(err)
			}
			tc.tamper(s.pathOf(keptName(5, 1)))
			_, err := s.Verify(ctx, "t", VerifyOptions{})
			wantCorrupt(t, "Verify", err, corruptWant{PartEvents, 6, tc.text})
		})
	}
}

func TestListReadsNoState(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, nil)
	if _, err := s.Create(ctx, "r", Change{State: []byte(`{"big":true}`), Summary: []byte(`{"status":"running"}`)}); err != nil {
		t.Fatal(err)
	}
	// List must answer from the head records alone: a state file and log
	// it cannot read make no difference.
	writeFile(t, filepath.Join(s.runDir("r"), stateFile), []byte("not a state file"))
	os.Remove(filepath.Join(s.runDir("r"), eventsFile))
	runs, err := s.List(ctx)
	if err != nil || len(runs) != 1 || string(runs[0].Summary) != `{"status":"running"}` || runs[0].Head.Hash != genesisHash("r") {
		t.Errorf("List = %+v, %v", runs, err)
	}
	if _, err := s.Load(ctx, "r"); !strings.Contains(err.Error(), "corrupt") {
		t.Errorf("Load: %v", err)
	}
}

// TestPermissions: every directory the store makes is 0700 and every file
// 0600 (a run's state can hold inputs and agent results), including head
// records, kept tails, the index and the lease.
func TestPermissions(t *testing.T) {
	ctx := context.Background()
	s := tamperRun(t, nil)
	appendFile(t, s.pathOf(eventsFile), unackedEvents(t, s, 1))
	if _, err := s.Update(ctx, "t", appendEvents(`{}`, 1)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AcquireLease(ctx, "t", "me", time.Hour); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	filepath.WalkDir(s.Root(), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		info, _ := d.Info()
		want := os.FileMode(filePerm)
		if d.IsDir() {
			want = dirPerm
		}
		if info.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", p, info.Mode().Perm(), want)
		}
		seen[d.Name()] = true
		return nil
	})
	for _, name := range []string{headsDir, "t", stateFile, eventsFile, indexFile, lockFile, leaseFile, keptName(5, 1)} {
		if !seen[name] {
			t.Errorf("the walk did not see %s", name)
		}
	}
}
