package store

import (
	"io/fs"
	"syscall"
)

// openSmallAt opens name in the directory dir is open on (openat(2)):
// List opens thousands of head records and resolves only their names.
func openSmallAt(dir *smallFile, name string, flag int, perm fs.FileMode) (*smallFile, error) {
	for {
		fd, err := syscall.Openat(dir.fd, name, flag|syscall.O_CLOEXEC, uint32(perm.Perm()))
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: dir.path + "/" + name, Err: err}
		}
		return &smallFile{fd: fd, path: dir.path + "/" + name}, nil
	}
}
