package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"
)

// lockRetry is how often a waiter retries a held lock. flock offers no
// queue, so waiters poll; a writer holds the lock for about two fsyncs
// (1-2 ms), hence a short delay.
const lockRetry = 2 * time.Millisecond

// runLock is one acquisition of a run's lock file. Each acquisition opens
// the file anew: two open file descriptions of one file exclude each
// other even within a process, where one description locked twice would
// not.
type runLock struct {
	h   lockHandle
	pid bool // the holder's pid is recorded in the file
}

// pidRecordLen is the fixed size of the pid record in a lock file. The
// record is overwritten in place, never truncated, so that recording the
// holder allocates no disk block and adds nothing to the journal commit
// of the Update's fsyncs.
const pidRecordLen = 20

func pidRecord(pid int) []byte {
	rec := []byte(fmt.Sprintf("%-*s\n", pidRecordLen-1, ""))
	if pid > 0 {
		copy(rec, strconv.Itoa(pid))
	}
	return rec
}

// errReadOnlyLock is writePID's answer for a lock file opened read-only.
var errReadOnlyLock = errors.New("the lock file is read-only: no pid recorded")

// errNoRunDir is returned by acquire when the directory holding the lock
// file does not exist.
var errNoRunDir = errors.New("run directory does not exist")

// acquire takes the lock at path, exclusive or shared, waiting at most
// timeout (and no longer than ctx allows). An exclusive holder writes its
// pid into the file so that a refused caller can name it.
func acquire(ctx context.Context, runID, path string, exclusive bool, timeout time.Duration) (*runLock, error) {
	return acquireLock(ctx, runID, path, exclusive, timeout, exclusive)
}

// acquireLock is acquire with the pid record optional: a lease file is
// locked on itself, and its content is the lease, not a pid.
func acquireLock(ctx context.Context, runID, path string, exclusive bool, timeout time.Duration, recordPID bool) (*runLock, error) {
	h, err := openLockHandle(path, exclusive && recordPID)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, errNoRunDir
		}
		return nil, fmt.Errorf("run %s: lock %s: %w", runID, path, err)
	}
	start := time.Now()
	ok, err := h.tryLock(exclusive)
	if err == nil && !ok {
		ok, err = waitLock(ctx, h, exclusive, timeout)
		if err == nil && !ok {
			h.close()
			return nil, &LockedError{RunID: runID, PID: lockHolder(path), Waited: time.Since(start)}
		}
	}
	if err != nil {
		h.close()
		if errors.Is(err, fs.ErrNotExist) { // where the handle opens the file lazily
			return nil, errNoRunDir
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("run %s: waiting for the lock: %w", runID, ctx.Err())
		}
		return nil, fmt.Errorf("run %s: lock %s: %w", runID, path, err)
	}
	l := &runLock{h: h}
	if exclusive && recordPID {
		// Best effort: the pid only improves a refused caller's message.
		l.pid = h.writePID(pidRecord(os.Getpid())) == nil
	}
	return l, nil
}

// waitLock retries a held lock every lockRetry (flock offers no queue)
// until it is taken (true), timeout passes (false), or ctx ends (its
// error).
// An ended context wins over a deadline passed at the same time (with a
// timeout of 0 both are ready at once), as it did with gofrs/flock.
func waitLock(ctx context.Context, h lockHandle, exclusive bool, timeout time.Duration) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(lockRetry)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-deadline.C:
			return false, ctx.Err()
		case <-tick.C:
			if ok, err := h.tryLock(exclusive); err != nil || ok {
				return ok, err
			}
		}
	}
}

// release blanks the recorded pid (so that no stale pid is ever reported)
// and releases the lock.
func (l *runLock) release() error {
	if l.pid {
		l.h.writePID(pidRecord(0))
	}
	return l.h.close()
}

// lockHandle is one open file description of a lock file
// (lock_flock.go, lock_other.go).
type lockHandle interface {
	// tryLock takes the lock without waiting: false when another
	// description holds it.
	tryLock(exclusive bool) (bool, error)
	// writePID overwrites the pid record (a handle opened for it).
	writePID(rec []byte) error
	// close releases the lock, if held, and the file.
	close() error
}

// lockHolder reads the pid an exclusive holder recorded, 0 if none.
func lockHolder(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}
