package store

// SyncEachForTest turns group commit off for s: each write fsyncs its own
// files (the path taken where syncfs does not report errors).
func SyncEachForTest(s *FileStore) *FileStore {
	s.syncEach = true
	return s
}
