//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package store

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// flockHandle locks with flock(2) on a file opened directly, with no
// poller registration: taking and releasing a run's lock costs open,
// flock, close (and the pid record's write) where os.OpenFile and a
// second open for the pid record cost eight more system calls per
// update.
type flockHandle struct {
	f        *smallFile
	writable bool // opened for the pid record
}

// openLockHandle opens the lock file, for writing when the pid is to be
// recorded; a lock file that cannot be written (a store copied read-only)
// is locked without the record, as before.
func openLockHandle(path string, forPID bool) (lockHandle, error) {
	if forPID {
		f, err := openLockFile(path, os.O_RDWR|os.O_CREATE, filePerm)
		if err == nil {
			return &flockHandle{f: f, writable: true}, nil
		}
		if !errors.Is(err, fs.ErrPermission) && !errors.Is(err, syscall.EROFS) {
			return nil, err
		}
	}
	f, err := openLockFile(path, os.O_RDONLY|os.O_CREATE, filePerm)
	if err != nil {
		return nil, err
	}
	return &flockHandle{f: f}, nil
}

// openLockFile is openSmall; a test makes writing refused (as it is for
// a user other than root on a read-only file).
var openLockFile = openSmall

func (h *flockHandle) tryLock(exclusive bool) (bool, error) {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	for {
		err := syscall.Flock(h.f.fd, how|syscall.LOCK_NB)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EWOULDBLOCK):
			return false, nil
		}
		return false, h.f.fail("flock", err)
	}
}

func (h *flockHandle) writePID(rec []byte) error {
	if !h.writable {
		return errReadOnlyLock
	}
	_, err := h.f.WriteAt(rec, 0)
	return err
}

// close unlocks explicitly first: a child process forked (and not yet
// exec'd) while the lock was held shares the description, and closing
// alone would leave the lock held until its exec.
func (h *flockHandle) close() error {
	for {
		err := syscall.Flock(h.f.fd, syscall.LOCK_UN)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		return errors.Join(err, h.f.Close())
	}
}
