//go:build !linux

package proc

import (
	"context"
	"time"
)

func identify(pid int) Identity { return Identity{Pid: pid} }

func killGroup(context.Context, Identity, time.Duration) (KillOutcome, error) {
	return "", ErrUnsupported
}
