package store

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Group commit on Linux: one syncfs(2) per file system per batch
// (docs/storage.md, "Group commit"; docs/decisions/0210-group-commit.md).
// Linux documents that syncfs gives the guarantees of fsync called on
// every file of the file system; from Linux 5.8 it also reports the
// write-back errors of any file of it since the descriptor it is called
// on last reported one (an error sequence kept per file system). Earlier
// kernels lose those errors, so there the store keeps fsyncing each file.

var groupCommit = struct {
	once    sync.Once
	enabled bool

	mu      sync.Mutex
	syncers map[uint64]*groupSyncer // by device
}{syncers: map[uint64]*groupSyncer{}}

// groupSyncerFor returns the group syncer of the file system holding dir
// and every file in files, or nil when they are not all on one file
// system or the kernel's syncfs does not report errors (the caller then
// fsyncs each file).
func groupSyncerFor(dir *smallFile, files ...*smallFile) (*groupSyncer, error) {
	groupCommit.once.Do(func() { groupCommit.enabled = syncfsReportsErrors() })
	if !groupCommit.enabled {
		return nil, nil
	}
	dev, err := dir.dev()
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		if f == nil {
			continue
		}
		d, err := f.dev()
		if err != nil {
			return nil, err
		}
		if d != dev {
			return nil, nil
		}
	}
	groupCommit.mu.Lock()
	defer groupCommit.mu.Unlock()
	if g := groupCommit.syncers[dev]; g != nil {
		return g, nil
	}
	// The syncer keeps its own descriptor for the life of the process:
	// syncfs reports an error to each descriptor once, counting from when
	// the descriptor was opened (dir was opened before this write changed
	// anything), so a descriptor opened for each flush could miss an
	// error reported in between. Every error it reports is seen by the
	// syncer, which fails the writes it may concern (groupSyncer).
	fd, err := dupCloexec(dir.fd)
	if err != nil {
		return nil, err
	}
	g := &groupSyncer{flush: func() error { return syncfs(fd) }}
	groupCommit.syncers[dev] = g
	return g, nil
}

func syncfs(fd int) error {
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
}

func dupCloexec(fd int) (int, error) {
	for {
		nfd, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return -1, os.NewSyscallError("fcntl", err)
		}
		return nfd, nil
	}
}

// dev is the device of the file system holding f.
func (f *smallFile) dev() (uint64, error) {
	var st syscall.Stat_t
	if err := f.retry("stat", func() error { return syscall.Fstat(f.fd, &st) }); err != nil {
		return 0, err
	}
	return st.Dev, nil
}

// syncfsReportsErrors reports whether the running kernel is Linux 5.8
// or later.
func syncfsReportsErrors() bool {
	var u syscall.Utsname
	if err := syscall.Uname(&u); err != nil {
		return false
	}
	var b strings.Builder
	for _, c := range u.Release {
		if c == 0 {
			break
		}
		b.WriteByte(byte(c))
	}
	return kernelAtLeast(b.String(), 5, 8)
}

// kernelAtLeast reports whether a kernel release such as "6.1.0-18-amd64"
// is major.minor or later.
func kernelAtLeast(release string, major, minor int) bool {
	parts := strings.SplitN(release, ".", 3)
	if len(parts) < 2 {
		return false
	}
	maj, err1 := strconv.Atoi(parts[0])
	minStr := parts[1]
	if i := strings.IndexFunc(minStr, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		minStr = minStr[:i]
	}
	mnr, err2 := strconv.Atoi(minStr)
	if err1 != nil || err2 != nil {
		return false
	}
	return maj > major || maj == major && mnr >= minor
}
