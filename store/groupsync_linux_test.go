package store

import "testing"

// groupShared reports whether a group flush of this process has answered
// more than one write.
func groupShared() bool {
	groupCommit.mu.Lock()
	defer groupCommit.mu.Unlock()
	for _, g := range groupCommit.syncers {
		if g.covered.Load() > g.flushes.Load() {
			return true
		}
	}
	return false
}

func groupCommitAvailable() bool { return syncfsReportsErrors() }

func TestKernelAtLeast(t *testing.T) {
	for _, tc := range []struct {
		release string
		want    bool
	}{
		{"5.8.0", true},
		{"5.7.19", false},
		{"5.10.0-28-amd64", true},
		{"6.18.44-fc-v857", true},
		{"4.19.0", false},
		{"5.8", true},
		{"5.8-rc1", true},
		{"10.0.0", true},
		{"5", false},
		{"", false},
		{"x.y", false},
	} {
		if got := kernelAtLeast(tc.release, 5, 8); got != tc.want {
			t.Errorf("kernelAtLeast(%q, 5, 8) = %v, want %v", tc.release, got, tc.want)
		}
	}
}

// TestUpdateSharesFlushes: on Linux 5.8 and later an Update is made
// durable by group flushes (two per write, fewer when writes share them),
// not by fsyncs of its own; with group commit off it uses none.
func TestUpdateSharesFlushes(t *testing.T) {
	if !groupCommitAvailable() {
		t.Skip("syncfs does not report errors on this kernel: every write fsyncs its own files")
	}
	s := newStore(t, nil)
	mustCreate(t, s, "g", `{}`, 1)
	waits := func() int64 {
		groupCommit.mu.Lock()
		defer groupCommit.mu.Unlock()
		var n int64
		for _, g := range groupCommit.syncers {
			n += g.covered.Load()
		}
		return n
	}
	before := waits()
	if _, err := s.Update(t.Context(), "g", appendEvents(`{}`, 1)); err != nil {
		t.Fatal(err)
	}
	if got := waits() - before; got != 2 {
		t.Fatalf("an Update waited for %d group flushes, want 2", got)
	}
	before = waits()
	if _, err := SyncEachForTest(s).Update(t.Context(), "g", appendEvents(`{}`, 1)); err != nil {
		t.Fatal(err)
	}
	if got := waits() - before; got != 0 {
		t.Fatalf("with group commit off an Update waited for %d group flushes", got)
	}
}

// groupCounts sums the flushes of every group syncer of this process and
// the waits they answered.
func groupCounts() (flushes, waits int64) {
	groupCommit.mu.Lock()
	defer groupCommit.mu.Unlock()
	for _, g := range groupCommit.syncers {
		flushes += g.flushes.Load()
		waits += g.covered.Load()
	}
	return flushes, waits
}
