//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package store

import (
	"os"

	"github.com/gofrs/flock"
)

// gofrsHandle locks through gofrs/flock where flock(2) is not in package
// syscall (Windows, Solaris, AIX...); the pid record is written through a
// second file.
type gofrsHandle struct {
	fl     *flock.Flock
	path   string
	forPID bool
}

func openLockHandle(path string, forPID bool) (lockHandle, error) {
	return &gofrsHandle{fl: flock.New(path, flock.SetPermissions(0o600)), path: path, forPID: forPID}, nil
}

func (h *gofrsHandle) tryLock(exclusive bool) (bool, error) {
	if exclusive {
		return h.fl.TryLock()
	}
	return h.fl.TryRLock()
}

func (h *gofrsHandle) writePID(rec []byte) error {
	f, err := openSmall(h.path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteAt(rec, 0)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (h *gofrsHandle) close() error { return h.fl.Unlock() }
