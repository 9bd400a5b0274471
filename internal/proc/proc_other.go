//go:build !unix

package proc

import (
	"os"
	"os/exec"
)

var (
	sigTerm os.Signal = os.Kill
	sigKill os.Signal = os.Kill
)

// isolate is a no-op: without process groups only the child itself can be
// stopped.
func isolate(*exec.Cmd) {}

// signalGroup kills the child itself (there is no portable group kill).
func signalGroup(cmd *exec.Cmd, _ os.Signal) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}

func signalName(ps *os.ProcessState) string {
	if !ps.Exited() {
		return "killed"
	}
	return ""
}
