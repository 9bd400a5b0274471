package scratch

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
)

// namePattern matches the names Dir and File give: stratum-KIND-PID-...
var namePattern = regexp.MustCompile(`^stratum-([a-z]+)-([0-9]+)-`)

// Dir creates a directory in the system's temporary directory, named
// stratum-KIND-PID-*, mode 0700. The caller removes it when done; if the
// process dies first, a later Sweep does.
func Dir(kind string) (string, error) {
	sweepOnce()
	return os.MkdirTemp("", prefix(kind))
}

// File creates a file there, named the same way, mode 0600.
func File(kind string) (*os.File, error) {
	sweepOnce()
	return os.CreateTemp("", prefix(kind))
}

func prefix(kind string) string { return fmt.Sprintf("stratum-%s-%d-", kind, os.Getpid()) }

var once sync.Once

// sweepOnce sweeps the system's temporary directory once per process:
// the first time it makes a scratch name, or when a drive starts (Tidy).
func sweepOnce() { once.Do(func() { _, _ = Sweep(os.TempDir()) }) }

// Tidy removes what dead Stratum processes left in the system's temporary
// directory (once per process): a run resumed after a kill cleans up
// after the process that was killed.
func Tidy() { sweepOnce() }

// Sweep removes from dir the scratch files and directories of processes
// that no longer exist, owned by this user, and returns how many it
// removed. A name whose pid is alive (this process, another Stratum, or a
// process that reused the pid) is left alone; so is anything it cannot
// tell. Errors reading dir are returned; a name it cannot remove is
// skipped.
func Sweep(dir string) (int, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	removed := 0
	for _, e := range entries {
		m := namePattern.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		pid, err := strconv.Atoi(m[2])
		if err != nil || pid <= 0 || alive(pid) {
			continue
		}
		path := filepath.Join(dir, e.Name())
		if !ownedByMe(path) {
			continue
		}
		if os.RemoveAll(path) == nil {
			removed++
		}
	}
	return removed, nil
}
