package agent

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"
)

// Connector runs one attempt of one step.
type Connector interface {
	// Run executes the attempt described by req. The agent's misbehaviour
	// is reported as a Result with Failure set. The error is non-nil only
	// when the attempt could not happen: the agent cannot run at all (an
	// *UnavailableError: not installed, not logged in, no network, a quota
	// reached), an option it cannot honour, or ctx ended first (the error
	// then wraps the context's cause and any child process has been
	// stopped and reaped). The Result may still carry telemetry and stderr.
	Run(ctx context.Context, req Request) (Result, error)
}

// Request is what a connector needs to run one attempt.
type Request struct {
	RunID  string
	StepID string
	// Task is the rendered `do` text.
	Task string
	// Agent is the step's agent name ("claude" by default in specs); it is
	// passed on to command agents for information.
	Agent string
	// Attempt counts from 1.
	Attempt int
	// Contract describes the expected output; nil when the step declares
	// no `out`.
	Contract *Contract
	// PreviousFailure is the failure of the previous attempt (or of the
	// step that routed here), nil on a first attempt.
	PreviousFailure *Failure
	// Revision is set when a person sent the step's work back at a gate:
	// what they asked for.
	Revision *Revision
	// Interrupted is set when an earlier attempt started and never
	// reported (its process died): it may have left changes.
	Interrupted string
	// Workdir is the agent's working directory; empty means the caller's.
	Workdir string
	// Options configure the agent (model, sandbox, time limit, progress,
	// ...): see Options.
	Options Options
	// Timeout, when non-zero, is this attempt's time limit and overrides
	// Options.Timeout.
	Timeout time.Duration
	// Sandbox, when non-empty, is this attempt's sandbox mode and overrides
	// Options.Sandbox (a worktree item that may be written, for instance).
	Sandbox string
}

// Revision is a person's request to redo a step's work, from a gate.
type Revision struct {
	Gate       string `json:"gate"`
	Round      int    `json:"round"`
	Note       string `json:"note,omitempty"`
	ResolvedBy string `json:"resolvedBy,omitempty"`
	// SentBack is the output the person reviewed and sent back.
	SentBack any `json:"sentBack,omitempty"`
}

// Failure is the failure of an earlier attempt, as the engine records it.
type Failure struct {
	Attempt int    `json:"attempt"`
	Reason  string `json:"reason"`
}

// Result is the outcome of one attempt. Exactly one of Output (possibly a
// JSON null) and Failure is meaningful: Failure non-empty means the attempt
// failed.
type Result struct {
	// Output is the agent's JSON output in the expr value model (nil,
	// bool, float64, string, []any, *expr.Object).
	Output any
	// Failure is the reason the attempt failed; empty on success.
	Failure string
	// Usage is what the attempt spent: always set when a child process ran
	// (Ms, measured), with the tokens and cost the agent reported.
	Usage *Usage
	// Telemetry describes the run; always set when a child process ran.
	Telemetry *Telemetry
	// Stderr is the end of what the agent wrote on stderr (at most 4 KiB,
	// from a line boundary), kept for the audit whether it succeeded or not.
	Stderr string
}

// Usage is the spend of an attempt, in the engine's ledger units.
type Usage struct {
	// Ms is the attempt's wall time in milliseconds, measured by Stratum
	// from the start of the agent's process to its reaping.
	Ms float64 `json:"ms"`
	// Tokens counts every token the model read or wrote (input including
	// cache reads and writes, plus output); zero when the agent reported
	// none.
	Tokens float64 `json:"tokens"`
	// USD is the cost the CLI reported; nil when it reported none.
	USD *float64 `json:"usd,omitempty"`
	// USDSource is "reported" when USD is set.
	USDSource string `json:"usdSource,omitempty"`
	// Split breaks Tokens down when the CLI reported the parts.
	Split *TokenSplit `json:"split,omitempty"`
}

// TokenSplit breaks token usage down. Input excludes cache reads and
// cache writes, which are counted separately.
type TokenSplit struct {
	Input         float64 `json:"input"`
	Output        float64 `json:"output"`
	CacheRead     float64 `json:"cacheRead,omitempty"`
	CacheCreation float64 `json:"cacheCreation,omitempty"`
}

// Telemetry describes one attempt's run.
type Telemetry struct {
	// DurationMs is the wall time of the attempt as measured by Stratum.
	DurationMs int64 `json:"durationMs"`
	// Model is the model the agent reported, the configured one, the
	// command's program name, "human", or "unknown".
	Model string `json:"model"`
	// Effort is the configured reasoning effort, if any.
	Effort string `json:"effort,omitempty"`
}

// Contract describes the output a step must produce: a JSON object with
// exactly these fields. Field types are type strings of the spec's v1 type
// language ("string", "number", "integer", "boolean", "object", "array",
// "string[]", "(a|b)[]", "a|b", a contract name, any of them with a
// trailing "?" for optional).
type Contract struct {
	// Name is the contract's name in the spec, if it has one.
	Name string `json:"name,omitempty"`
	// Fields in declaration order.
	Fields []Field `json:"fields"`
	// Contracts are the contracts that field types refer to by name,
	// directly or through other contracts, sorted by name. Only the
	// top-level contract carries them.
	Contracts []Contract `json:"contracts,omitempty"`
}

// Field is one field of a contract.
type Field struct {
	Name string
	// Type is the field's type string, verbatim from the spec.
	Type string
}

// Optional reports whether the field may be absent or null (its type
// ends in "?").
func (f Field) Optional() bool { return strings.HasSuffix(f.Type, "?") }

type fieldJSON struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Optional bool   `json:"optional"`
}

// MarshalJSON writes {"name", "type", "optional"}; optional is derived
// from the type so that the two can never disagree.
func (f Field) MarshalJSON() ([]byte, error) {
	return json.Marshal(fieldJSON{Name: f.Name, Type: f.Type, Optional: f.Optional()})
}

// UnmarshalJSON reads what MarshalJSON writes; "optional" is ignored in
// favour of the type string.
func (f *Field) UnmarshalJSON(b []byte) error {
	var j fieldJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*f = Field{Name: j.Name, Type: j.Type}
	return nil
}

// ErrNotFound is matched (errors.Is) by a [NotFoundError].
var ErrNotFound = errors.New("agent executable not found")

// NotFoundError reports that an agent's executable is not installed. The
// connectors return it wrapped in an [*UnavailableError] of kind
// [UnavailableNotInstalled].
type NotFoundError struct {
	// Program is the name or path that was looked up.
	Program string
	// Hint is the whole message shown to the user.
	Hint string
}

func (e *NotFoundError) Error() string { return e.Hint }

// Is makes errors.Is(err, ErrNotFound) true.
func (e *NotFoundError) Is(target error) bool { return target == ErrNotFound }

// ErrUnknownAgent is returned by [Resolver.Resolve] for an agent name that has
// no connector.
var ErrUnknownAgent = errors.New("unknown agent")
