//go:build unix

package proc

import (
	"os"
	"os/exec"
	"syscall"
)

var (
	sigTerm os.Signal = syscall.SIGTERM
	sigKill os.Signal = syscall.SIGKILL
)

// isolate puts the child in a new process group whose id is its pid, so the
// child and everything it spawns can be signalled together, and (on Linux)
// gives it a parent-death signal.
func isolate(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	dieWithParent(cmd.SysProcAttr)
}

// signalGroup sends sig to the child's process group. Errors are ignored:
// ESRCH means the group is already empty, which is the goal.
func signalGroup(cmd *exec.Cmd, sig os.Signal) {
	if cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, sig.(syscall.Signal))
}

func signalName(ps *os.ProcessState) string {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return ws.Signal().String()
	}
	return ""
}
