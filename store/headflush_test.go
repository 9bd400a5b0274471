//go:build unix

package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// countRecordFlushes makes s count every flush of a head record file;
// hold, when set, runs first (its error fails the flush).
func countRecordFlushes(s *FileStore, hold func(n int64) error) *atomic.Int64 {
	var n atomic.Int64
	s.flushes.sync = func(f *smallFile) error {
		c := n.Add(1)
		if hold != nil {
			if err := hold(c); err != nil {
				return err
			}
		}
		return f.Datasync()
	}
	return &n
}

// settled waits until the flush this store started for run has answered.
func settled(t *testing.T, s *FileStore, run string) {
	t.Helper()
	s.flushes.mu.Lock()
	fl := s.flushes.m[run]
	s.flushes.mu.Unlock()
	if fl == nil {
		t.Fatalf("no record flush started for %s", run)
	}
	<-fl.done
}

// writtenOnce is a store with run r created and updated once, the flush
// of that update's record answered.
func writtenOnce(t *testing.T) *FileStore {
	t.Helper()
	s := newStore(t, nil)
	mustCreate(t, s, "r", `{"v":0}`, 1)
	if _, err := s.Update(context.Background(), "r", appendEvents(`{"v":1}`, 1)); err != nil {
		t.Fatal(err)
	}
	settled(t, s, "r")
	return s
}

// The next write of the same store waits for the record flush the write
// before started, and flushes nothing of the record file itself.
func TestRecordFlushedAfterItsWrite(t *testing.T) {
	ctx := context.Background()
	s := writtenOnce(t)
	release, held := make(chan struct{}), make(chan struct{})
	n := countRecordFlushes(s, func(n int64) error {
		if n == 1 {
			close(held)
			<-release // the flush of the second write's record
		}
		return nil
	})
	second := make(chan error, 1)
	go func() {
		_, err := s.Update(ctx, "r", appendEvents(`{"v":2}`, 1))
		second <- err
	}()
	select { // acknowledged before its record's flush answers
	case err := <-second:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute): // a liveness bound, far above a write's cost
		close(release)
		t.Fatal("the second write waited for the flush of its own record")
	}
	// The flush runs on its own goroutine, which may start after the write
	// returned.
	select {
	case <-held:
	case <-time.After(time.Minute):
		t.Fatal("the second write's record was never flushed")
	}
	waiting := make(chan struct{})
	var once sync.Once
	s.flushes.wait = func() { once.Do(func() { close(waiting) }) }
	done := make(chan error, 1)
	go func() {
		_, err := s.Update(ctx, "r", appendEvents(`{"v":3}`, 1))
		done <- err
	}()
	select { // the third write waits for the second's flush
	case <-waiting:
	case err := <-done:
		t.Fatalf("the third write returned (%v) without waiting for the second's flush", err)
	}
	if got := n.Load(); got != 1 {
		t.Fatalf("%d record flushes while the third write waits, want 1 (the second write's)", got)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	settled(t, s, "r")
	if got := n.Load(); got != 2 {
		t.Fatalf("%d record flushes after the third write, want 2 (one per write)", got)
	}
}

// A failed early flush fails the write that depends on it, as its own
// flush would have; that write is undone, and the next one flushes the
// record file itself.
func TestRecordFlushFailureFailsTheNextWrite(t *testing.T) {
	ctx := context.Background()
	s := writtenOnce(t)
	boom := errors.New("injected flush failure")
	n := countRecordFlushes(s, func(n int64) error {
		if n == 1 {
			return boom
		}
		return nil
	})
	if _, err := s.Update(ctx, "r", appendEvents(`{"v":2}`, 1)); err != nil {
		t.Fatal(err)
	}
	settled(t, s, "r")
	if _, err := s.Update(ctx, "r", appendEvents(`{"v":"lost"}`, 1)); !errors.Is(err, boom) || !strings.Contains(err.Error(), "flush head record") {
		t.Fatalf("the write after a failed record flush: %v, want the flush's failure", err)
	}
	before := n.Load()
	if _, err := s.Update(ctx, "r", appendEvents(`{"v":3}`, 1)); err != nil {
		t.Fatal(err)
	}
	settled(t, s, "r")
	if got := n.Load() - before; got != 2 {
		t.Fatalf("%d record flushes by the write after the failed one, want 2 (its own of the file, and of its record)", got)
	}
	snap, err := s.Load(ctx, "r")
	if err != nil || string(snap.State) != `{"v":3}` {
		t.Fatalf("Load: %v %s", err, snap.State)
	}
}

// What another writer did since, or a record file replaced since, makes
// the next write flush the record file itself.
func TestRecordFlushNotTrustedAfterOthers(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		between func(t *testing.T, s *FileStore)
	}{
		{"another process wrote", func(t *testing.T, s *FileStore) {
			other, err := NewFileStore(s.Root(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := other.Update(ctx, "r", appendEvents(`{"v":"other"}`, 1)); err != nil {
				t.Fatal(err)
			}
			settled(t, other, "r")
		}},
		{"the record fell behind", func(t *testing.T, s *FileStore) {
			// As after a power loss that lost the record's slot: the
			// record read is the write before's, and the write rewrites it.
			s.flushes.mu.Lock()
			rev := s.flushes.m["r"].rec.Rev
			s.flushes.mu.Unlock()
			f, err := os.OpenFile(s.headPath("r"), os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			primary, _ := slotOffsets(rev % 2)
			if _, err := f.WriteAt(make([]byte, slotPrimary), primary); err != nil {
				t.Fatal(err)
			}
			f.Close()
			if v, err := s.Verify(ctx, "r", VerifyOptions{}); err != nil || v.HeadRecord != HeadRecordBehind {
				t.Fatalf("Verify: %v, head record %v, want it behind", err, v)
			}
		}},
		{"the record file was replaced", func(t *testing.T, s *FileStore) {
			path := s.headPath("r")
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			tmp := filepath.Join(filepath.Dir(path), "copy")
			if err := os.WriteFile(tmp, data, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, path); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := writtenOnce(t)
			tc.between(t, s)
			n := countRecordFlushes(s, nil)
			if _, err := s.Update(ctx, "r", appendEvents(`{"v":2}`, 1)); err != nil {
				t.Fatal(err)
			}
			settled(t, s, "r")
			if got := n.Load(); got != 2 {
				t.Fatalf("%d record flushes, want 2 (the write's own of the file, and of its record)", got)
			}
		})
	}
}

// At most limit flushes are remembered; one forgotten only means its
// run's next write flushes the record file itself.
func TestRecordFlushesBounded(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, nil)
	s.flushes.limit = 2
	for _, id := range []string{"a", "b", "c"} {
		mustCreate(t, s, id, `{"v":0}`, 1)
		if _, err := s.Update(ctx, id, appendEvents(`{"v":1}`, 1)); err != nil {
			t.Fatal(err)
		}
		s.flushes.mu.Lock()
		fl := s.flushes.m[id]
		s.flushes.mu.Unlock()
		if fl != nil {
			<-fl.done
		}
	}
	s.flushes.mu.Lock()
	got, newest := len(s.flushes.m), s.flushes.m["c"]
	s.flushes.mu.Unlock()
	if got > 2 || newest == nil {
		t.Fatalf("%d flushes remembered (the newest: %v), want at most 2, the newest among them", got, newest != nil)
	}
	for _, id := range []string{"a", "b", "c"} {
		if _, err := s.Update(ctx, id, appendEvents(`{"v":2}`, 1)); err != nil {
			t.Fatal(err)
		}
	}
}
