//go:build !linux

package store

func groupShared() bool { return false }

func groupCommitAvailable() bool { return false }

func groupCounts() (flushes, waits int64) { return 0, 0 }
