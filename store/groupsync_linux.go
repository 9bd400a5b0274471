package store

import (
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

var (
	syncersMu sync.Mutex
	syncers   = map[uint64]*groupSyncer{}
)

// syncerFor returns the group syncer of the file system dir is on.
func syncerFor(dir *smallFile) (*groupSyncer, uint64, error) {
	var st syscall.Stat_t
	if err := dir.retry("stat", func() error { return syscall.Fstat(dir.fd, &st) }); err != nil {
		return nil, 0, err
	}
	syncersMu.Lock()
	defer syncersMu.Unlock()
	if g := syncers[st.Dev]; g != nil {
		return g, st.Dev, nil
	}
	fd, err := syscall.Dup(dir.fd)
	if err != nil {
		return nil, 0, os.NewSyscallError("dup", err)
	}
	g := &groupSyncer{flush: func() error {
		for {
			err := unix.Syncfs(fd)
			if err == syscall.EINTR {
				continue
			}
			if err != nil {
				return os.NewSyscallError("syncfs", err)
			}
			return nil
		}
	}}
	syncers[st.Dev] = g
	return g, st.Dev, nil
}
