package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The findings of issue 13 ("Tried as"), reproduced over real files. Each
// of these tests failed on the store as it was when they were written:
// acknowledged history could be rolled back or deleted without a trace.

// manyUpdates builds run "t" with n updates of one event each and returns
// the state file's bytes after each update (index 0: after Create).
func manyUpdates(t *testing.T, s *FileStore, n int) (states, logs [][]byte) {
	t.Helper()
	ctx := context.Background()
	mustCreate(t, s, "t", `{"step":0}`, 1)
	save := func() {
		st, _ := os.ReadFile(s.pathOf(stateFile))
		lg, _ := os.ReadFile(s.pathOf(eventsFile))
		states, logs = append(states, st), append(logs, lg)
	}
	save()
	for i := 1; i <= n; i++ {
		if _, err := s.Update(ctx, "t", appendEvents(fmt.Sprintf(`{"step":%d}`, i), 1)); err != nil {
			t.Fatal(err)
		}
		save()
	}
	return states, logs
}

func TestIssue13RollbackStateAlone(t *testing.T) {
	for _, back := range []int{1, 15} {
		t.Run(fmt.Sprintf("by %d updates", back), func(t *testing.T) {
			ctx := context.Background()
			s := newStore(t, nil)
			states, _ := manyUpdates(t, s, 20)
			writeFile(t, s.pathOf(stateFile), states[20-back])
			logBefore, _ := os.ReadFile(s.pathOf(eventsFile))
			if _, err := s.Verify(ctx, "t", VerifyOptions{}); !errors.Is(err, ErrCorrupt) {
				t.Errorf("Verify after rolling state.json back: %v, want ErrCorrupt", err)
			}
			if _, err := s.Load(ctx, "t"); !errors.Is(err, ErrCorrupt) {
				t.Errorf("Load after rolling state.json back: %v, want ErrCorrupt", err)
			}
			s.Update(ctx, "t", appendEvents(`{"step":"next"}`, 1))
			logAfter, _ := os.ReadFile(s.pathOf(eventsFile))
			if !bytes.HasPrefix(logAfter, logBefore) {
				t.Errorf("the next Update deleted acknowledged events: log %d -> %d bytes", len(logBefore), len(logAfter))
			}
		})
	}
}

func TestIssue13GarbageAppended(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, nil)
	manyUpdates(t, s, 5)
	appendFile(t, s.pathOf(eventsFile), []byte("garbage that is no event\n"))
	if _, err := s.Verify(ctx, "t", VerifyOptions{}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Verify with garbage after the head: %v, want ErrCorrupt", err)
	}
	before, _ := os.ReadFile(s.pathOf(eventsFile))
	s.Update(ctx, "t", appendEvents(`{"step":"next"}`, 1))
	after, _ := os.ReadFile(s.pathOf(eventsFile))
	if !bytes.HasPrefix(after, before) {
		t.Error("the next Update deleted what was after the head without a trace")
	}
}

func TestIssue13RollbackBoth(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, nil)
	states, logs := manyUpdates(t, s, 20)
	writeFile(t, s.pathOf(stateFile), states[5])
	writeFile(t, s.pathOf(eventsFile), logs[5])
	if _, err := s.Verify(ctx, "t", VerifyOptions{}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Verify after rolling both files back: %v, want ErrCorrupt", err)
	}
	if _, err := s.Load(ctx, "t"); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Load after rolling both files back: %v, want ErrCorrupt", err)
	}
}

func TestIssue13RemovedRun(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, nil)
	manyUpdates(t, s, 3)
	if err := os.RemoveAll(s.runDir("t")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load(ctx, "t"); !errors.Is(err, ErrCorrupt) || errors.Is(err, ErrRunNotFound) {
		t.Errorf("Load of a removed run: %v, want ErrCorrupt (removed), not not-found", err)
	}
}

func TestIssue13InterruptedWriteRecorded(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, nil)
	states, _ := manyUpdates(t, s, 3)
	_ = states
	tail := unackedEvents(t, s, 1)
	appendFile(t, s.pathOf(eventsFile), tail)
	if _, err := s.Update(ctx, "t", appendEvents(`{"step":"next"}`, 1)); err != nil {
		t.Fatal(err)
	}
	evs, err := s.Events(ctx, "t", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range evs {
		found = found || e.Type == "store.repair"
	}
	if !found {
		t.Error("an interrupted write's events were removed without a repair event in the chain")
	}
	entries, _ := os.ReadDir(s.runDir("t"))
	kept := false
	for _, e := range entries {
		if b, _ := os.ReadFile(filepath.Join(s.runDir("t"), e.Name())); e.Name() != eventsFile && bytes.Equal(b, tail) {
			kept = true
		}
	}
	if !kept {
		t.Errorf("the removed tail was not kept beside the log: %v", strings.Join(names(entries), " "))
	}
}

func names(es []os.DirEntry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}
