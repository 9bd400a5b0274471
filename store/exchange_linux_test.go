package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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

// readHead reads run r as read names ("Load", "Events" or "Event") and
// gives the head it read: the snapshot's or the number of events; Event
// reads the event at seq and gives seq.
func readHead(ctx context.Context, s *FileStore, read string, seq int64) (int64, error) {
	switch read {
	case "Load":
		snap, err := s.Load(ctx, "r")
		if err != nil {
			return 0, err
		}
		return snap.Head.Seq, nil
	case "Events":
		evs, err := s.Events(ctx, "r", 0, 0)
		return int64(len(evs)), err
	default:
		_, err := s.Event(ctx, "r", seq)
		return seq, err
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
				head, err := readHead(ctx, s, read, 1)
				if read == "Event" {
					head = int64(2 + disturbed) // the writer's events came after it
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

// A reader without the lock that finds the log past state.json's head (a
// writer has appended its events) looks at the temp, which that writer is
// rewriting in place: written, then truncated. Cut shorter between the
// reader's size and its read, the temp is a writer's, not a state, and the
// reader answers with the state in place (an engine fanout on tmpfs met
// "read the temporary state: EOF" from a Status beside its items'
// reports).
func TestStateReadersOfATempCutUnderTheRead(t *testing.T) {
	ctx := context.Background()
	for _, read := range []string{"Load", "Events", "Event"} {
		t.Run(read, func(t *testing.T) {
			s := newStore(t, nil)
			mustCreate(t, s, "r", `{"v":0}`, 1)
			if _, err := s.Update(ctx, "r", appendEvents(`{"v":1,"pad":"`+strings.Repeat("x", 500)+`"}`, 1)); err != nil {
				t.Fatal(err)
			}
			// A writer of v2 that has appended its events and not yet
			// exchanged the names: v2 written, then every file but the
			// log (the head record too) put back as it was.
			dir := s.runDir("r")
			files, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			paths := []string{s.headPath("r")}
			for _, f := range files {
				if f.Name() != eventsFile {
					paths = append(paths, filepath.Join(dir, f.Name()))
				}
			}
			before := map[string][]byte{}
			for _, path := range paths {
				if before[path], err = os.ReadFile(path); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := s.Update(ctx, "r", appendEvents(`{"v":2}`, 1)); err != nil {
				t.Fatal(err)
			}
			for path, data := range before {
				if err := os.WriteFile(path, data, filePerm); err != nil {
					t.Fatal(err)
				}
			}
			temp, cut := filepath.Join(dir, stateTemp), 0
			afterFileSized = func(path string) {
				if path != temp || cut > 0 {
					return
				}
				cut++
				// The writer's write of a shorter state, then its truncate.
				if err := os.WriteFile(temp, []byte(`{"check":"`), filePerm); err != nil {
					t.Error(err)
				}
			}
			t.Cleanup(func() { afterFileSized = nil })
			head, err := readHead(ctx, s, read, 2)
			afterFileSized = nil
			if err != nil {
				t.Fatalf("%s: %v", read, err)
			}
			if cut != 1 {
				t.Fatalf("%s: the temp was cut %d times under a read, want once", read, cut)
			}
			if head != 2 {
				t.Fatalf("%s: head %d, want 2 (the state in place)", read, head)
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

// killedWrite makes the update fn and then undoes what follows its state's
// fsync, as if the writer were killed before the exchange: the state it
// wrote stays in the temp file, never in place.
func killedWrite(t *testing.T, s *FileStore, id string, fn func(*Snapshot) (*Change, error)) {
	t.Helper()
	rec, _ := os.ReadFile(s.headPath(id))
	idx, _ := os.ReadFile(s.runPath(id, indexFile))
	if _, err := s.Update(context.Background(), id, fn); err != nil {
		t.Fatal(err)
	}
	if err := s.files(id).exchange(stateTemp, stateFile); err != nil {
		t.Fatal(err)
	}
	if rec != nil {
		os.WriteFile(s.headPath(id), rec, filePerm)
	} else {
		os.Remove(s.headPath(id))
	}
	os.WriteFile(s.runPath(id, indexFile), idx, filePerm)
}

// A reader's state file exchanged away, filled by a write killed before
// its exchange, read, then rewritten and exchanged back: the name check
// passes on a state never in place. What reads it then must not take it:
// Events finds it does not fit the log and reads again under the lock;
// Load, for a run without a head record (which would otherwise show it),
// reads under the lock. Either way the answer is the state in place, and
// the run verifies. (The killed write that appended events stands: the
// next write, under the lock, finds its state whole in the temp file and
// takes it, as after an exchange a power loss undid; docs/storage.md,
// "Replacing the state". The reader's answer still never shows it from
// the file read as it was exchanged away and back.)
func TestStateReadersOfAStateExchangedAwayAndBack(t *testing.T) {
	ctx := context.Background()
	stateOnly := func(doc string) func(*Snapshot) (*Change, error) {
		return func(*Snapshot) (*Change, error) { return &Change{State: []byte(doc)}, nil }
	}
	for _, tc := range []struct {
		name       string
		withEvents bool // the killed write appended events too
		noRecord   bool
		read       func(s *FileStore) (string, error) // the state read, or the head seq
	}{
		{"Events", true, false, func(s *FileStore) (string, error) {
			evs, err := s.Events(ctx, "r", 0, 0)
			return fmt.Sprint(len(evs)), err
		}},
		{"Load without a head record", false, true, func(s *FileStore) (string, error) {
			snap, err := s.Load(ctx, "r")
			if err != nil {
				return "", err
			}
			return string(snap.State), nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t, nil)
			mustCreate(t, s, "r", `{"v":0}`, 1)
			if _, err := s.Update(ctx, "r", appendEvents(`{"v":1}`, 1)); err != nil {
				t.Fatal(err)
			}
			if tc.noRecord {
				os.Remove(s.headPath("r"))
			}
			opened, done, inHook := false, false, false
			afterStateOpen = func() {
				if opened || inHook {
					return
				}
				opened, inHook = true, true
				defer func() { inHook = false }()
				if _, err := s.Update(ctx, "r", stateOnly(`{"v":2}`)); err != nil {
					t.Error(err)
				}
				if tc.withEvents {
					killedWrite(t, s, "r", appendEvents(`{"v":"never in place"}`, 1))
				} else {
					killedWrite(t, s, "r", stateOnly(`{"v":"never in place"}`))
				}
			}
			afterStateRead = func() {
				if done || inHook || !opened {
					return
				}
				done, inHook = true, true
				defer func() { inHook = false }()
				if _, err := s.Update(ctx, "r", appendEvents(`{"v":3}`, 1)); err != nil {
					t.Error(err)
				}
			}
			t.Cleanup(func() { afterStateOpen, afterStateRead = nil, nil })
			got, err := tc.read(s)
			afterStateOpen, afterStateRead = nil, nil
			if !done {
				t.Fatal("the writer did not run between the read and the name check")
			}
			if err != nil {
				t.Fatalf("%v", err)
			}
			if strings.Contains(got, "never in place") {
				t.Fatalf("read a state never in place: %s", got)
			}
			if _, err := s.Verify(ctx, "r", VerifyOptions{}); err != nil {
				t.Fatal(err)
			}
		})
	}
}
