package agent

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Options configure how an agent runs: the same struct for every connector,
// set by the person who runs Stratum (command-line flags, a policy) and
// passed per attempt in [Request.Options] or per task in [Task.Options]. Each
// connector uses the fields that mean something to its CLI and refuses
// those it cannot honour (see [Options.Validate] and docs/agents.md,
// "Options").
// The zero value is the default behaviour of each CLI in a read-only
// sandbox, with no time limit.
type Options struct {
	// Sandbox is how much the agent may change: SandboxReadOnly (the
	// default when empty), SandboxWorkspaceWrite or SandboxDangerFullAccess.
	// Codex takes it as --sandbox; Claude Code as a permission mode (see
	// PermissionMode). A command agent is told it on stdin; Human ignores it.
	Sandbox string
	// PermissionMode, Claude only, is the exact --permission-mode
	// (acceptEdits, auto, bypassPermissions, default, dontAsk, plan); it
	// overrides the mode derived from Sandbox.
	PermissionMode string
	// Model overrides the connector's configured model.
	Model string
	// Effort is the reasoning effort: for Claude low, medium, high, xhigh or
	// max (--effort); for Codex minimal, low, medium, high or xhigh
	// (-c model_reasoning_effort).
	Effort string
	// AllowedTools and DisallowedTools, Claude only, are tool rules such as
	// "Read" or "Bash(git diff:*)" (--allowedTools, --disallowedTools).
	AllowedTools    []string
	DisallowedTools []string
	// Thinking, Claude only, sets extended thinking.
	Thinking *Thinking
	// Timeout is the attempt's time limit; zero means none beyond the
	// context. On expiry the agent's process group is stopped and the
	// attempt fails with a reason naming the limit.
	Timeout time.Duration
	// Progress, when set, receives one short line of text (no newline) per
	// thing the agent reports while it works: Codex's JSON events and
	// Claude's stream messages, summarised, and each stderr line of a
	// command agent. It is called from one goroutine at a time per attempt
	// and must not block for long: the agent waits while it runs.
	Progress func(line string)
	// Started, when set, is called once the agent's process has started,
	// with the record another process needs to stop it ([Kill]). It must
	// not block.
	Started func(ProcessRecord)
}

// Thinking configures Claude's extended thinking, in the shape of the
// Claude Agent SDK's thinking option ({"type", "budgetTokens", "display"}).
type Thinking struct {
	// Type is "enabled", "adaptive" or "disabled".
	Type string `json:"type"`
	// BudgetTokens, with Type "enabled", caps the thinking tokens
	// (--max-thinking-tokens); zero lets the model decide (adaptive).
	BudgetTokens int `json:"budgetTokens,omitempty"`
	// Display is "summarized" or "omitted"; empty is the CLI's default.
	Display string `json:"display,omitempty"`
}

// Sandbox modes.
const (
	SandboxReadOnly         = "read-only"
	SandboxWorkspaceWrite   = "workspace-write"
	SandboxDangerFullAccess = "danger-full-access"
)

// Accepted values, as the CLIs document them (claude --help, codex exec
// --help).
var (
	sandboxModes          = []string{SandboxReadOnly, SandboxWorkspaceWrite, SandboxDangerFullAccess}
	claudePermissionModes = []string{"acceptEdits", "auto", "bypassPermissions", "default", "dontAsk", "plan"}
	claudeEfforts         = []string{"low", "medium", "high", "xhigh", "max"}
	codexEfforts          = []string{"minimal", "low", "medium", "high", "xhigh"}
	thinkingTypes         = []string{"enabled", "adaptive", "disabled"}
	thinkingDisplays      = []string{"summarized", "omitted"}
)

// Validate reports whether the connector named by agent ("claude",
// "codex", or anything else for a command or a person) can honour o, so
// that a bad flag is refused before a run starts. Connectors check the
// same at every Run. Codex and command agents refuse the Claude-only
// fields rather than ignore them: a person who disallowed a tool must not
// get an agent that runs it. Command agents receive the sandbox, model,
// effort and time limit on stdin and may use them; a person ("human") only
// has a time limit and ignores the rest.
func (o Options) Validate(agent string) error {
	if o.Sandbox != "" && !slices.Contains(sandboxModes, o.Sandbox) {
		return fmt.Errorf("agent: unknown sandbox mode %q (want one of %s)", o.Sandbox, strings.Join(sandboxModes, ", "))
	}
	if o.Timeout < 0 {
		return fmt.Errorf("agent: negative time limit %v", o.Timeout)
	}
	claudeOnly := func() error {
		var set []string
		if o.PermissionMode != "" {
			set = append(set, "a permission mode")
		}
		if len(o.AllowedTools) > 0 || len(o.DisallowedTools) > 0 {
			set = append(set, "allowed or disallowed tools")
		}
		if o.Thinking != nil {
			set = append(set, "thinking")
		}
		if len(set) > 0 {
			return fmt.Errorf("agent %s: %s apply to claude only", agent, strings.Join(set, " and "))
		}
		return nil
	}
	switch agent {
	case "claude":
		if o.PermissionMode != "" && !slices.Contains(claudePermissionModes, o.PermissionMode) {
			return fmt.Errorf("agent claude: unknown permission mode %q (want one of %s)", o.PermissionMode, strings.Join(claudePermissionModes, ", "))
		}
		if o.Effort != "" && !slices.Contains(claudeEfforts, o.Effort) {
			return fmt.Errorf("agent claude: unknown effort %q (want one of %s)", o.Effort, strings.Join(claudeEfforts, ", "))
		}
		for _, tool := range slices.Concat(o.AllowedTools, o.DisallowedTools) {
			// A rule starting with "-" would be read as a flag by the CLI.
			if strings.TrimSpace(tool) == "" || strings.HasPrefix(tool, "-") {
				return fmt.Errorf("agent claude: invalid tool rule %q", tool)
			}
		}
		if t := o.Thinking; t != nil {
			if !slices.Contains(thinkingTypes, t.Type) {
				return fmt.Errorf("agent claude: unknown thinking type %q (want one of %s)", t.Type, strings.Join(thinkingTypes, ", "))
			}
			if t.BudgetTokens < 0 || (t.BudgetTokens > 0 && t.Type != "enabled") {
				return fmt.Errorf("agent claude: a thinking budget needs type \"enabled\" and a positive number of tokens")
			}
			if t.Display != "" && !slices.Contains(thinkingDisplays, t.Display) {
				return fmt.Errorf("agent claude: unknown thinking display %q (want one of %s)", t.Display, strings.Join(thinkingDisplays, ", "))
			}
		}
	case "codex":
		if err := claudeOnly(); err != nil {
			return err
		}
		if o.Effort != "" && !slices.Contains(codexEfforts, o.Effort) {
			return fmt.Errorf("agent codex: unknown effort %q (want one of %s)", o.Effort, strings.Join(codexEfforts, ", "))
		}
	case "human":
		// A person runs no tools: only the time limit applies.
	default:
		if err := claudeOnly(); err != nil {
			return err
		}
	}
	return nil
}

// sandbox is the effective sandbox mode.
func (o Options) sandbox() string {
	if o.Sandbox == "" {
		return SandboxReadOnly
	}
	return o.Sandbox
}

// options are the attempt's effective options: Request.Sandbox and
// Request.Timeout, when set, win over the same fields of Request.Options
// (they are the caller's decision for this one attempt, such as a worktree
// that may be written).
func (r Request) options() Options {
	o := r.Options
	if r.Sandbox != "" {
		o.Sandbox = r.Sandbox
	}
	if r.Timeout != 0 {
		o.Timeout = r.Timeout
	}
	return o
}

// progress calls o.Progress, if set.
func (o Options) progress(line string) {
	if o.Progress != nil && line != "" {
		o.Progress(line)
	}
}
