//go:build !linux

package store

// groupSyncerFor is nil where no flush of a whole file system reports
// errors: each write fsyncs its own files (docs/storage.md, "Group commit").
func groupSyncerFor(*smallFile, ...*smallFile) (*groupSyncer, error) { return nil, nil }
