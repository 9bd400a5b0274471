//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package store

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestLockFileReadOnly: a lock file that cannot be written (a store
// copied read-only) is still locked, exclusively, with no pid recorded;
// and it still excludes another holder.
func TestLockFileReadOnly(t *testing.T) {
	// Root writes a read-only file anyway: refuse writing as the kernel
	// would for anyone else.
	orig := openLockFile
	openLockFile = func(path string, flag int, perm fs.FileMode) (*smallFile, error) {
		if flag&(os.O_WRONLY|os.O_RDWR) != 0 {
			return nil, &fs.PathError{Op: "open", Path: path, Err: fs.ErrPermission}
		}
		return orig(path, flag, perm)
	}
	t.Cleanup(func() { openLockFile = orig })
	path := filepath.Join(t.TempDir(), lockFile)
	lk, err := acquire(context.Background(), "r", path, true, time.Second)
	if err != nil {
		t.Fatalf("exclusive lock of a read-only lock file: %v", err)
	}
	defer lk.release()
	if lk.pid {
		t.Error("a pid was recorded in a read-only lock file")
	}
	if _, err := acquire(context.Background(), "r", path, true, 0); !errors.Is(err, ErrLocked) {
		t.Errorf("a second holder: %v, want ErrLocked", err)
	}
}
