package proc

import (
	"context"
	"errors"
	"time"
)

// Identity names one running process so that another process, later, can
// tell whether that process still exists: a pid alone can be given to a
// new process once the old one is reaped, but a pid, its start time and
// the boot it belongs to cannot.
type Identity struct {
	// Pid is the process id. The children Run starts lead their own
	// process group, so it is also the group's id.
	Pid int `json:"pid"`
	// StartTime is when the process started, in clock ticks after boot
	// (field 22 of /proc/PID/stat); zero when the system does not say.
	StartTime uint64 `json:"startTime"`
	// BootID identifies the boot the process belongs to
	// (/proc/sys/kernel/random/boot_id); empty when unknown.
	BootID string `json:"bootId,omitempty"`
}

// ErrUnsupported is returned by [KillGroup] where processes cannot be
// identified (systems other than Linux).
var ErrUnsupported = errors.New("proc: process identity is not supported on this system")

// KillOutcome says what [KillGroup] found and did.
type KillOutcome string

const (
	// KillGone: the process named by the identity no longer runs (it
	// exited, or its pid now belongs to another process, which was left
	// alone). Its owner tears its group down when it reaps it.
	KillGone KillOutcome = "gone"
	// KillTerminated: the group was sent SIGTERM and the process ended
	// within the grace period.
	KillTerminated KillOutcome = "terminated"
	// KillKilled: the process outlived the grace period and the group was
	// sent SIGKILL.
	KillKilled KillOutcome = "killed"
)

// pollInterval is how often KillGroup looks whether the process ended.
const pollInterval = 10 * time.Millisecond

// KillGroup stops the process group of the process id names, from any
// process of the same user, but only while that very process is alive:
// the pid must still carry the recorded start time, on the same boot, and
// still lead its group. It sends SIGTERM to the group, waits up to grace
// (zero means DefaultGrace) for the process to end, then sends SIGKILL
// and waits again, each wait bounded by ctx. A process that has already
// exited is reported KillGone without any signal: the process that started
// it kills the rest of its group when it reaps it (see [Run]).
func KillGroup(ctx context.Context, id Identity, grace time.Duration) (KillOutcome, error) {
	return killGroup(ctx, id, orDefault(grace, DefaultGrace))
}
