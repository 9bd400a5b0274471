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

	"github.com/gofrs/flock"
)

// lockRetry is how often a waiter retries a held lock. flock offers no
// queue, so waiters poll; a writer holds the lock for about two fsyncs
// (1-2 ms), hence a short delay.
const lockRetry = 2 * time.Millisecond

// runLock is one acquisition of a run's lock file. Each acquisition uses a
// fresh flock.Flock: a Flock value is not a lock between goroutines
// (TryLock on a value that holds the lock succeeds at once), but two open
// file descriptions of one file exclude each other even within a process.
type runLock struct {
	fl  *flock.Flock
	pid *smallFile // exclusive holders: where the pid record is written
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
	fl := flock.New(path, flock.SetPermissions(0o600))
	try := fl.TryRLock
	tryCtx := fl.TryRLockContext
	if exclusive {
		try, tryCtx = fl.TryLock, fl.TryLockContext
	}
	start := time.Now()
	ok, err := try()
	if err == nil && !ok {
		wctx, cancel := context.WithTimeout(ctx, timeout)
		ok, err = tryCtx(wctx, lockRetry)
		cancel()
		if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			return nil, &LockedError{RunID: runID, PID: lockHolder(path), Waited: time.Since(start)}
		}
	}
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, errNoRunDir
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("run %s: waiting for the lock: %w", runID, ctx.Err())
		}
		return nil, fmt.Errorf("run %s: lock %s: %w", runID, path, err)
	}
	if !ok { // TryLockContext promises ok or an error; never trust that silently
		return nil, fmt.Errorf("run %s: lock %s: not acquired", runID, path)
	}
	l := &runLock{fl: fl}
	if recordPID {
		// Best effort: the pid only improves a refused caller's message.
		if f, err := openSmall(path, os.O_WRONLY, 0); err == nil {
			if _, err := f.WriteAt(pidRecord(os.Getpid()), 0); err == nil {
				l.pid = f
			} else {
				f.Close()
			}
		}
	}
	return l, nil
}

// release blanks the recorded pid (so that no stale pid is ever reported)
// and releases the lock.
func (l *runLock) release() error {
	if l.pid != nil {
		l.pid.WriteAt(pidRecord(0), 0)
		l.pid.Close()
	}
	return l.fl.Unlock()
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
