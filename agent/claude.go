package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/stratum-go/stratum/expr"
	"github.com/stratum-go/stratum/internal/proc"
)

// maxArgPrompt is the largest prompt passed as a command-line argument;
// a longer one goes on stdin, because Linux refuses a single argument over
// 128 KiB (MAX_ARG_STRLEN).
const maxArgPrompt = 100 << 10

// cliOutputLimit bounds what Stratum keeps of a model CLI's output: one
// stream line, a final message, a JSON envelope.
const cliOutputLimit = 16 << 20

// Claude runs Claude Code non-interactively:
//
//	claude -p <prompt> --output-format stream-json --verbose [--model M]
//	    [--permission-mode MODE] [--effort E] [--allowedTools T...]
//	    [--disallowedTools T...] [--thinking MODE | --max-thinking-tokens N]
//	    [--thinking-display D] [ExtraArgs...]
//
// (with the prompt on stdin instead when it is over 100 KiB) and reads the
// stream of JSON messages it prints, one per line: progress as it comes,
// then the result envelope. See docs/agents.md for the exact flags and
// fields relied on.
type Claude struct {
	// Model, when set, is passed as --model (Options.Model overrides it).
	Model string
	// ExtraArgs are appended to the command line (e.g. --max-turns 20).
	ExtraArgs []string
	// Env is the complete environment; nil inherits Stratum's.
	Env []string
	// LookPath finds the claude executable; nil means exec.LookPath.
	LookPath func(string) (string, error)
}

// Run implements [Connector]: the step's prompt ([Prompt]), and the JSON
// value taken from the final message.
func (c *Claude) Run(ctx context.Context, req Request) (Result, error) {
	o := req.options()
	run, err := c.run(ctx, Prompt(req), req.Workdir, o)
	out := run.result()
	if err != nil || out.Failure != "" {
		return out, err
	}
	if len(run.structured) > 0 && string(run.structured) != "null" {
		v, err := expr.DecodeJSON(run.structured)
		if err != nil {
			out.Failure = fmt.Sprintf("claude's structured_output is not usable JSON: %v", err)
			return out, nil
		}
		out.Output = v
		return out, nil
	}
	v, err := extractAnswer(run.text)
	if err != nil {
		out.Failure = "claude's " + err.Error()
		return out, nil
	}
	out.Output = v
	return out, nil
}

// RunTask implements [TaskRunner]: the prompt as it is, and the final
// message as text.
func (c *Claude) RunTask(ctx context.Context, t Task) (TaskResult, error) {
	run, err := c.run(ctx, t.Prompt, t.Workdir, t.Options)
	return run.taskResult(), err
}

// args builds the command line after the program.
func (c *Claude) args(prompt string, o Options) (argv []string, stdin []byte) {
	argv = []string{"-p"}
	if len(prompt) <= maxArgPrompt {
		argv = append(argv, prompt)
	} else {
		stdin = []byte(prompt)
	}
	argv = append(argv, "--output-format", "stream-json", "--verbose")
	if m := c.model(o); m != "" {
		argv = append(argv, "--model", m)
	}
	if mode := claudePermissionMode(o); mode != "" {
		argv = append(argv, "--permission-mode", mode)
	}
	if o.Effort != "" {
		argv = append(argv, "--effort", o.Effort)
	}
	// Each rule is its own argument (a rule may hold spaces, as in
	// "Bash(git log *)"); the flags take every argument up to the next one
	// starting with "-", which Validate keeps rules from doing.
	if len(o.AllowedTools) > 0 {
		argv = append(append(argv, "--allowedTools"), o.AllowedTools...)
	}
	if len(o.DisallowedTools) > 0 {
		argv = append(append(argv, "--disallowedTools"), o.DisallowedTools...)
	}
	if t := o.Thinking; t != nil {
		// The mapping the Claude Agent SDK itself uses for these flags.
		switch {
		case t.Type == "disabled":
			argv = append(argv, "--thinking", "disabled")
		case t.Type == "enabled" && t.BudgetTokens > 0:
			argv = append(argv, "--max-thinking-tokens", strconv.Itoa(t.BudgetTokens))
		default:
			argv = append(argv, "--thinking", "adaptive")
		}
		if t.Type != "disabled" && t.Display != "" {
			argv = append(argv, "--thinking-display", t.Display)
		}
	}
	return append(argv, c.ExtraArgs...), stdin
}

func (c *Claude) model(o Options) string {
	if o.Model != "" {
		return o.Model
	}
	return c.Model
}

// claudePermissionMode maps the sandbox to Claude Code's permission modes:
// read-only keeps the CLI's default mode (print mode may read; edits and
// commands that would need approval are denied), workspace-write accepts
// edits, danger-full-access bypasses every check.
func claudePermissionMode(o Options) string {
	if o.PermissionMode != "" {
		return o.PermissionMode
	}
	switch o.sandbox() {
	case SandboxWorkspaceWrite:
		return "acceptEdits"
	case SandboxDangerFullAccess:
		return "bypassPermissions"
	}
	return ""
}

// run runs the CLI once and interprets its outcome, short of taking a JSON
// value out of the final message.
func (c *Claude) run(ctx context.Context, prompt, workdir string, o Options) (cliRun, error) {
	if err := o.Validate("claude"); err != nil {
		return cliRun{}, err
	}
	path, err := findProgram("claude", c.LookPath, "claude CLI not found on PATH; install it or pass --agent '<command>'")
	if err != nil {
		return cliRun{}, err
	}
	args, stdin := c.args(prompt, o)
	stream := newClaudeStream(o)
	res, err := proc.Run(ctx, proc.Spec{
		Argv: append([]string{path}, args...), Dir: workdir, Env: c.Env, Stdin: stdin,
		Timeout: o.Timeout, StderrTail: stderrTail, Stdout: stream, OnStart: onStart(o),
	})
	stream.finish()
	run := newCLIRun(res, modelOr(c.model(o)), o)
	if err != nil {
		return run, fmt.Errorf("agent claude: %w", err)
	}
	if res.TimedOut {
		run.failure = processFailure("claude", res, o.Timeout)
		return run, nil
	}
	env := stream.envelope()
	if env == nil {
		// No envelope: the exit status and stderr say more than stdout.
		reason := processFailure("claude", res, o.Timeout)
		if kind := classifyText(string(res.StderrTail)); kind != "" && reason != "" {
			return run, &UnavailableError{Agent: "claude", Kind: kind, Reason: tail(res.StderrTail)}
		}
		switch {
		case reason != "":
			run.failure = reason
		case stream.headOver:
			run.failure = fmt.Sprintf("claude printed over %d bytes on stdout without a result envelope", cliOutputLimit)
		default:
			run.failure = fmt.Sprintf("claude printed something other than its JSON result envelope (%v); output began %s", stream.headErr(), excerpt(stream.head))
		}
		return run, nil
	}
	run.usage = env.usage(run.usage)
	if m := env.model(); m != "" {
		run.telemetry.Model = m
	} else if stream.initModel != "" && run.telemetry.Model == "unknown" {
		run.telemetry.Model = stream.initModel
	}
	if env.Result != nil {
		run.text = *env.Result
	}
	if env.IsError || (env.Subtype != "" && env.Subtype != "success") {
		status := 0
		if env.APIErrorStatus != nil {
			status = *env.APIErrorStatus
		}
		if kind := classifyClaude(stream.assistantError, status, run.text); kind != "" {
			return run, &UnavailableError{Agent: "claude", Kind: kind, Reason: tail([]byte(env.errorText()))}
		}
		run.failure = env.errorReason()
		return run, nil
	}
	if reason := processFailure("claude", res, o.Timeout); reason != "" {
		run.failure = reason
		return run, nil
	}
	run.structured = env.StructuredOutput
	if env.Result == nil && (len(run.structured) == 0 || string(run.structured) == "null") {
		run.failure = "claude's result envelope has no result text"
	}
	return run, nil
}

// claudeEnvelope is the part of the result message that Stratum reads
// (the last line of stream-json, and the whole output of
// --output-format json).
type claudeEnvelope struct {
	Type             string          `json:"type"`
	Subtype          string          `json:"subtype"`
	IsError          bool            `json:"is_error"`
	APIErrorStatus   *int            `json:"api_error_status"`
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

// claudeStream consumes the CLI's stdout as it is written: each line of
// stream-json is decoded once, shown as progress, and reduced to what the
// outcome needs (the last result message, the last typed error, the init
// model). Output that is not a stream (the single envelope of
// --output-format json, or its --verbose array, printed by an older or
// wrapped CLI) is kept, up to cliOutputLimit, until a stream message shows
// it is not needed.
type claudeStream struct {
	opts  Options
	lines lineSplitter

	sawStream      bool
	result         *claudeEnvelope
	assistantError string
	initModel      string

	head     []byte
	headOver bool
}

func newClaudeStream(o Options) *claudeStream {
	s := &claudeStream{opts: o}
	s.lines = lineSplitter{max: cliOutputLimit, fn: s.line}
	return s
}

func (s *claudeStream) Write(p []byte) (int, error) {
	s.lines.Write(p)
	if !s.sawStream && !s.headOver {
		if room := cliOutputLimit - len(s.head); len(p) > room {
			s.head = append(s.head, p[:room]...)
			s.headOver = true
		} else {
			s.head = append(s.head, p...)
		}
	}
	return len(p), nil
}

func (s *claudeStream) finish() { s.lines.finish() }

func (s *claudeStream) line(line []byte) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return
	}
	if s.opts.Progress == nil && bytes.HasPrefix(line, []byte(`{"type":`)) && !claudeMayMatter(line) {
		// A message that matters neither for progress nor for the outcome
		// (tool calls, tool results): no need to decode it.
		s.streamSeen()
		return
	}
	var m claudeStreamMessage
	if json.Unmarshal(line, &m) != nil || m.Type == "" {
		return
	}
	s.streamSeen()
	for _, l := range claudeProgress(&m) {
		s.opts.progress(l)
	}
	switch {
	case m.Type == "system" && m.Subtype == "init":
		s.initModel = m.Model
	case m.Type == "assistant" && m.Error != "":
		s.assistantError = m.Error
	case m.Type == "result":
		var env claudeEnvelope
		if json.Unmarshal(line, &env) == nil {
			s.result = &env
		}
	}
}

// streamSeen records that the output is a stream: the kept head is not
// needed.
func (s *claudeStream) streamSeen() {
	if !s.sawStream {
		s.sawStream = true
		s.head, s.headOver = nil, false
	}
}

// claudeMayMatter is a cheap prefilter: a message that line() acts on
// contains one of these strings (a line that merely mentions one is
// decoded and then ignored, so the filter never changes the outcome).
func claudeMayMatter(line []byte) bool {
	for _, k := range [][]byte{[]byte(`"result"`), []byte(`"error"`), []byte(`"init"`)} {
		if bytes.Contains(line, k) {
			return true
		}
	}
	return false
}

// envelope is the result message of the stream, or else the envelope
// parsed from the whole output; nil when there is none.
func (s *claudeStream) envelope() *claudeEnvelope {
	if s.result != nil {
		return s.result
	}
	if s.sawStream || s.headOver {
		return nil
	}
	env, err := parseClaudeEnvelope(s.head)
	if err != nil {
		return nil
	}
	return env
}

// headErr says why the kept output is not an envelope.
func (s *claudeStream) headErr() error {
	if s.sawStream {
		return fmt.Errorf("the stream has no result message")
	}
	_, err := parseClaudeEnvelope(s.head)
	return err
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

// errorText is what an error envelope says: its result text and errors.
func (e *claudeEnvelope) errorText() string {
	var detail []string
	if e.Result != nil && strings.TrimSpace(*e.Result) != "" {
		detail = append(detail, strings.TrimSpace(*e.Result))
	}
	detail = append(detail, e.Errors...)
	return strings.Join(detail, "; ")
}

func (e *claudeEnvelope) errorReason() string {
	kind := e.Subtype
	if kind == "" {
		kind = "error"
	}
	if text := e.errorText(); text != "" {
		return fmt.Sprintf("claude reported an error (%s): %s", kind, tail([]byte(text)))
	}
	return fmt.Sprintf("claude reported an error (%s)", kind)
}

// usage adds the envelope's tokens and cost to u (which holds the
// measured time).
func (e *claudeEnvelope) usage(u *Usage) *Usage {
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
