//go:build unix && !linux

package store

// Datasync is fsync where fdatasync(2) is not available.
func (f *smallFile) Datasync() error { return f.Sync() }
