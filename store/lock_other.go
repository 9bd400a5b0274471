//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package store

import (
	"os"

	"github.com/gofrs/flock"
)

// gofrsHandle locks through gofrs/flock where flock(2) is not in package
// syscall (Windows, Solaris, AIX...). The pid record is written through a
// second descriptor kept open until the lock is released: where the lock
// is an fcntl lock (Solaris, AIX), closing any descriptor of the file
// releases the process's lock on it.
type gofrsHandle struct {
	fl   *flock.Flock
	path string
	pid  *smallFile
}

func openLockHandle(path string, forPID bool) (lockHandle, error) {
	return &gofrsHandle{fl: flock.New(path, flock.SetPermissions(0o600)), path: path}, nil
}

func (h *gofrsHandle) tryLock(exclusive bool) (bool, error) {
	if exclusive {
		return h.fl.TryLock()
	}
	return h.fl.TryRLock()
}

func (h *gofrsHandle) writePID(rec []byte) error {
	if h.pid == nil {
		f, err := openSmall(h.path, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		h.pid = f
	}
	_, err := h.pid.WriteAt(rec, 0)
	return err
}

func (h *gofrsHandle) close() error {
	if h.pid != nil {
		h.pid.Close()
	}
	return h.fl.Unlock()
}
