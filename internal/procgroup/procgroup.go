//go:build unix

package procgroup

import (
	"context"
	"errors"
	"os/exec"
	"syscall"
	"time"
)

// waitDelay is how long Wait keeps waiting for the child's output pipes
// after the group was killed, in case a descendant escaped the group.
const waitDelay = 2 * time.Second

// Command is exec.CommandContext with the child started in a new process
// group; when ctx is done the whole group receives SIGKILL.
func Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		// The group id equals the child's pid because of Setpgid.
		err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		if errors.Is(err, syscall.ESRCH) {
			return nil
		}
		return err
	}
	cmd.WaitDelay = waitDelay
	return cmd
}
