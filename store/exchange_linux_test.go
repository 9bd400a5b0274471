package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
)

// inode is the inode number of path, 0 when it does not exist.
func inode(t *testing.T, path string) uint64 {
	t.Helper()
	info, err := os.Stat(path)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return info.Sys().(*syscall.Stat_t).Ino
}

// TestStateExchangeReusesFiles: on Linux an update exchanges the state's
// name with its temp's, so a run's updates create no file after the
// first: the state and the temp are the same two files throughout, and
// the temp holds the state before.
func TestStateExchangeReusesFiles(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, nil)
	mustCreate(t, s, "r", `{"v":0}`, 1)
	state, temp := filepath.Join(s.runDir("r"), stateFile), filepath.Join(s.runDir("r"), stateTemp)
	seen := map[uint64]bool{}
	for i := 1; i <= 6; i++ {
		if _, err := s.Update(ctx, "r", appendEvents(fmt.Sprintf(`{"v":%d}`, i), 1)); err != nil {
			t.Fatal(err)
		}
		seen[inode(t, state)], seen[inode(t, temp)] = true, true
		data, err := os.ReadFile(temp)
		if err != nil {
			t.Fatal(err)
		}
		if env, err := decodeEnvelope(data); err != nil || string(env.State) != fmt.Sprintf(`{"v":%d}`, i-1) {
			t.Fatalf("update %d: the temp is not the state before: %v %s", i, err, env.State)
		}
	}
	if len(seen) != 2 || seen[0] {
		t.Fatalf("the state and its temp were %d files over 6 updates, want the same 2", len(seen))
	}
}

// A reader without the lock whose state file is exchanged, or rewritten as
// the next temp, between its open and its read reads the state again:
// Load, Events and Event answer with a whole state, never corrupt. The
// hook runs the writer at that moment; "every lock-free read" leaves only
// the read under the shared lock to succeed.
func TestStateReadersOfAnExchangedState(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		torn  bool // the writer is then part way through the next temp
		times int  // lock-free reads disturbed
	}{
		{"replaced", false, 1},
		{"torn", true, 1},
		{"every lock-free read", true, stateReads},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, read := range []string{"Load", "Events", "Event"} {
				s := newStore(t, nil)
				mustCreate(t, s, "r", `{"v":0}`, 1)
				if _, err := s.Update(ctx, "r", appendEvents(`{"v":1}`, 1)); err != nil {
					t.Fatal(err)
				}
				temp := filepath.Join(s.runDir("r"), stateTemp)
				disturbed, inHook := 0, false
				afterStateOpen = func() {
					if inHook || disturbed == tc.times {
						return
					}
					inHook = true
					defer func() { inHook = false }()
					disturbed++
					if _, err := s.Update(ctx, "r", appendEvents(fmt.Sprintf(`{"v":%d}`, disturbed+1), 1)); err != nil {
						t.Error(err)
					}
					if tc.torn {
						if err := os.WriteFile(temp, []byte(`{"check":"torn`), filePerm); err != nil {
							t.Error(err)
						}
					}
				}
				t.Cleanup(func() { afterStateOpen = nil })
				var err error
				var head int64
				switch read {
				case "Load":
					var snap *Snapshot
					if snap, err = s.Load(ctx, "r"); err == nil {
						head = snap.Head.Seq
					}
				case "Events":
					var evs []Event
					if evs, err = s.Events(ctx, "r", 0, 0); err == nil {
						head = int64(len(evs))
					}
				case "Event":
					_, err = s.Event(ctx, "r", 1)
					head = 2 + int64(disturbed)
				}
				afterStateOpen = nil
				if err != nil {
					t.Fatalf("%s: %v", read, err)
				}
				if disturbed != tc.times {
					t.Fatalf("%s: the writer ran %d times, want %d", read, disturbed, tc.times)
				}
				if want := int64(2 + disturbed); head != want {
					t.Fatalf("%s: head %d, want %d (the state in place after the writer)", read, head, want)
				}
			}
		})
	}
}

// Readers without the lock beside a writer exchanging the state as fast
// as it can: every read is a whole state.
func TestStateReadersBesideAWriter(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, nil)
	mustCreate(t, s, "r", `{"v":0}`, 1)
	const updates = 150
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, 4)
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := s.Load(ctx, "r"); err != nil {
					errs <- err
					return
				}
				if _, err := s.Events(ctx, "r", 0, 1); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	for i := 1; i <= updates; i++ {
		if _, err := s.Update(ctx, "r", appendEvents(fmt.Sprintf(`{"v":%d,"pad":"%0*d"}`, i, i%7*300, 0), 1)); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// Where the names cannot be exchanged the state is renamed into place, as
// before exchanges: updates and reads are the same, and no temp file is
// left.
func TestStateReplacedByRenameWithoutExchange(t *testing.T) {
	exchangeOff = true
	t.Cleanup(func() { exchangeOff = false })
	ctx := context.Background()
	s := newStore(t, nil)
	mustCreate(t, s, "r", `{"v":0}`, 1)
	for i := 1; i <= 3; i++ {
		if _, err := s.Update(ctx, "r", appendEvents(fmt.Sprintf(`{"v":%d}`, i), 1)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(s.runDir("r"), stateTemp)); !os.IsNotExist(err) {
		t.Fatalf("a temp file after renames: %v", err)
	}
	snap, err := s.Load(ctx, "r")
	if err != nil || string(snap.State) != `{"v":3}` || snap.Head.Seq != 4 {
		t.Fatalf("Load: %v %s %d", err, snap.State, snap.Head.Seq)
	}
	if _, err := s.Verify(ctx, "r", VerifyOptions{}); err != nil {
		t.Fatal(err)
	}
}
