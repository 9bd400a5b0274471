package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stratum-go/stratum/internal/proc"
)

// Task is one free-form agent run, outside any flow: a prompt given to the
// CLI as it is, a working directory, options. It is what an MCP client asks
// for when it wants a second agent's opinion.
type Task struct {
	Prompt string
	// Workdir is the agent's working directory; empty means the caller's.
	Workdir string
	Options Options
}

// TaskResult is the outcome of a Task. Failure non-empty means the agent
// ran but failed (an error it reported, a non-zero exit, the time limit);
// Text is then whatever final message it gave, possibly empty.
type TaskResult struct {
	// Text is the agent's final message.
	Text    string
	Failure string
	// ExitCode is the CLI's exit status, -1 when it was ended by a signal.
	ExitCode  int
	Usage     *Usage
	Telemetry *Telemetry
	// Stderr is the end of what the CLI wrote on stderr (at most 4 KiB).
	Stderr string
}

// TaskRunner runs a [Task]. [Claude] and [Codex] implement it. As for
// [Connector.Run], the error is non-nil only when the agent could not run at
// all (an [*UnavailableError], a bad option) or when ctx ended first.
type TaskRunner interface {
	RunTask(ctx context.Context, t Task) (TaskResult, error)
}

// ProcessRecord identifies a running agent process so that another
// process can stop it later ([Kill]), for instance after this one has
// handed a detached run over or restarted. The agent leads its own
// process group, whose id is Pid. Persist it as JSON.
type ProcessRecord struct {
	Pid int `json:"pid"`
	// StartTime is the process's start in clock ticks after boot; with
	// BootID it tells the process apart from a later one given the same pid.
	StartTime uint64 `json:"startTime"`
	BootID    string `json:"bootId,omitempty"`
}

func recordOf(id proc.Identity) ProcessRecord {
	return ProcessRecord{Pid: id.Pid, StartTime: id.StartTime, BootID: id.BootID}
}

// KillOutcome says what Kill did.
type KillOutcome string

const (
	// KillGone: the recorded process no longer runs; nothing was signalled.
	KillGone KillOutcome = "gone"
	// KillTerminated: the group was sent SIGTERM and the agent ended.
	KillTerminated KillOutcome = "terminated"
	// KillKilled: the agent outlived the grace period; the group was sent
	// SIGKILL.
	KillKilled KillOutcome = "killed"
)

// KillGrace is how long [Kill] waits after SIGTERM before SIGKILL.
const KillGrace = 2 * time.Second

// Kill stops the process group of a recorded agent, from any process of
// the same user: SIGTERM, then SIGKILL after KillGrace, each wait bounded
// by ctx. It signals nothing unless the recorded process itself still runs
// (same pid, start time and boot), so a stale record never hits a process
// that reused the pid; an agent that has already exited is KillGone (the
// process that started it stops the rest of its group). Linux only: other
// systems return an error.
func Kill(ctx context.Context, rec ProcessRecord) (KillOutcome, error) {
	out, err := proc.KillGroup(ctx, proc.Identity{Pid: rec.Pid, StartTime: rec.StartTime, BootID: rec.BootID}, KillGrace)
	if err != nil {
		return KillOutcome(out), fmt.Errorf("agent: kill process %d: %w", rec.Pid, err)
	}
	return KillOutcome(out), nil
}

// Detached is an agent task running in the background of this process
// (see [StartTask]).
type Detached struct {
	record ProcessRecord
	cancel context.CancelCauseFunc
	done   chan struct{}
	res    TaskResult
	err    error
}

// ErrCancelled is the cause given to a detached task's context by
// [Detached.Cancel].
var ErrCancelled = errors.New("agent task cancelled")

// StartTask starts t with r and returns once the agent's process has
// started, with its record (to persist, for a cancel from another
// process), or with the error that kept it from starting. ctx bounds the
// whole run, not only the start: give it the lifetime of the server, not
// of one request. The agent still dies with this process (docs/agents.md,
// "When Stratum dies"): a detached task does not outlive its server.
func StartTask(ctx context.Context, r TaskRunner, t Task) (*Detached, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	d := &Detached{cancel: cancel, done: make(chan struct{})}
	started := make(chan ProcessRecord, 1)
	prev := t.Options.Started
	t.Options.Started = func(rec ProcessRecord) {
		started <- rec
		if prev != nil {
			prev(rec)
		}
	}
	go func() {
		defer close(d.done)
		defer cancel(nil)
		d.res, d.err = r.RunTask(ctx, t)
	}()
	select {
	case d.record = <-started:
		return d, nil
	case <-d.done:
		// Started is called before the run waits for the agent, so a
		// record, if any, is already there.
		select {
		case d.record = <-started:
			return d, nil
		default:
		}
		if d.err == nil {
			d.err = errors.New("agent: the task ended without starting a process")
		}
		return nil, d.err
	}
}

// Record is the started agent's process record.
func (d *Detached) Record() ProcessRecord { return d.record }

// Done is closed when the task has finished.
func (d *Detached) Done() <-chan struct{} { return d.done }

// Wait waits for the task to finish and returns its result and error (an
// error wrapping [ErrCancelled] after [Detached.Cancel]).
func (d *Detached) Wait() (TaskResult, error) {
	<-d.done
	return d.res, d.err
}

// Cancel stops the task from this process: its process group is stopped
// and reaped, then Wait returns.
func (d *Detached) Cancel() {
	d.cancel(ErrCancelled)
}
