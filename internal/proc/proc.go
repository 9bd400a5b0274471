package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"time"
)

// Default limits, used when the corresponding [Spec] field is zero.
const (
	// DefaultStdoutLimit is how many bytes of stdout are kept.
	DefaultStdoutLimit = 1 << 20
	// DefaultStderrTail is how many trailing bytes of stderr are kept.
	DefaultStderrTail = 4 << 10
	// DefaultGrace is the time between SIGTERM and SIGKILL when a child is
	// stopped, and the time Run waits for output pipes held open by
	// processes that left the group after the child exited.
	DefaultGrace = 2 * time.Second
)

// ErrNoCommand is returned when [Spec.Argv] is empty.
var ErrNoCommand = errors.New("proc: empty argv")

// Spec describes one child process.
type Spec struct {
	// Argv is the program and its arguments. Argv[0] is looked up on PATH
	// when it contains no path separator. No shell is involved.
	Argv []string
	// Dir is the working directory; empty means the caller's.
	Dir string
	// Env is the complete environment; nil inherits the caller's.
	Env []string
	// Stdin is written to the child's standard input, which is then closed.
	// Nil connects stdin to the null device.
	Stdin []byte
	// Timeout bounds the run; zero means no limit other than ctx. When it
	// expires the group is stopped and Result.TimedOut is set.
	Timeout time.Duration
	// Grace is the delay between SIGTERM and SIGKILL; zero means DefaultGrace.
	Grace time.Duration
	// StdoutLimit is how many bytes of stdout are kept in Result.Stdout;
	// the rest is read and discarded. Zero means DefaultStdoutLimit.
	StdoutLimit int
	// StderrTail is how many trailing bytes of stderr are kept; zero means
	// DefaultStderrTail.
	StderrTail int
	// Stdout, when set, receives the child's stdout instead of Result.Stdout
	// (StdoutLimit is then ignored). It must never return an error and must
	// bound its own memory: a writer that fails would stall the child.
	Stdout io.Writer
	// Stderr, when set, receives a copy of everything the child writes to
	// stderr, as it is written (Result.StderrTail is kept as well). The same
	// rules as for Stdout apply.
	Stderr io.Writer
	// OnStart, when set, is called once the child has started, before Run
	// waits for it, with the child's identity (its pid is its process-group
	// id): a caller can persist it so that another process can stop the
	// group with [KillGroup]. It runs on Run's goroutine and must not block.
	OnStart func(Identity)
	// TempPaths are files or directories the caller made for this child
	// (an output file, a scratch directory). Run does not remove them; the
	// caller does after Run returns. If this process dies while the child
	// runs, even by SIGKILL, the watchdog removes them (see [Run]).
	TempPaths []string
}

// Result is what is known about a finished child.
type Result struct {
	// Stdout holds the first StdoutLimit bytes the child wrote.
	Stdout []byte
	// StdoutBytes counts every byte the child wrote to stdout, kept or not.
	StdoutBytes int64
	// StdoutTruncated is set when bytes beyond StdoutLimit were discarded.
	StdoutTruncated bool
	// StderrTail holds the last StderrTail bytes the child wrote to stderr.
	StderrTail []byte
	// StderrBytes counts every byte the child wrote to stderr.
	StderrBytes int64
	// ExitCode is the exit status, or -1 when the child died from a signal.
	ExitCode int
	// Signal names the signal that ended the child ("killed",
	// "terminated", ...), empty when it exited by itself.
	Signal string
	// TimedOut is set when Spec.Timeout expired and Run stopped the group.
	TimedOut bool
	// Duration is the time from start to reaping.
	Duration time.Duration
}

// Success reports whether the child exited with status 0 by itself.
func (r Result) Success() bool { return r.ExitCode == 0 && r.Signal == "" && !r.TimedOut }

// Run starts the child, feeds it stdin, waits for it and returns what it
// did. A non-zero exit or a timeout is reported in the [Result], not as an
// error. The error is non-nil only when the child could not be started
// (wrapping the cause, e.g. exec.ErrNotFound or a permission error) or when
// ctx ended first; in that last case the group has been stopped and reaped,
// the Result describes what happened so far, and the error wraps the
// context's cause (so errors.Is(err, context.Canceled) works).
//
// On Linux the child also dies with this process, however it ends: it gets
// SIGKILL as its parent-death signal, and a watchdog process kills its
// whole group and removes [Spec.TempPaths] when this process is gone (see the
// package documentation for what that covers).
func Run(ctx context.Context, s Spec) (Result, error) {
	if len(s.Argv) == 0 {
		return Result{}, ErrNoCommand
	}
	if s.Timeout < 0 || s.Grace < 0 || s.StdoutLimit < 0 || s.StderrTail < 0 {
		return Result{}, fmt.Errorf("proc: negative limit in spec for %q", s.Argv[0])
	}
	grace := orDefault(s.Grace, DefaultGrace)

	cmd := exec.Command(s.Argv[0], s.Argv[1:]...)
	cmd.Dir = s.Dir
	cmd.Env = s.Env
	if s.Stdin != nil {
		cmd.Stdin = bytes.NewReader(s.Stdin)
	}
	out := &headBuffer{limit: orDefault(s.StdoutLimit, DefaultStdoutLimit)}
	var counted *countingWriter
	if s.Stdout != nil {
		counted = &countingWriter{w: s.Stdout}
		cmd.Stdout = counted
	} else {
		cmd.Stdout = out
	}
	errTail := &tailBuffer{limit: orDefault(s.StderrTail, DefaultStderrTail)}
	cmd.Stderr = errTail
	if s.Stderr != nil {
		cmd.Stderr = &teeWriter{tail: errTail, w: s.Stderr}
	}
	// Once the child has exited, do not wait forever for pipes still held
	// by a process that escaped the group (setsid, double fork).
	cmd.WaitDelay = grace
	isolate(cmd)

	// Checked only now so that a cancelled context never starts a child.
	if err := ctx.Err(); err != nil {
		return Result{}, fmt.Errorf("run %s: %w", s.Argv[0], context.Cause(ctx))
	}
	// Registered before the start, so that no moment exists in which the
	// child runs and a death of this process would leave the paths behind.
	guard := watch(s.TempPaths)
	start := time.Now()
	if err := startChild(cmd); err != nil {
		guard.release()
		return Result{}, fmt.Errorf("start %s: %w", s.Argv[0], err)
	}
	guard.group(cmd.Process.Pid)
	if s.OnStart != nil {
		s.OnStart(identify(cmd.Process.Pid))
	}

	exited := make(chan leaderExit, 1)
	go func() { exited <- awaitLeader(cmd) }()

	var timeout <-chan time.Time
	if s.Timeout > 0 {
		t := time.NewTimer(s.Timeout)
		defer t.Stop()
		timeout = t.C
	}

	var res Result
	var ctxErr error
	var ex leaderExit
	select {
	case ex = <-exited:
	case <-timeout:
		res.TimedOut = true
		ex = stop(cmd, exited, grace)
	case <-ctx.Done():
		ctxErr = context.Cause(ctx)
		ex = stop(cmd, exited, grace)
	}
	// Whatever the leader left behind in its group goes with it.
	signalGroup(cmd, sigKill)
	guard.release()
	waitErr := ex.err
	if !ex.reaped {
		waitErr = cmd.Wait()
	}
	res.Duration = time.Since(start)

	if counted != nil {
		res.StdoutBytes = counted.n
	} else {
		res.Stdout = out.buf
		res.StdoutBytes = out.n
		res.StdoutTruncated = out.n > int64(len(out.buf))
	}
	res.StderrTail = errTail.buf
	res.StderrBytes = errTail.n
	if ps := cmd.ProcessState; ps != nil {
		res.ExitCode = ps.ExitCode()
		res.Signal = signalName(ps)
	}

	var exitErr *exec.ExitError
	switch {
	case ctxErr != nil:
		return res, fmt.Errorf("run %s: %w", s.Argv[0], ctxErr)
	case waitErr == nil, errors.As(waitErr, &exitErr), errors.Is(waitErr, exec.ErrWaitDelay):
		return res, nil
	default:
		return res, fmt.Errorf("wait for %s: %w", s.Argv[0], waitErr)
	}
}

// leaderExit says how the wait for the child (the group leader) ended.
// reaped is false when the child is still a zombie that cmd.Wait must reap.
type leaderExit struct {
	reaped bool
	err    error
}

// stop asks the group to terminate, then kills it after the grace period,
// and returns once the leader has exited.
func stop(cmd *exec.Cmd, exited <-chan leaderExit, grace time.Duration) leaderExit {
	signalGroup(cmd, sigTerm)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case ex := <-exited:
		return ex
	case <-t.C:
		signalGroup(cmd, sigKill)
		return <-exited
	}
}

func orDefault[T int | time.Duration](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

// headBuffer keeps the first limit bytes written and counts the rest.
type headBuffer struct {
	limit int
	buf   []byte
	n     int64
}

func (b *headBuffer) Write(p []byte) (int, error) {
	b.n += int64(len(p))
	if room := b.limit - len(b.buf); room > 0 {
		b.buf = append(b.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// tailBuffer keeps the last limit bytes written.
type tailBuffer struct {
	limit int
	buf   []byte
	n     int64
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.n += int64(len(p))
	if len(p) >= b.limit {
		b.buf = append(b.buf[:0], p[len(p)-b.limit:]...)
		return len(p), nil
	}
	if over := len(b.buf) + len(p) - b.limit; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	b.buf = append(b.buf, p...)
	return len(p), nil
}

// teeWriter keeps the stderr tail and forwards a copy to a caller's writer.
type teeWriter struct {
	tail *tailBuffer
	w    io.Writer
}

func (t *teeWriter) Write(p []byte) (int, error) {
	t.tail.Write(p)
	_, _ = t.w.Write(p) // as for countingWriter: never stall the child
	return len(p), nil
}

// countingWriter forwards to a caller's writer and counts bytes.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	_, _ = c.w.Write(p) // the contract says it never fails; never stall the child
	return len(p), nil
}
