//go:build unix && !linux

package pgtest

import "syscall"

// quitWithParent does nothing where the kernel has no parent-death
// signal: there a test binary killed outright leaves its private server
// running, to be stopped by hand.
func quitWithParent(*syscall.SysProcAttr) {}
