//go:build unix

package store

import (
	"fmt"
	"io"
	"io/fs"
	"syscall"
)

// smallFile is a file used through plain system calls. The store opens
// half a dozen files per update; os.OpenFile adds four fcntl calls and an
// epoll_ctl to each (it tries to register the descriptor with the
// poller, which regular files refuse), about a third of an update's system
// calls (docs/storage.md, "Costs").
type smallFile struct {
	fd   int
	path string
}

func openSmall(path string, flag int, perm fs.FileMode) (*smallFile, error) {
	for {
		fd, err := syscall.Open(path, flag|syscall.O_CLOEXEC, uint32(perm.Perm()))
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: path, Err: err}
		}
		return &smallFile{fd: fd, path: path}, nil
	}
}

// Name is the path the file was opened by, as os.File's.
func (f *smallFile) Name() string { return f.path }

func (f *smallFile) fail(op string, err error) error {
	return &fs.PathError{Op: op, Path: f.path, Err: err}
}

// ReadAt reads len(b) bytes at off, as io.ReaderAt: io.EOF when the file
// ends first.
func (f *smallFile) ReadAt(b []byte, off int64) (int, error) {
	n := 0
	for n < len(b) {
		m, err := syscall.Pread(f.fd, b[n:], off+int64(n))
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return n, f.fail("read", err)
		}
		if m == 0 {
			return n, io.EOF
		}
		n += m
	}
	return n, nil
}

// readAtOnce is one pread at off: a regular file returns fewer than
// len(b) bytes only where it ends, so a reader that takes the end of the
// file there saves the second pread that ReadAt makes to see 0 (List: a
// head record file is usually shorter than the 8 KiB it reads).
func (f *smallFile) readAtOnce(b []byte, off int64) (int, error) {
	for {
		n, err := syscall.Pread(f.fd, b, off)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return 0, f.fail("read", err)
		}
		return n, nil
	}
}

// WriteAt writes all of b at off.
func (f *smallFile) WriteAt(b []byte, off int64) (int, error) {
	n := 0
	for n < len(b) {
		m, err := syscall.Pwrite(f.fd, b[n:], off+int64(n))
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return n, f.fail("write", err)
		}
		n += m
	}
	return n, nil
}

// Write writes all of b at the file offset (the end, for O_APPEND).
func (f *smallFile) Write(b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := syscall.Write(f.fd, b[n:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return n, f.fail("write", err)
		}
		n += m
	}
	return n, nil
}

func (f *smallFile) Sync() error {
	return f.retry("fsync", func() error { return syscall.Fsync(f.fd) })
}

func (f *smallFile) Truncate(size int64) error {
	return f.retry("truncate", func() error { return syscall.Ftruncate(f.fd, size) })
}

func (f *smallFile) Chmod(mode fs.FileMode) error {
	return f.retry("chmod", func() error { return syscall.Fchmod(f.fd, uint32(mode.Perm())) })
}

// Size is the file's size (fstat).
func (f *smallFile) Size() (int64, error) {
	st, err := f.stat()
	return st.Size, err
}

func (f *smallFile) stat() (syscall.Stat_t, error) {
	var st syscall.Stat_t
	err := f.retry("stat", func() error { return syscall.Fstat(f.fd, &st) })
	return st, err
}

func (f *smallFile) Close() error {
	if err := syscall.Close(f.fd); err != nil {
		return f.fail("close", err)
	}
	return nil
}

func (f *smallFile) retry(op string, call func() error) error {
	for {
		err := call()
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return f.fail(op, err)
		}
		return nil
	}
}

// syncDir fsyncs a directory so that entries created, renamed or removed
// in it survive a crash.
func syncDir(dir string) error {
	d, err := openSmall(dir, syscall.O_RDONLY, 0)
	if err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	return nil
}

// fileID is what tells two open files apart: the device and inode.
type fileID struct{ dev, ino uint64 }

// id is the file's fileID (fstat).
func (f *smallFile) id() (fileID, error) {
	st, err := f.stat()
	if err != nil {
		return fileID{}, err
	}
	return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino)}, nil //nolint:unconvert // Ino is not 64 bits everywhere
}

// earlyRecordFlush says head records are flushed as soon as they are
// written (recordFlushes): files here can be told apart (id).
const earlyRecordFlush = true
