package agent

import (
	"bytes"
	"encoding/json"

	"github.com/stratum-go/stratum/internal/proc"
)

// auditStderr bounds the stderr kept in a result for the audit.
const auditStderr = 4 << 10

// cliRun is what one run of a model CLI (claude, codex) produced, before a
// step's JSON value is taken from its final message (Run) or the message
// is returned as text (RunTask).
type cliRun struct {
	// ran is set when a child process ran (telemetry and usage are then
	// meaningful).
	ran      bool
	exitCode int
	// text is the final message; structured is Claude's structured_output.
	text       string
	structured json.RawMessage
	// failure is non-empty when the agent failed.
	failure   string
	usage     *Usage
	telemetry *Telemetry
	stderr    string
}

// newCLIRun starts the record of a finished child: measured time, the
// configured model and effort, the stderr tail.
func newCLIRun(res proc.Result, model string, o Options) cliRun {
	ms := res.Duration.Milliseconds()
	return cliRun{
		ran:       true,
		exitCode:  res.ExitCode,
		usage:     &Usage{Ms: float64(ms)},
		telemetry: &Telemetry{DurationMs: ms, Model: model, Effort: o.Effort},
		stderr:    auditTail(res.StderrTail),
	}
}

// result is the step Result without Output.
func (r cliRun) result() Result {
	if !r.ran {
		return Result{}
	}
	return Result{Failure: r.failure, Usage: r.usage, Telemetry: r.telemetry, Stderr: r.stderr}
}

func (r cliRun) taskResult() TaskResult {
	if !r.ran {
		return TaskResult{}
	}
	return TaskResult{Text: r.text, Failure: r.failure, ExitCode: r.exitCode, Usage: r.usage, Telemetry: r.telemetry, Stderr: r.stderr}
}

// onStart turns Options.Started into proc's start hook.
func onStart(o Options) func(proc.Identity) {
	if o.Started == nil {
		return nil
	}
	return func(id proc.Identity) { o.Started(recordOf(id)) }
}

// auditTail is the end of b, at most auditStderr bytes, from a line
// boundary when one is near, as valid UTF-8.
func auditTail(b []byte) string {
	s, _ := endOf(bytes.TrimRight(b, " \t\r\n"), auditStderr)
	return s
}
