//go:build windows

package cputime

import (
	"fmt"
	"syscall"
	"time"
)

// Self is the CPU time this process has used so far (GetProcessTimes).
func Self() (Times, error) {
	h, err := syscall.GetCurrentProcess()
	if err != nil {
		return Times{}, fmt.Errorf("cputime: GetCurrentProcess: %w", err)
	}
	var created, exited, kernel, user syscall.Filetime
	if err := syscall.GetProcessTimes(h, &created, &exited, &kernel, &user); err != nil {
		return Times{}, fmt.Errorf("cputime: GetProcessTimes: %w", err)
	}
	return Times{User: filetime(user), System: filetime(kernel)}, nil
}

// filetime is a FILETIME duration: a count of 100-nanosecond intervals.
func filetime(f syscall.Filetime) time.Duration {
	return time.Duration(int64(f.HighDateTime)<<32|int64(f.LowDateTime)) * 100
}
