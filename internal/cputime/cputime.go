package cputime

import "time"

// Times is CPU time used, split between user space and the kernel.
type Times struct {
	User, System time.Duration
}

// Total is the user and system time together.
func (t Times) Total() time.Duration { return t.User + t.System }

// Sub is the CPU time used between an earlier reading u and t.
func (t Times) Sub(u Times) Times {
	return Times{User: t.User - u.User, System: t.System - u.System}
}
