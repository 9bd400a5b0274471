//go:build !unix

package store

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/stratum-go/stratum/internal/atomicfile"
)

// smallFile is an *os.File where plain system calls are not at hand (see
// smallfile_unix.go).
type smallFile struct{ *os.File }

func openSmall(path string, flag int, perm fs.FileMode) (*smallFile, error) {
	f, err := os.OpenFile(path, flag, perm)
	if err != nil {
		return nil, err
	}
	return &smallFile{f}, nil
}

// Size is the file's size.
func (f *smallFile) Size() (int64, error) {
	info, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return info.Size(), nil
}

// Datasync is fsync here.
func (f *smallFile) Datasync() error { return f.Sync() }

// syncDir fsyncs a directory so that entries created, renamed or removed
// in it survive a crash.
func syncDir(dir string) error { return atomicfile.SyncDir(dir) }

// openSmallAt opens name in the directory dir was opened on.
func openSmallAt(dir *smallFile, name string, flag int, perm fs.FileMode) (*smallFile, error) {
	return openSmall(filepath.Join(dir.Name(), name), flag, perm)
}

// readAtOnce is ReadAt here.
func (f *smallFile) readAtOnce(b []byte, off int64) (int, error) { return f.ReadAt(b, off) }

// fileID is not available here: head records are flushed by the next
// write (earlyRecordFlush).
type fileID struct{}

func (f *smallFile) id() (fileID, error) { return fileID{}, errors.ErrUnsupported }

// earlyRecordFlush is off where files cannot be told apart by id.
const earlyRecordFlush = false
