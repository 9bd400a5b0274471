package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/stratum-go/stratum/expr"
	"github.com/stratum-go/stratum/internal/proc"
)

// DefaultOutputLimit bounds what an agent may print on stdout; more is a
// failed attempt. It is far above any sensible step output and keeps a
// runaway agent from exhausting memory.
const DefaultOutputLimit = 4 << 20

// stderrTail is how much of an agent's stderr is kept for failure reasons.
const stderrTail = 16 << 10

// Command runs any executable as an agent. The executable receives one
// JSON object on stdin (see [CommandInput]) and must print the step output
// as one JSON value on stdout and exit 0. See docs/agents.md.
type Command struct {
	// Argv is the program and its arguments; Argv[0] is looked up on PATH
	// unless it contains a path separator (a relative path is taken from
	// the current directory, not from the request's Workdir).
	Argv []string
	// Env is the complete environment; nil inherits Stratum's.
	Env []string
	// OutputLimit bounds stdout in bytes; zero means DefaultOutputLimit.
	OutputLimit int
	// LookPath finds Argv[0]; nil means exec.LookPath.
	LookPath func(string) (string, error)
}

// NewCommand makes a Command from a command line split by
// SplitCommandLine.
func NewCommand(line string) (*Command, error) {
	argv, err := SplitCommandLine(line)
	if err != nil {
		return nil, err
	}
	return &Command{Argv: argv}, nil
}

// CommandInput is the JSON object a command agent reads on stdin.
type CommandInput struct {
	RunID   string `json:"runId"`
	StepID  string `json:"stepId"`
	Task    string `json:"task"`
	Agent   string `json:"agent"`
	Attempt int    `json:"attempt"`
	// Sandbox is the attempt's sandbox mode (always set): how much the
	// agent may change, for a command that runs a model CLI itself.
	Sandbox string `json:"sandbox"`
	// Model and Effort are the configured ones, when set.
	Model  string `json:"model,omitempty"`
	Effort string `json:"effort,omitempty"`
	// TimeoutMs is the attempt's time limit in milliseconds, when it has
	// one, so that the agent can budget its time.
	TimeoutMs int64 `json:"timeoutMs,omitempty"`
	// The fields above come before the contract and the previous failure,
	// which stay last, as they were before the options were added.
	Contract *Contract `json:"contract"`
	// PreviousFailure is null on a first attempt.
	PreviousFailure *Failure `json:"previousFailure"`
	// Revision is what a person asked for when they sent the step's work
	// back at a gate; absent otherwise.
	Revision *Revision `json:"revision,omitempty"`
	// Interrupted says an earlier attempt started and never reported:
	// inspect the workspace first.
	Interrupted string `json:"interrupted,omitempty"`
}

// Input is the [CommandInput] for req.
func Input(req Request) CommandInput {
	o := req.options()
	return CommandInput{
		RunID: req.RunID, StepID: req.StepID, Task: req.Task, Agent: req.Agent,
		Attempt: req.Attempt, Contract: req.Contract, PreviousFailure: req.PreviousFailure,
		Revision: req.Revision, Interrupted: req.Interrupted,
		Sandbox: o.sandbox(), Model: o.Model, Effort: o.Effort, TimeoutMs: o.Timeout.Milliseconds(),
	}
}

// encodeInput is the exact stdin of a command agent: the CommandInput as
// compact JSON (without HTML escaping, so "a >= b" stays readable) and a
// trailing newline.
func encodeInput(req Request) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(Input(req)); err != nil {
		return nil, fmt.Errorf("agent: encode request for step %s: %w", req.StepID, err)
	}
	return b.Bytes(), nil
}

// Run implements [Connector].
func (c *Command) Run(ctx context.Context, req Request) (Result, error) {
	if len(c.Argv) == 0 {
		return Result{}, errors.New("agent: command connector has no command")
	}
	o := req.options()
	if err := o.Validate("command"); err != nil {
		return Result{}, err
	}
	path, err := findProgram(c.Argv[0], c.LookPath, fmt.Sprintf("agent command %q not found", c.Argv[0]))
	if err != nil {
		return Result{}, err
	}
	stdin, err := encodeInput(req)
	if err != nil {
		return Result{}, err
	}
	limit := orDefault(c.OutputLimit, DefaultOutputLimit)
	name := filepath.Base(c.Argv[0])
	var progress *lineSplitter
	if o.Progress != nil {
		// Each stderr line is a progress line (docs/agents.md: an agent
		// writes its logs and progress to stderr).
		progress = &lineSplitter{max: maxProgressLine, keepLong: true, fn: func(line []byte) {
			o.progress(oneLine(name + ": " + string(line)))
		}}
	}
	spec := proc.Spec{
		Argv:        append([]string{path}, c.Argv[1:]...),
		Dir:         req.Workdir,
		Env:         c.Env,
		Stdin:       stdin,
		Timeout:     o.Timeout,
		StdoutLimit: limit,
		StderrTail:  stderrTail,
		OnStart:     onStart(o),
	}
	if progress != nil {
		spec.Stderr = progress
	}
	res, err := proc.Run(ctx, spec)
	if progress != nil {
		progress.finish()
	}
	run := newCLIRun(res, name, o)
	run.telemetry.Effort = "" // a command reports no effort of its own
	out := run.result()
	if err != nil {
		return out, fmt.Errorf("agent command %s: %w", c.Argv[0], err)
	}
	if reason := processFailure("agent", res, o.Timeout); reason != "" {
		out.Failure = reason
		return out, nil
	}
	if res.StdoutTruncated {
		out.Failure = fmt.Sprintf("agent printed %d bytes on stdout, over the %d-byte output limit", res.StdoutBytes, limit)
		return out, nil
	}
	out.Output, out.Failure = decodeOutput(res.Stdout)
	return out, nil
}

// decodeOutput parses a command agent's stdout as exactly one JSON value.
func decodeOutput(stdout []byte) (any, string) {
	if len(strings.TrimSpace(string(stdout))) == 0 {
		return nil, "agent printed nothing on stdout; it must print the step output as one JSON value"
	}
	v, err := expr.DecodeJSON(stdout)
	if err != nil {
		return nil, fmt.Sprintf("agent printed invalid JSON (%v); output began %s", err, excerpt(stdout))
	}
	return v, ""
}

// processFailure describes a child that did not exit 0 by itself, or
// returns "" when it did. who names the program in the reason.
func processFailure(who string, res proc.Result, timeout time.Duration) string {
	switch {
	case res.TimedOut:
		return fmt.Sprintf("%s timed out after %v (the attempt's time limit); its process group was stopped", who, timeout)
	case res.Signal != "":
		return fmt.Sprintf("%s was killed by signal %q%s", who, res.Signal, stderrSuffix(res.StderrTail))
	case res.ExitCode != 0:
		return fmt.Sprintf("%s exited with status %d%s", who, res.ExitCode, stderrSuffix(res.StderrTail))
	}
	return ""
}

func stderrSuffix(stderr []byte) string {
	if t := tail(stderr); t != "" {
		return ": " + t
	}
	return " (no output on stderr)"
}

// findProgram resolves a program name the way the connectors document: a
// name with a path separator is a path (made absolute, since the child
// runs in the request's Workdir), anything else is looked up on PATH.
func findProgram(name string, lookPath func(string) (string, error), notFound string) (string, error) {
	if strings.ContainsRune(name, os.PathSeparator) || strings.ContainsRune(name, '/') {
		abs, err := filepath.Abs(name)
		if err != nil {
			return "", fmt.Errorf("agent: %s: %w", name, err)
		}
		fi, err := os.Stat(abs)
		if err != nil {
			return "", notInstalled(name, notFound+": "+err.Error())
		}
		// Checked here, not left to exec: a pre-flight check (stratum run
		// --agent) must refuse what can never start before a run exists.
		// The subject is the caller's "... not found" phrase without it.
		subject := strings.TrimSuffix(notFound, " not found")
		if fi.IsDir() {
			return "", notInstalled(name, subject+" is a directory, not a program")
		}
		if fi.Mode()&0o111 == 0 {
			return "", notInstalled(name, fmt.Sprintf("%s is not executable (chmod +x %s, or name its interpreter: 'sh %s')", subject, name, name))
		}
		return abs, nil
	}
	if lookPath == nil {
		lookPath = exec.LookPath
	}
	p, err := lookPath(name)
	if err != nil {
		return "", notInstalled(name, notFound)
	}
	return p, nil
}

// notInstalled is the error of a program that cannot be started at all.
func notInstalled(name, hint string) error {
	return &UnavailableError{Agent: filepath.Base(name), Kind: UnavailableNotInstalled, Reason: hint,
		Err: &NotFoundError{Program: name, Hint: hint}}
}

func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}
