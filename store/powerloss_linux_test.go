package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// powerLost puts the run's files as a power loss can leave them after its
// last update, whose exchange of the two state files was never written
// back (an update no longer flushes the directory after its exchange,
// docs/storage.md, "Replacing the state"): the names swapped back, so
// state.json is the state before and .state.json.tmp the latest. With
// recordBehind the head record is the one before the update too (its
// flush is the next update's); the index, never flushed, goes back too.
func powerLost(t *testing.T, s *FileStore, id string, update func(*Snapshot) (*Change, error), recordBehind bool) {
	t.Helper()
	rec, err := os.ReadFile(s.headPath(id))
	if err != nil {
		t.Fatal(err)
	}
	idx, _ := os.ReadFile(s.runPath(id, indexFile))
	if _, err := s.Update(context.Background(), id, update); err != nil {
		t.Fatal(err)
	}
	if err := s.files(id).exchange(stateTemp, stateFile); err != nil {
		t.Fatal(err)
	}
	if recordBehind {
		if err := os.WriteFile(s.headPath(id), rec, filePerm); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(s.runPath(id, indexFile), idx, filePerm); err != nil {
		t.Fatal(err)
	}
}

// An acknowledged update whose exchange a power loss undid is still the
// run's latest write: every reader finds it in the temp file (Verify says
// so), Load puts it back under state.json, and the run goes on with no
// repair. Each reader is tried first, on a run of its own.
func TestUpdateSurvivesAnUndoneExchange(t *testing.T) {
	ctx := context.Background()
	for _, recordBehind := range []bool{false, true} {
		for _, first := range []string{"Load", "Events", "Event", "Verify", "Update"} {
			name := first
			if recordBehind {
				name += " with the head record behind"
			}
			t.Run(name, func(t *testing.T) {
				s := newStore(t, nil)
				mustCreate(t, s, "r", `{"v":0}`, 1)
				if _, err := s.Update(ctx, "r", appendEvents(`{"v":1}`, 2)); err != nil {
					t.Fatal(err)
				}
				powerLost(t, s, "r", appendEvents(`{"v":2}`, 2), recordBehind)
				const head = 5
				switch first {
				case "Load":
					snap, err := s.Load(ctx, "r")
					if err != nil {
						t.Fatal(err)
					}
					if string(snap.State) != `{"v":2}` || snap.Head.Seq != head {
						t.Fatalf("Load: %s at seq %d", snap.State, snap.Head.Seq)
					}
				case "Events":
					evs, err := s.Events(ctx, "r", 0, 0)
					if err != nil || len(evs) != head {
						t.Fatalf("Events: %d, %v", len(evs), err)
					}
				case "Event":
					if e, err := s.Event(ctx, "r", head); err != nil || e.Seq != head {
						t.Fatalf("Event: %+v, %v", e, err)
					}
				case "Verify":
					rep, err := s.Verify(ctx, "r", VerifyOptions{})
					if err != nil || !rep.StateFromTemp || rep.Head.Seq != head || rep.Tail.Bytes != 0 {
						t.Fatalf("Verify: %+v, %v", rep, err)
					}
				case "Update":
				}
				if _, err := s.Update(ctx, "r", appendEvents(`{"v":3}`, 1)); err != nil {
					t.Fatal(err)
				}
				rep, err := s.Verify(ctx, "r", VerifyOptions{})
				if err != nil || rep.StateFromTemp || rep.Head.Seq != head+1 || len(rep.Repairs) != 0 || rep.HeadRecord != HeadRecordMatch {
					t.Fatalf("after the next update: %+v, %v", rep, err)
				}
				data, err := os.ReadFile(s.runPath("r", stateFile))
				if env, derr := decodeEnvelope(data); err != nil || derr != nil || string(env.State) != `{"v":3}` {
					t.Fatalf("state.json after the next update: %s %v %v", data, err, derr)
				}
			})
		}
	}
}

// Load, lock free, puts a state found in the temp file back in place when
// the lock is free, as it completes a head record.
func TestLoadPutsTheLatestStateBack(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, nil)
	mustCreate(t, s, "r", `{"v":0}`, 1)
	powerLost(t, s, "r", appendEvents(`{"v":1}`, 1), true)
	if _, err := s.Load(ctx, "r"); err != nil {
		t.Fatal(err)
	}
	rep, err := s.Verify(ctx, "r", VerifyOptions{})
	if err != nil || rep.StateFromTemp || rep.HeadRecord != HeadRecordMatch || rep.Head.Seq != 2 {
		t.Fatalf("after Load: %+v, %v", rep, err)
	}
}

// After an undone exchange the next update writes over state.json's file
// (the older state), and a power loss can cut that write short: state.json
// is then torn, the latest acknowledged state is whole in the temp file,
// and the log may hold part of the torn write's events. The run loads at
// the acknowledged write, and the next update keeps the partial events
// aside. Without a head record to vouch for the temp's state, a torn
// state.json is reported as it always was.
func TestTornStateAfterAnUndoneExchange(t *testing.T) {
	ctx := context.Background()
	for _, withRecord := range []bool{true, false} {
		name := "with a head record"
		if !withRecord {
			name = "without a head record"
		}
		t.Run(name, func(t *testing.T) {
			s := newStore(t, nil)
			mustCreate(t, s, "r", `{"v":0}`, 1)
			powerLost(t, s, "r", appendEvents(`{"v":1}`, 2), false)
			// The torn write: part of its state over state.json, part of
			// its first event line after the head.
			if err := os.WriteFile(s.runPath("r", stateFile), []byte(`{"check":"0123`), filePerm); err != nil {
				t.Fatal(err)
			}
			f, err := os.OpenFile(s.runPath("r", eventsFile), os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString(`{"at":"2026-`)
			f.Close()
			if !withRecord {
				os.Remove(s.headPath("r"))
				_, err := s.Load(ctx, "r")
				if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "state.json") {
					t.Fatalf("Load without a record: %v, want the torn state.json reported", err)
				}
				return
			}
			snap, err := s.Load(ctx, "r")
			if err != nil {
				t.Fatal(err)
			}
			if string(snap.State) != `{"v":1}` || snap.Head.Seq != 3 {
				t.Fatalf("Load: %s at seq %d", snap.State, snap.Head.Seq)
			}
			if _, err := s.Update(ctx, "r", appendEvents(`{"v":2}`, 1)); err != nil {
				t.Fatal(err)
			}
			rep, err := s.Verify(ctx, "r", VerifyOptions{})
			if err != nil || len(rep.Repairs) != 1 || rep.Repairs[0].Kept[0].Torn != true || rep.Head.Seq != 5 {
				t.Fatalf("after the next update: %+v, %v", rep, err)
			}
		})
	}
}

// A write that fails after its flushes, before its exchange, leaves no
// whole state in the temp file: the next reader under the lock must not
// take the failed write for one a crash interrupted. Its events become a
// tail that the next update keeps aside.
func TestFailedWriteLeavesNothingToTake(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, nil)
	mustCreate(t, s, "r", `{"v":0}`, 1)
	if _, err := s.Update(ctx, "r", appendEvents(`{"v":1}`, 1)); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("injected")
	afterCommitSyncs = func() error { return boom }
	_, err := s.Update(ctx, "r", appendEvents(`{"v":"failed"}`, 1))
	afterCommitSyncs = nil
	if !errors.Is(err, boom) {
		t.Fatalf("Update: %v, want the injected failure", err)
	}
	rep, err := s.Verify(ctx, "r", VerifyOptions{})
	if err != nil || rep.StateFromTemp || rep.Tail.Events != 1 || rep.Head.Seq != 2 {
		t.Fatalf("Verify after the failed write: %+v, %v", rep, err)
	}
	snap, err := s.Load(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	if string(snap.State) != `{"v":1}` {
		t.Fatalf("Load: %s", snap.State)
	}
	if _, err := s.Update(ctx, "r", appendEvents(`{"v":2}`, 1)); err != nil {
		t.Fatal(err)
	}
	if rep, err := s.Verify(ctx, "r", VerifyOptions{}); err != nil || len(rep.Repairs) != 1 || rep.Head.Seq != 4 {
		t.Fatalf("after the next update: %+v, %v", rep, err)
	}
}

// After an undone exchange the next update writes over state.json's file;
// a power loss can leave that state whole while the log's append, or the
// head record's flush, did not reach the disk. state.json is then ahead of
// what the log or the record holds, and the temp holds the latest
// acknowledged state: that is the run's, state.json's bytes are kept
// aside (state.json.set-aside-<seq>), and whatever of the cut write's
// events reached the log is kept aside as a tail.
func TestWholeStateAheadAfterAnUndoneExchange(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name         string
		withLog      bool // the cut write's events reached the log
		recordBehind int  // how many writes the head record is behind the temp's
	}{
		{"log short", false, 0},
		{"log whole, head record two behind state.json", true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t, nil)
			mustCreate(t, s, "r", `{"v":0}`, 1)
			if _, err := s.Update(ctx, "r", appendEvents(`{"v":1}`, 1)); err != nil {
				t.Fatal(err)
			}
			recBefore, _ := os.ReadFile(s.headPath("r"))
			powerLost(t, s, "r", appendEvents(`{"v":2}`, 1), false)
			// The cut write, made on a copy of the run and brought back:
			// its state over state.json, its log only withLog.
			copyRoot := filepath.Join(t.TempDir(), "copy")
			if err := os.CopyFS(copyRoot, os.DirFS(s.root)); err != nil {
				t.Fatal(err)
			}
			c, err := NewFileStore(copyRoot, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Update(ctx, "r", appendEvents(`{"v":"cut"}`, 1)); err != nil {
				t.Fatal(err)
			}
			cut, err := os.ReadFile(c.runPath("r", stateFile))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(s.runPath("r", stateFile), cut, filePerm); err != nil {
				t.Fatal(err)
			}
			if tc.withLog {
				log, err := os.ReadFile(c.runPath("r", eventsFile))
				if err != nil {
					t.Fatal(err)
				}
				os.WriteFile(s.runPath("r", eventsFile), log, filePerm)
			}
			if tc.recordBehind > 0 {
				os.WriteFile(s.headPath("r"), recBefore, filePerm)
			}
			snap, err := s.Load(ctx, "r")
			if err != nil {
				t.Fatal(err)
			}
			if string(snap.State) != `{"v":2}` || snap.Head.Seq != 3 {
				t.Fatalf("Load: %s at seq %d, want the acknowledged {\"v\":2} at 3", snap.State, snap.Head.Seq)
			}
			if kept, err := os.ReadFile(s.runPath("r", stateFile+".set-aside-3")); err != nil || string(kept) != string(cut) {
				t.Fatalf("state.json was not kept aside: %v", err)
			}
			if _, err := s.Update(ctx, "r", appendEvents(`{"v":3}`, 1)); err != nil {
				t.Fatal(err)
			}
			rep, err := s.Verify(ctx, "r", VerifyOptions{})
			wantRepairs := 0
			if tc.withLog {
				wantRepairs = 1
			}
			if err != nil || len(rep.Repairs) != wantRepairs || rep.HeadRecord != HeadRecordMatch {
				t.Fatalf("after the next update: %+v, %v", rep, err)
			}
		})
	}
}

// A write that fails after creating the temp file (a run's first update)
// removes it: its name may not be on disk, and the next write creates it
// again and flushes the directory.
func TestFailedFirstWriteRemovesItsTemp(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, nil)
	mustCreate(t, s, "r", `{"v":0}`, 1)
	afterCommitSyncs = func() error { return errors.New("injected") }
	_, err := s.Update(ctx, "r", appendEvents(`{"v":"failed"}`, 1))
	afterCommitSyncs = nil
	if err == nil {
		t.Fatal("the injected failure did not fail the write")
	}
	if _, err := os.Stat(s.runPath("r", stateTemp)); !os.IsNotExist(err) {
		t.Fatalf("the temp this write created is still there: %v", err)
	}
}
