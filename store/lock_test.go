package store

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"
)

// holdLock takes the lock at path exclusively until the test ends.
func holdLock(t *testing.T, path string) {
	t.Helper()
	lk, err := acquire(context.Background(), "held", path, true, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lk.release() })
}

// TestLockEndedContextWins: a caller whose context has ended gets its
// context's error, never a lock timeout, even with no time to wait
// (both are ready at once: the timer of a zero timeout fires at once).
func TestLockEndedContextWins(t *testing.T) {
	path := filepath.Join(t.TempDir(), lockFile)
	holdLock(t, path)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for i := range 50 {
		_, err := acquire(ctx, "r", path, true, 0)
		if !errors.Is(err, context.Canceled) || errors.Is(err, ErrLocked) {
			t.Fatalf("attempt %d: err = %v, want the context's cancellation", i, err)
		}
	}
	// With a live context and no time to wait: locked.
	if _, err := acquire(context.Background(), "r", path, true, 0); !errors.Is(err, ErrLocked) {
		t.Errorf("a zero timeout on a held lock: %v, want ErrLocked", err)
	}
}
