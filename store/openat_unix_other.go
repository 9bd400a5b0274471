//go:build unix && !linux

package store

import (
	"io/fs"
	"path/filepath"
)

// openSmallAt opens name in the directory dir was opened on (by path here:
// the syscall package has no openat on every Unix).
func openSmallAt(dir *smallFile, name string, flag int, perm fs.FileMode) (*smallFile, error) {
	return openSmall(filepath.Join(dir.path, name), flag, perm)
}
