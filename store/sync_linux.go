package store

import "syscall"

// Datasync flushes the file's data and the metadata needed to read it
// back (fdatasync(2)): an overwrite in place of allocated blocks needs no
// journal commit.
func (f *smallFile) Datasync() error {
	return f.retry("fdatasync", func() error { return syscall.Fdatasync(f.fd) })
}
