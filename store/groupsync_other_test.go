//go:build !linux

package store

func groupShared() bool { return false }

func groupCommitAvailable() bool { return false }
