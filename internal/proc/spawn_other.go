//go:build !linux

package proc

import (
	"os/exec"
	"syscall"
)

// dieWithParent is a no-op: only Linux has a parent-death signal.
func dieWithParent(*syscall.SysProcAttr) {}

func startChild(cmd *exec.Cmd) error { return cmd.Start() }
