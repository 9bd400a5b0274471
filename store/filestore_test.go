package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofrs/flock"
)

func newStore(t testing.TB, opts *Options) *FileStore {
	t.Helper()
	s, err := NewFileStore(filepath.Join(t.TempDir(), "flows"), opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func ev(typ string, i int) NewEvent {
	return NewEvent{Type: typ, At: t0.Add(time.Duration(i) * time.Second), Data: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))}
}

func mustCreate(t testing.TB, s *FileStore, id string, state string, n int) Head {
	t.Helper()
	var evs []NewEvent
	for i := range n {
		evs = append(evs, ev("planned", i+1))
	}
	h, err := s.Create(context.Background(), id, Change{State: []byte(state), Events: evs})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// appendEvents is an Update that appends n events and sets the state.
func appendEvents(state string, n int) func(*Snapshot) (*Change, error) {
	return func(cur *Snapshot) (*Change, error) {
		c := &Change{State: []byte(state)}
		for i := range n {
			c.Events = append(c.Events, ev("result", int(cur.Head.Seq)+i+1))
		}
		return c, nil
	}
}

func TestCreateLoadEvents(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, nil)
	h := mustCreate(t, s, "r1", `{"status":"running"}`, 3)
	if h.Seq != 3 || !isHashHex(h.Hash) {
		t.Fatalf("head = %+v", h)
	}
	snap, err := s.Load(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if string(snap.State) != `{"status":"running"}` || snap.Head != h || snap.RunID != "r1" {
		t.Errorf("snapshot = %+v", snap)
	}
	all, err := s.Events(ctx, "r1", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 3 {
		t.Fatalf("%d events", len(all))
	}
	prev := genesisHash("r1")
	for i, e := range all {
		if e.Seq != int64(i+1) || e.Type != "planned" || e.PrevHash != prev || !e.At.Equal(t0.Add(time.Duration(i+1)*time.Second)) || string(e.Data) != fmt.Sprintf(`{"i":%d}`, i+1) {
			t.Errorf("event %d = %+v", i, e)
		}
		prev = e.Hash
	}
	if all[2].Hash != h.Hash {
		t.Error("last event hash is not the head")
	}

	cases := []struct {
		after   int64
		limit   int
		wantSeq []int64
	}{
		{0, 1, []int64{1}},
		{1, 0, []int64{2, 3}},
		{1, 1, []int64{2}},
		{2, 5, []int64{3}},
		{3, 0, nil},
	}
	for _, c := range cases {
		got, err := s.Events(ctx, "r1", c.after, c.limit)
		if err != nil {
			t.Fatalf("Events(%d,%d): %v", c.after, c.limit, err)
		}
		var seqs []int64
		for _, e := range got {
			seqs = append(seqs, e.Seq)
		}
		if !slices.Equal(seqs, c.wantSeq) {
			t.Errorf("Events(%d,%d) seqs = %v, want %v", c.after, c.limit, seqs, c.wantSeq)
		}
	}
	if _, err := s.Events(ctx, "r1", 4, 0); !errors.Is(err, ErrSeqOutOfRange) {
		t.Errorf("cursor beyond head: %v", err)
	}
	if _, err := s.Events(ctx, "r1", -1, 0); !errors.Is(err, ErrSeqOutOfRange) {
		t.Errorf("negative cursor: %v", err)
	}
	if _, err := s.Events(ctx, "r1", 0, -1); !errors.Is(err, ErrInvalidInput) {
		t.Errorf("negative limit: %v", err)
	}
}

func TestCreateRejects(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, nil)
	mustCreate(t, s, "r1", `{}`, 1)
	if _, err := s.Create(ctx, "r1", Change{State: []byte(`{}`)}); !errors.Is(err, ErrRunExists) {
		t.Errorf("second Create: %v", err)
	}
	if _, err := s.Create(ctx, "r2", Change{State: []byte(`{`)}); !errors.Is(err, ErrInvalidInput) {
		t.Errorf("bad state: %v", err)
	}
	if _, err := s.Create(ctx, "r3", Change{State: []byte(`{}`), Events: []NewEvent{{Type: "x"}}}); !errors.Is(err, ErrInvalidInput) {
		t.Errorf("bad event: %v", err)
	}
	for _, id := range []string{"r2", "r3"} {
		if _, err := s.Load(ctx, id); !errors.Is(err, ErrRunNotFound) {
			t.Errorf("refused Create left run %s: %v", id, err)
		}
	}
}

func TestConcurrentCreateOneWins(t *testing.T) {
	s := newStore(t, nil)
	var wins, exists atomic.Int32
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			_, err := s.Create(context.Background(), "same", Change{State: []byte(fmt.Sprintf(`{"by":%d}`, i)), Events: []NewEvent{ev("planned", i)}})
			switch {
			case err == nil:
				wins.Add(1)
			case errors.Is(err, ErrRunExists):
				exists.Add(1)
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if wins.Load() != 1 || exists.Load() != 7 {
		t.Fatalf("wins %d, exists %d", wins.Load(), exists.Load())
	}
	if rep, err := s.Verify(context.Background(), "same", VerifyOptions{}); err != nil || rep.Events != 1 {
		t.Fatalf("Verify: %+v, %v", rep, err)
	}
	left, _ := os.ReadDir(filepath.Join(s.Root(), stagingDir))
	if len(left) != 0 {
		t.Errorf("staging holds %d entries after the Creates", len(left))
	}
}

func TestCreateWithoutEvents(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, nil)
	h := mustCreate(t, s, "r0", `{"n":0}`, 0)
	if h != (Head{Seq: 0, Hash: genesisHash("r0")}) {
		t.Fatalf("head = %+v", h)
	}
	if evs, err := s.Events(ctx, "r0", 0, 0); err != nil || len(evs) != 0 {
		t.Fatalf("Events = %v, %v", evs, err)
	}
	h2, err := s.Update(ctx, "r0", appendEvents(`{"n":2}`, 2))
	if err != nil || h2.Seq != 2 {
		t.Fatalf("Update = %+v, %v", h2, err)
	}
	if rep, err := s.Verify(ctx, "r0", VerifyOptions{}); err != nil || rep.Head != h2 {
		t.Fatalf("Verify = %+v, %v", rep, err)
	}
}

func TestInvalidRunIDTouchesNothing(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, nil)
	bad := []string{"", ".", "..", "../x", "../../etc/passwd", "/abs", "a/b", `a\b`, "-x", "a.b", "a b", "a\x00b", "é", strings.Repeat("a", 129)}
	for _, id := range bad {
		checks := map[string]error{}
		_, checks["Create"] = s.Create(ctx, id, Change{State: []byte(`{}`)})
		_, checks["Update"] = s.Update(ctx, id, func(*Snapshot) (*Change, error) { return &Change{State: []byte(`{}`)}, nil })
		_, checks["Load"] = s.Load(ctx, id)
		_, checks["Events"] = s.Events(ctx, id, 0, 0)
		_, checks["Verify"] = s.Verify(ctx, id, VerifyOptions{})
		for name, err := range checks {
			if !errors.Is(err, ErrInvalidRunID) {
				t.Errorf("%s(%q) = %v, want ErrInvalidRunID", name, id, err)
			}
		}
	}
	if _, err := os.Stat(s.Root()); !os.IsNotExist(err) {
		t.Errorf("invalid ids created the root: %v", err)
	}
	if err := ValidateRunID(strings.Repeat("a", 128)); err != nil {
		t.Errorf("128-byte id refused: %v", err)
	}
	if err := ValidateRunID("3f2b8c1e-9a4d-4e2b-8f1a-0c9d8e7f6a5b"); err != nil {
		t.Errorf("UUID refused: %v", err)
	}
}

func TestNotFound(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, nil)
	mustCreate(t, s, "exists", `{}`, 1)
	called := false
	_, errU := s.Update(ctx, "nope", func(*Snapshot) (*Change, error) { called = true; return nil, nil })
	_, errL := s.Load(ctx, "nope")
	_, errE := s.Events(ctx, "nope", 0, 0)
	_, errV := s.Verify(ctx, "nope", VerifyOptions{})
	for name, err := range map[string]error{"Update": errU, "Load": errL, "Events": errE, "Verify": errV} {
		if !errors.Is(err, ErrRunNotFound) {
			t.Errorf("%s: %v, want ErrRunNotFound", name, err)
		}
	}
	if called {
		t.Error("Update called fn for a missing run")
	}
	if _, err := os.Stat(filepath.Join(s.Root(), "nope")); !os.IsNotExist(err) {
		t.Error("a lookup of a missing run created its directory")
	}
}

// runFiles returns the content of every file of a run except its lock.
func runFiles(t *testing.T, s *FileStore, id string) map[string]string {
	t.Helper()
	out := map[string]string{}
	entries, err := os.ReadDir(s.runDir(id))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() == lockFile {
			continue
		}
		b, err := os.ReadFile(filepath.Join(s.runDir(id), e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = string(b)
	}
	return out
}

func TestUpdate(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, nil)
	h0 := mustCreate(t, s, "r", `{"v":0}`, 2)

	var seen *Snapshot
	h1, err := s.Update(ctx, "r", func(cur *Snapshot) (*Change, error) {
		seen = cur
		return &Change{State: []byte(`{"v":1}`), Events: []NewEvent{ev("result", 3), ev("ready", 4)}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen.Head != h0 || string(seen.State) != `{"v":0}` || seen.RunID != "r" {
		t.Errorf("fn saw %+v", seen)
	}
	if h1.Seq != 4 {
		t.Errorf("head after update = %+v", h1)
	}
	snap, _ := s.Load(ctx, "r")
	if string(snap.State) != `{"v":1}` || snap.Head != h1 {
		t.Errorf("after update: %+v", snap)
	}

	// A state-only change keeps the head; a nil State keeps the document.
	h2, err := s.Update(ctx, "r", func(*Snapshot) (*Change, error) { return &Change{State: []byte(`{"v":2}`)}, nil })
	if err != nil || h2 != h1 {
		t.Fatalf("state-only update: %+v, %v", h2, err)
	}
	h3, err := s.Update(ctx, "r", func(*Snapshot) (*Change, error) { return &Change{Events: []NewEvent{ev("x", 5)}}, nil })
	if err != nil || h3.Seq != 5 {
		t.Fatalf("events-only update: %+v, %v", h3, err)
	}
	if snap, _ := s.Load(ctx, "r"); string(snap.State) != `{"v":2}` {
		t.Errorf("nil State changed the document: %s", snap.State)
	}

	// Refusals write nothing.
	before := runFiles(t, s, "r")
	errStale := errors.New("stale token")
	refusals := map[string]func(*Snapshot) (*Change, error){
		"fn error":   func(*Snapshot) (*Change, error) { return &Change{State: []byte(`{"v":9}`)}, errStale },
		"nil change": func(*Snapshot) (*Change, error) { return nil, nil },
		"empty":      func(*Snapshot) (*Change, error) { return &Change{}, nil },
		"bad state":  func(*Snapshot) (*Change, error) { return &Change{State: []byte(`{"v":`)}, nil },
		"bad event": func(*Snapshot) (*Change, error) {
			return &Change{Events: []NewEvent{ev("ok", 1), {Type: "bad type", At: t0}}}, nil
		},
		"mutating the snapshot": func(cur *Snapshot) (*Change, error) {
			cur.State[0] = 'X'
			return nil, nil
		},
	}
	for name, fn := range refusals {
		h, err := s.Update(ctx, "r", fn)
		switch name {
		case "fn error":
			if err != errStale {
				t.Errorf("%s: err = %v, want fn's own error", name, err)
			}
		case "bad state", "bad event":
			if !errors.Is(err, ErrInvalidInput) {
				t.Errorf("%s: err = %v", name, err)
			}
		default:
			if err != nil || h != h3 {
				t.Errorf("%s: %+v, %v", name, h, err)
			}
		}
		if after := runFiles(t, s, "r"); !mapsEqual(before, after) {
			t.Errorf("%s wrote to the run", name)
		}
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestGoroutinesExclude checks the claim that a fresh Flock per acquisition
// serialises goroutines of one process without any in-process mutex.
func TestGoroutinesExclude(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, nil)
	mustCreate(t, s, "c", `{"n":0}`, 0)
	const workers, each = 6, 8
	var inside, maxInside atomic.Int32
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range each {
				_, err := s.Update(ctx, "c", func(cur *Snapshot) (*Change, error) {
					if n := inside.Add(1); n > maxInside.Load() {
						maxInside.Store(n)
					}
					defer inside.Add(-1)
					var st struct{ N int }
					if err := json.Unmarshal(cur.State, &st); err != nil {
						return nil, err
					}
					time.Sleep(100 * time.Microsecond) // widen the window for a lost update
					return &Change{State: fmt.Appendf(nil, `{"n":%d}`, st.N+1), Events: []NewEvent{ev("inc", st.N+1)}}, nil
				})
				if err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	snap, err := s.Load(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	if string(snap.State) != fmt.Sprintf(`{"n":%d}`, workers*each) || snap.Head.Seq != workers*each {
		t.Errorf("after %d increments: state %s head %d", workers*each, snap.State, snap.Head.Seq)
	}
	if maxInside.Load() != 1 {
		t.Errorf("%d update functions ran at once", maxInside.Load())
	}
	if _, err := s.Verify(ctx, "c", VerifyOptions{}); err != nil {
		t.Error(err)
	}
}

func TestLockTimeoutInProcess(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, &Options{LockTimeout: 150 * time.Millisecond})
	mustCreate(t, s, "busy", `{}`, 1)
	holding, done := make(chan struct{}), make(chan struct{})
	go func() {
		s.Update(ctx, "busy", func(*Snapshot) (*Change, error) {
			close(holding)
			<-done
			return nil, nil
		})
	}()
	<-holding
	start := time.Now()
	_, err := s.Update(ctx, "busy", func(*Snapshot) (*Change, error) { t.Error("fn ran without the lock"); return nil, nil })
	var le *LockedError
	if !errors.As(err, &le) || !errors.Is(err, ErrLocked) {
		t.Fatalf("err = %v, want a LockedError", err)
	}
	if le.PID != os.Getpid() || le.RunID != "busy" || time.Since(start) < 150*time.Millisecond {
		t.Errorf("LockedError = %+v", le)
	}
	if want := fmt.Sprintf("run busy is locked by pid %d", os.Getpid()); !strings.Contains(err.Error(), want) {
		t.Errorf("message %q lacks %q", err, want)
	}
	// Readers take no lock.
	if _, err := s.Load(ctx, "busy"); err != nil {
		t.Errorf("Load while locked: %v", err)
	}
	// A cancelled context is the caller's error, not a lock timeout.
	cctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := s.Update(cctx, "busy", appendEvents(`{}`, 1)); errors.Is(err, ErrLocked) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("cancelled wait: %v", err)
	}
	close(done)
	if _, err := s.Update(ctx, "busy", appendEvents(`{}`, 1)); err != nil {
		t.Errorf("after release: %v", err)
	}
	if pid := lockHolder(filepath.Join(s.runDir("busy"), lockFile)); pid != 0 {
		t.Errorf("released lock still names pid %d", pid)
	}
}

func TestOptions(t *testing.T) {
	if _, err := NewFileStore("", nil); !errors.Is(err, ErrInvalidInput) {
		t.Errorf("empty root: %v", err)
	}
	if _, err := NewFileStore("/x", &Options{LockTimeout: -1}); !errors.Is(err, ErrInvalidInput) {
		t.Errorf("negative timeout: %v", err)
	}
	s, err := NewFileStore("/x/", &Options{})
	if err != nil || s.lockTimeout != DefaultLockTimeout || s.Root() != "/x" {
		t.Errorf("defaults: %+v, %v", s, err)
	}
}

func TestCreateMakesNestedRoot(t *testing.T) {
	root := filepath.Join(t.TempDir(), "home", ".stratum", "flows")
	s, err := NewFileStore(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	mustCreate(t, s, "r", `{}`, 1)
	info, err := os.Stat(root)
	if err != nil || info.Mode().Perm() != dirPerm {
		t.Fatalf("root: %v, %v", info, err)
	}
	if _, err := s.Load(context.Background(), "r"); err != nil {
		t.Fatal(err)
	}
}

func TestList(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, nil)
	if runs, err := s.List(ctx); err != nil || len(runs) != 0 {
		t.Fatalf("missing root: %v, %v", runs, err)
	}
	for _, id := range []string{"b", "a", "c-1"} {
		mustCreate(t, s, id, `{}`, 1)
	}
	os.WriteFile(filepath.Join(s.Root(), "stray.txt"), nil, 0o600)
	os.Mkdir(filepath.Join(s.Root(), "not.a.run"), 0o700)
	os.MkdirAll(filepath.Join(s.Root(), stagingDir, "a-123"), 0o700)
	runs, err := s.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range runs {
		ids = append(ids, r.ID)
		if time.Since(r.UpdatedAt) > time.Minute {
			t.Errorf("run %s UpdatedAt %v", r.ID, r.UpdatedAt)
		}
	}
	if !slices.Equal(ids, []string{"a", "b", "c-1"}) {
		t.Errorf("List = %v", ids)
	}
}

func TestStagingSweep(t *testing.T) {
	s := newStore(t, nil)
	mustCreate(t, s, "first", `{}`, 0) // creates the staging directory
	staging := filepath.Join(s.Root(), stagingDir)
	old := time.Now().Add(-2 * stagingStaleAfter)
	mk := func(name string, age time.Time) string {
		d := filepath.Join(staging, name)
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(d, stateFile), []byte("partial"), 0o600)
		os.Chtimes(d, age, age)
		return d
	}
	crashed := mk("crashed-1", old)
	fresh := mk("fresh-2", time.Now())
	busy := mk("busy-3", old)
	fl := flock.New(filepath.Join(busy, lockFile))
	if ok, err := fl.TryLock(); !ok || err != nil {
		t.Fatal(ok, err)
	}
	defer fl.Unlock()
	os.Chtimes(busy, old, old)

	mustCreate(t, s, "second", `{}`, 0)
	if _, err := os.Stat(crashed); !os.IsNotExist(err) {
		t.Error("an old unlocked staging directory survived")
	}
	for _, d := range []string{fresh, busy} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("sweep removed %s, which may be in use", filepath.Base(d))
		}
	}
}

// TestUpdateReusesItsTempFile: a state replace writes one fixed temp name
// under the run's lock, so the leftover of a crashed replace is simply
// overwritten by the next one (no directory sweep on every update); where
// the two names are exchanged, the temp then holds the previous state.
func TestUpdateReusesItsTempFile(t *testing.T) {
	s := newStore(t, nil)
	mustCreate(t, s, "r", `{}`, 1)
	leftover := filepath.Join(s.runDir("r"), stateTemp)
	os.WriteFile(leftover, []byte("torn, and longer than the state that replaces it: "+strings.Repeat("x", 4096)), 0o644)
	if _, err := s.Update(context.Background(), "r", appendEvents(`{"v":2}`, 1)); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(leftover); err == nil {
		if env, err := decodeEnvelope(data); err != nil || string(env.State) != `{}` {
			t.Errorf("the temp file after an exchange is not the previous state: %v %q", err, data)
		}
	} else if !os.IsNotExist(err) {
		t.Fatal(err)
	}
	info, err := os.Stat(filepath.Join(s.runDir("r"), stateFile))
	if err != nil || info.Mode().Perm() != filePerm {
		t.Errorf("state.json after replacing through a 0644 leftover: %v, %v", info.Mode(), err)
	}
	if snap, err := s.Load(context.Background(), "r"); err != nil || string(snap.State) != `{"v":2}` {
		t.Errorf("Load: %v", err)
	}
}

// TestLargeEvents crosses the backward reader's windows: events larger
// than the first window, and many of them.
func TestLargeEvents(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, nil)
	mustCreate(t, s, "big", `{}`, 0)
	var sizes []int
	for i := range 12 {
		size := 1 << (i + 4) // 16 B .. 32 KiB
		sizes = append(sizes, size)
		_, err := s.Update(ctx, "big", func(cur *Snapshot) (*Change, error) {
			return &Change{Events: []NewEvent{{Type: "blob", At: t0, Data: json.RawMessage(fmt.Sprintf(`{"pad":%q}`, strings.Repeat("x", size)))}}}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Load(ctx, "big"); err != nil {
		t.Fatal(err)
	}
	for after := range int64(12) {
		evs, err := s.Events(ctx, "big", after, 0)
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(evs)) != 12-after {
			t.Fatalf("after %d: %d events", after, len(evs))
		}
		for _, e := range evs {
			if len(e.Data) != sizes[e.Seq-1]+len(`{"pad":""}`) {
				t.Fatalf("event %d data %d bytes", e.Seq, len(e.Data))
			}
		}
	}
	if rep, err := s.Verify(ctx, "big", VerifyOptions{}); err != nil || rep.Events != 12 {
		t.Fatalf("Verify: %+v %v", rep, err)
	}
}

func TestDefaultRoot(t *testing.T) {
	cwd, _ := os.Getwd()
	tests := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"STRATUM_STATE_ROOT": "/s", "STRATUM_HOME": "/h", "HOME": "/u"}, "/s"},
		{map[string]string{"STRATUM_HOME": "/h", "HOME": "/u"}, "/h/flows"},
		{map[string]string{"HOME": "/u"}, "/u/.stratum/flows"},
		{map[string]string{"STRATUM_STATE_ROOT": "rel/dir"}, filepath.Join(cwd, "rel/dir")},
		{map[string]string{"STRATUM_STATE_ROOT": "", "STRATUM_HOME": "/h/"}, "/h/flows"},
	}
	for _, tc := range tests {
		got, err := DefaultRoot(func(k string) string { return tc.env[k] })
		if err != nil || got != tc.want {
			t.Errorf("DefaultRoot(%v) = %q, %v; want %q", tc.env, got, err, tc.want)
		}
	}
	if _, err := DefaultRoot(func(string) string { return "" }); err == nil {
		t.Error("no environment gave no error")
	}
}
