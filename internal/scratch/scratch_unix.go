//go:build unix

package scratch

import (
	"errors"
	"os"
	"syscall"
)

// alive reports whether pid names a process (signal 0: ESRCH means none;
// EPERM means one of another user's).
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// ownedByMe reports whether path (not followed) belongs to this user.
func ownedByMe(path string) bool {
	fi, err := os.Lstat(path)
	if err != nil {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}
