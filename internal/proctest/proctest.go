package proctest

import (
	"os"
	"time"
)

// WaitGone waits up to timeout for process pid to stop running and
// reports whether it did.
func WaitGone(pid int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for {
		if !Running(pid) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Kill ends process pid at once (SIGKILL on Unix, TerminateProcess on
// Windows), ignoring a process already gone.
func Kill(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}
