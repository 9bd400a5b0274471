package judge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/stratum-go/stratum/internal/proc"
)

// Request is one criterion to judge.
type Request struct {
	// Criterion is the statement to decide, e.g. "the review is complete".
	Criterion string `json:"criterion"`
	// Stakes is how costly a wrong "holds" would be: "cheap", "default",
	// "paranoid" or any other label the policy uses. A judge may spend more
	// effort (or refuse more readily) at higher stakes.
	Stakes string `json:"stakes"`
	// Context is the JSON value the criterion is judged against: for a
	// guard predicate {"result": {resource_id, edge, artifacts,
	// modified_files}}, for an ensure the step's result.
	Context any `json:"context"`
}

// Verdict is a judge's answer.
type Verdict struct {
	Holds  bool   `json:"holds"`
	Reason string `json:"reason"`
	// Model names what judged (free text), "" when unknown.
	Model string `json:"model"`
	Usage Usage  `json:"usage"`
}

// Usage is what judging cost.
type Usage struct {
	Tokens int64 `json:"tokens"`
	// USD is the cost in US dollars, 0 when the judge does not say.
	USD float64 `json:"usd,omitempty"`
}

// Judge decides one criterion. An error means no decision was made (the
// caller must treat the criterion as not holding).
type Judge interface {
	Judge(ctx context.Context, req Request) (Verdict, error)
}

// Environment variables read by [FromEnv].
const (
	// EnvCommand is the judge command line, run with /bin/sh -c.
	EnvCommand = "STRATUM_JUDGE_COMMAND"
	// EnvTimeout is the per-call timeout in whole seconds (default 120).
	EnvTimeout = "STRATUM_JUDGE_TIMEOUT_S"
)

// Defaults of [CommandJudge].
const (
	DefaultTimeout   = 120 * time.Second
	DefaultMaxOutput = 1 << 20
	maxStderr        = 8 << 10
)

// FromEnv builds the configured judge: a [CommandJudge] when
// STRATUM_JUDGE_COMMAND ([EnvCommand]) is set, nil when nothing is
// configured. A timeout that is set but not a positive integer is an error,
// not a silent default.
func FromEnv(getenv func(string) string) (Judge, error) {
	cmd := strings.TrimSpace(getenv(EnvCommand))
	if cmd == "" {
		return nil, nil
	}
	j := &CommandJudge{Command: cmd}
	if s := strings.TrimSpace(getenv(EnvTimeout)); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%s=%q: want a positive number of seconds", EnvTimeout, s)
		}
		j.Timeout = time.Duration(n) * time.Second
	}
	return j, nil
}

// CommandJudge runs Command with /bin/sh -c in its own process group for
// every request. The request is written to the child's stdin as one JSON
// object; the child must print one JSON object on stdout with at least a
// boolean "holds" ("reason", "model" and "usage": {"tokens"} are optional)
// and exit 0. On timeout the whole process group is killed.
type CommandJudge struct {
	Command string
	// Timeout per call; zero means DefaultTimeout.
	Timeout time.Duration
	// MaxOutput bounds stdout in bytes; zero means DefaultMaxOutput.
	MaxOutput int
}

// ErrOutputTooLarge reports a judge that printed more than
// [CommandJudge.MaxOutput].
var ErrOutputTooLarge = errors.New("judge output too large")

// Judge runs the command once; it implements [Judge].
func (j *CommandJudge) Judge(ctx context.Context, req Request) (Verdict, error) {
	var in bytes.Buffer
	enc := json.NewEncoder(&in)
	enc.SetEscapeHTML(false) // "a->b" stays readable for simple judges
	if err := enc.Encode(req); err != nil {
		return Verdict{}, fmt.Errorf("judge: encode request: %w", err)
	}
	timeout := j.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	limit := j.MaxOutput
	if limit <= 0 {
		limit = DefaultMaxOutput
	}
	res, err := proc.Run(ctx, proc.Spec{
		Argv:        []string{"/bin/sh", "-c", j.Command},
		Stdin:       in.Bytes(),
		Timeout:     timeout,
		StdoutLimit: limit,
		StderrTail:  maxStderr,
	})
	switch {
	case err != nil:
		return Verdict{}, fmt.Errorf("judge command: %w", err)
	case res.TimedOut:
		return Verdict{}, fmt.Errorf("judge command timed out after %s (process group killed)", timeout)
	case !res.Success():
		return Verdict{}, fmt.Errorf("judge command failed: %s%s", exitDescription(res), stderrTail(res.StderrTail))
	case res.StdoutTruncated:
		return Verdict{}, fmt.Errorf("%w: more than %d bytes on stdout", ErrOutputTooLarge, limit)
	}
	return parseVerdict(res.Stdout)
}

func exitDescription(res proc.Result) string {
	if res.Signal != "" {
		return "killed by signal " + res.Signal
	}
	return fmt.Sprintf("exit status %d", res.ExitCode)
}

func stderrTail(b []byte) string {
	s := strings.TrimSpace(string(b))
	if s == "" {
		return ""
	}
	return ": " + s
}

func parseVerdict(out []byte) (Verdict, error) {
	dec := json.NewDecoder(bytes.NewReader(out))
	var raw map[string]json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return Verdict{}, fmt.Errorf("judge output is not a JSON object: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Verdict{}, errors.New("judge output has data after the JSON object")
	}
	var v Verdict
	h, ok := raw["holds"]
	if !ok || json.Unmarshal(h, &v.Holds) != nil || string(h) == "null" {
		return Verdict{}, errors.New(`judge output needs a boolean "holds"`)
	}
	if r, ok := raw["reason"]; ok && string(r) != "null" {
		if json.Unmarshal(r, &v.Reason) != nil {
			return Verdict{}, errors.New(`judge output "reason" is not a string`)
		}
	}
	if m, ok := raw["model"]; ok && string(m) != "null" {
		if json.Unmarshal(m, &v.Model) != nil {
			return Verdict{}, errors.New(`judge output "model" is not a string`)
		}
	}
	if u, ok := raw["usage"]; ok && string(u) != "null" {
		var usage struct {
			Tokens float64 `json:"tokens"`
			USD    float64 `json:"usd"`
		}
		if json.Unmarshal(u, &usage) != nil || usage.Tokens < 0 || usage.Tokens != float64(int64(usage.Tokens)) ||
			usage.USD < 0 || math.IsInf(usage.USD, 0) {
			return Verdict{}, errors.New(`judge output "usage" must be {"tokens": non-negative integer, "usd"?: non-negative number}`)
		}
		v.Usage = Usage{Tokens: int64(usage.Tokens), USD: usage.USD}
	}
	return v, nil
}
