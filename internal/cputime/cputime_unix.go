//go:build unix

package cputime

import (
	"fmt"
	"syscall"
	"time"
)

// Self is the CPU time this process has used so far (getrusage).
func Self() (Times, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return Times{}, fmt.Errorf("cputime: getrusage: %w", err)
	}
	return Times{User: time.Duration(ru.Utime.Nano()), System: time.Duration(ru.Stime.Nano())}, nil
}
