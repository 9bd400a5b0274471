//go:build !unix && !windows

package cputime

import (
	"errors"
	"runtime"
)

// Self reports that this platform gives no CPU time: a benchmark reports
// no CPU figure rather than a zero one.
func Self() (Times, error) {
	return Times{}, errors.New("cputime: no CPU time on " + runtime.GOOS)
}
