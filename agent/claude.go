package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/stratum-go/stratum/expr"
	"github.com/stratum-go/stratum/internal/proc"
)

// maxArgPrompt is the largest prompt passed as a command-line argument;
// a longer one goes on stdin, because Linux refuses a single argument over
// 128 KiB (MAX_ARG_STRLEN).
const maxArgPrompt = 100 << 10

// cliOutputLimit bounds what a model CLI may print on stdout.
const cliOutputLimit = 16 << 20

// Claude runs Claude Code non-interactively:
//
//	claude -p <prompt> --output-format json [--model M] [--permission-mode acceptEdits] [ExtraArgs...]
//
// (with the prompt on stdin instead when it is over 100 KiB) and reads the
// single JSON result envelope it prints. See docs/agents.md for the exact
// flags and envelope fields relied on.
type Claude struct {
	// Model, when set, is passed as --model.
	Model string
	// ExtraArgs are appended to the command line (e.g. --max-turns 20).
	ExtraArgs []string
	// Env is the complete environment; nil inherits Stratum's.
	Env []string
	// LookPath finds the claude executable; nil means exec.LookPath.
	LookPath func(string) (string, error)
}

// Run implements Connector.
func (c *Claude) Run(ctx context.Context, req Request) (Result, error) {
	sandbox, err := req.sandbox()
	if err != nil {
		return Result{}, err
	}
	path, err := findProgram("claude", c.LookPath, "claude CLI not found on PATH; install it or pass --agent '<command>'")
	if err != nil {
		return Result{}, err
	}
	prompt := Prompt(req)
	argv := []string{path, "-p"}
	var stdin []byte
	if len(prompt) <= maxArgPrompt {
		argv = append(argv, prompt)
	} else {
		stdin = []byte(prompt)
	}
	argv = append(argv, "--output-format", "json")
	if c.Model != "" {
		argv = append(argv, "--model", c.Model)
	}
	if sandbox == SandboxWorkspaceWrite {
		argv = append(argv, "--permission-mode", "acceptEdits")
	}
	argv = append(argv, c.ExtraArgs...)

	res, err := proc.Run(ctx, proc.Spec{
		Argv: argv, Dir: req.Workdir, Env: c.Env, Stdin: stdin,
		Timeout: req.Timeout, StdoutLimit: cliOutputLimit, StderrTail: stderrTail,
	})
	out := Result{Telemetry: &Telemetry{DurationMs: res.Duration.Milliseconds(), Model: modelOr(c.Model)}}
	if err != nil {
		return out, fmt.Errorf("agent claude: %w", err)
	}
	if res.TimedOut {
		out.Failure = processFailure("claude", res, req.Timeout)
		return out, nil
	}
	env, perr := parseClaudeEnvelope(res.Stdout)
	if perr != nil {
		// No envelope: the exit status and stderr say more than stdout.
		if reason := processFailure("claude", res, req.Timeout); reason != "" {
			out.Failure = reason
		} else if res.StdoutTruncated {
			out.Failure = fmt.Sprintf("claude printed over %d bytes on stdout without a result envelope", cliOutputLimit)
		} else {
			out.Failure = fmt.Sprintf("claude printed something other than its JSON result envelope (%v); output began %s", perr, excerpt(res.Stdout))
		}
		return out, nil
	}
	out.Usage = env.usage()
	if m := env.model(); m != "" {
		out.Telemetry.Model = m
	}
	if env.IsError || (env.Subtype != "" && env.Subtype != "success") {
		out.Failure = env.errorReason()
		return out, nil
	}
	if reason := processFailure("claude", res, req.Timeout); reason != "" {
		out.Failure = reason
		return out, nil
	}
	if len(env.StructuredOutput) > 0 && string(env.StructuredOutput) != "null" {
		v, err := expr.DecodeJSON(env.StructuredOutput)
		if err != nil {
			out.Failure = fmt.Sprintf("claude's structured_output is not usable JSON: %v", err)
			return out, nil
		}
		out.Output = v
		return out, nil
	}
	if env.Result == nil {
		out.Failure = "claude's result envelope has no result text"
		return out, nil
	}
	v, err := extractAnswer(*env.Result)
	if err != nil {
		out.Failure = "claude's " + err.Error()
		return out, nil
	}
	out.Output = v
	return out, nil
}

// claudeEnvelope is the part of `claude -p --output-format json` output
// that Stratum reads.
type claudeEnvelope struct {
	Type             string          `json:"type"`
	Subtype          string          `json:"subtype"`
	IsError          bool            `json:"is_error"`
	Result           *string         `json:"result"`
	StructuredOutput json.RawMessage `json:"structured_output"`
	Errors           []string        `json:"errors"`
	TotalCostUSD     *float64        `json:"total_cost_usd"`
	Usage            *struct {
		InputTokens              float64 `json:"input_tokens"`
		OutputTokens             float64 `json:"output_tokens"`
		CacheCreationInputTokens float64 `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     float64 `json:"cache_read_input_tokens"`
	} `json:"usage"`
	ModelUsage map[string]struct {
		CostUSD float64 `json:"costUSD"`
	} `json:"modelUsage"`
}

// parseClaudeEnvelope reads the result envelope: one JSON object with
// "type": "result", or (as printed with --verbose) a JSON array of
// messages whose last "result" message is the envelope.
func parseClaudeEnvelope(stdout []byte) (*claudeEnvelope, error) {
	s := bytes.TrimSpace(stdout)
	if len(s) == 0 {
		return nil, fmt.Errorf("no output")
	}
	if s[0] == '[' {
		var msgs []json.RawMessage
		if err := json.Unmarshal(s, &msgs); err != nil {
			return nil, err
		}
		// Messages are objects: an element is never searched as an array
		// in turn (nested arrays would be re-decoded at every level, a
		// quadratic cost on hostile output).
		for i := len(msgs) - 1; i >= 0; i-- {
			if m := bytes.TrimSpace(msgs[i]); len(m) > 0 && m[0] == '{' {
				if env, err := parseClaudeEnvelope(m); err == nil {
					return env, nil
				}
			}
		}
		return nil, fmt.Errorf("no result message in the array")
	}
	var env claudeEnvelope
	if err := json.Unmarshal(s, &env); err != nil {
		return nil, err
	}
	if env.Type != "result" {
		return nil, fmt.Errorf("type is %q, want \"result\"", env.Type)
	}
	return &env, nil
}

func (e *claudeEnvelope) errorReason() string {
	kind := e.Subtype
	if kind == "" {
		kind = "error"
	}
	var detail []string
	if e.Result != nil && strings.TrimSpace(*e.Result) != "" {
		detail = append(detail, strings.TrimSpace(*e.Result))
	}
	detail = append(detail, e.Errors...)
	if len(detail) == 0 {
		return fmt.Sprintf("claude reported an error (%s)", kind)
	}
	return fmt.Sprintf("claude reported an error (%s): %s", kind, tail([]byte(strings.Join(detail, "; "))))
}

func (e *claudeEnvelope) usage() *Usage {
	if e.Usage == nil && e.TotalCostUSD == nil {
		return nil
	}
	u := &Usage{}
	if e.Usage != nil {
		s := &TokenSplit{
			Input: e.Usage.InputTokens, Output: e.Usage.OutputTokens,
			CacheRead: e.Usage.CacheReadInputTokens, CacheCreation: e.Usage.CacheCreationInputTokens,
		}
		u.Split = s
		u.Tokens = s.Input + s.Output + s.CacheRead + s.CacheCreation
	}
	if e.TotalCostUSD != nil {
		cost := *e.TotalCostUSD
		u.USD = &cost
		u.USDSource = "reported"
	}
	return u
}

// model is the model that cost the most in modelUsage (Claude Code also
// calls a small model for housekeeping), ties broken by name; "" when the
// envelope names none.
func (e *claudeEnvelope) model() string {
	names := make([]string, 0, len(e.ModelUsage))
	for n := range e.ModelUsage {
		if n != "" {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	best := ""
	for _, n := range names {
		if best == "" || e.ModelUsage[n].CostUSD > e.ModelUsage[best].CostUSD {
			best = n
		}
	}
	return best
}

func modelOr(configured string) string {
	if configured != "" {
		return configured
	}
	return "unknown"
}
