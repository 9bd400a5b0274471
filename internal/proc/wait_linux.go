package proc

import (
	"os/exec"
	"syscall"
	"unsafe"
)

// awaitLeader blocks until the child has exited but leaves it unreaped
// (waitid with WNOWAIT): while the zombie exists its pid, and so the
// process-group id, cannot be given to another process, so signalling the
// group afterwards can only reach the child's own descendants.
func awaitLeader(cmd *exec.Cmd) leaderExit {
	const pPID = 1     // idtype_t P_PID
	var info [128]byte // siginfo_t, unused
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(cmd.Process.Pid),
			uintptr(unsafe.Pointer(&info[0])), syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		switch errno {
		case 0:
			return leaderExit{}
		case syscall.EINTR:
			continue
		default:
			// Cannot wait without reaping; fall back to the plain wait.
			return leaderExit{reaped: true, err: cmd.Wait()}
		}
	}
}
