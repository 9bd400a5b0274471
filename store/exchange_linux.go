package store

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// exchange swaps the names a and b in the run's directory in one atomic
// step (renameat2 with RENAME_EXCHANGE); errNoExchange where the kernel or
// the file system has no such operation (nothing was changed).
func (r runFS) exchange(a, b string) error {
	if exchangeOff {
		return errNoExchange
	}
	dirfd, pa, pb := unix.AT_FDCWD, filepath.Join(r.path, a), filepath.Join(r.path, b)
	if r.dir != nil {
		dirfd, pa, pb = r.dir.fd, a, b
	}
	// Not retried on EINTR: an exchange that was interrupted after it took
	// effect, done again, would swap the names back (replaceState looks).
	err := unix.Renameat2(dirfd, pa, dirfd, pb, unix.RENAME_EXCHANGE)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, syscall.EINVAL), errors.Is(err, syscall.ENOSYS), errors.Is(err, syscall.EOPNOTSUPP), errors.Is(err, syscall.EPERM):
		return errNoExchange // EPERM: a seccomp filter refusing the call
	}
	return &os.LinkError{Op: "exchange", Old: filepath.Join(r.path, a), New: filepath.Join(r.path, b), Err: err}
}

// exchangeOff, set by tests, has exchange act as where it is not
// supported.
var exchangeOff bool

// named reports whether the open file f is still the file the run's
// directory calls name (the same device and inode).
func (r runFS) named(f *smallFile, name string) (bool, error) {
	var open, now unix.Stat_t
	if err := f.retry("stat", func() error { return unix.Fstat(f.fd, &open) }); err != nil {
		return false, err
	}
	dirfd, path := unix.AT_FDCWD, filepath.Join(r.path, name)
	if r.dir != nil {
		dirfd, path = r.dir.fd, name
	}
	err := f.retry("stat", func() error { return unix.Fstatat(dirfd, path, &now, 0) })
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return open.Dev == now.Dev && open.Ino == now.Ino, nil
}
