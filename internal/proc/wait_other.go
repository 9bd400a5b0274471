//go:build !linux

package proc

import "os/exec"

// awaitLeader waits for and reaps the child. Without waitid(WNOWAIT) the
// group is signalled only after reaping, which leaves a narrow window in
// which the group id could be recycled.
func awaitLeader(cmd *exec.Cmd) leaderExit {
	return leaderExit{reaped: true, err: cmd.Wait()}
}
