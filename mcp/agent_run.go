package mcp

import (
	"context"

	"github.com/stratum-go/stratum/agent"
	"github.com/stratum-go/stratum/driver"
)

type agentRunIn struct {
	Agent           string          `json:"agent" jsonschema:"which agent: claude or codex"`
	Prompt          string          `json:"prompt" jsonschema:"the task, given to the agent as it is"`
	Cwd             string          `json:"cwd" jsonschema:"the directory the agent works in (inside the server's allowed roots)"`
	Model           string          `json:"model,omitzero" jsonschema:"the model the agent uses; default: its CLI's"`
	Effort          string          `json:"effort,omitzero" jsonschema:"reasoning effort: claude low, medium, high, xhigh or max; codex minimal, low, medium, high or xhigh"`
	SandboxMode     string          `json:"sandboxMode,omitzero" jsonschema:"read-only (the default: it may read cwd, not change it) or workspace-write (it may edit files in cwd)"`
	Background      bool            `json:"background,omitzero" jsonschema:"true: return at once with a runId to poll (stratum_agent_poll) while the agent works"`
	AllowedTools    []string        `json:"allowedTools,omitzero" jsonschema:"claude only: tool rules it may use without asking, such as Read or Bash(git diff:*)"`
	DisallowedTools []string        `json:"disallowedTools,omitzero" jsonschema:"claude only: tool rules it may not use"`
	Thinking        *thinkingArg    `json:"thinking,omitzero" jsonschema:"claude only: extended thinking"`
	CancellationID  string          `json:"cancellationId,omitzero" jsonschema:"foreground only: a UUID of yours naming this call, to stop it with stratum_cancel_agent_run from anywhere; usable once"`
	Flow            *driver.FlowTag `json:"flow,omitzero" jsonschema:"the running flow the agent works for: its usage is recorded on the flow, and cancelling the flow stops the agent"`
}

type thinkingArg struct {
	Type         string `json:"type" jsonschema:"enabled, adaptive or disabled"`
	BudgetTokens int    `json:"budgetTokens,omitzero" jsonschema:"with enabled: the most thinking tokens"`
	Display      string `json:"display,omitzero" jsonschema:"summarized or omitted"`
}

func (s *server) agentRunTool() tool {
	return newTool(s, toolMeta{
		name:  "stratum_agent_run",
		title: "Run a second agent",
		description: `Run another agent (claude or codex) on a free-form prompt in a directory: for an independent opinion or a side task, for example codex reviewing the change you just made. The prompt goes to its CLI as it is; the answer is its final message as text. By default the call waits for it (a long run sends progress notifications when you pass a progress token); with background: true it returns at once (status bg_started, runId) and you poll it with stratum_agent_poll every minute or so while you keep working.
Options: model, effort, sandboxMode (read-only by default; workspace-write lets it edit files in cwd), allowedTools, disallowedTools and thinking (claude only), cancellationId (foreground: a UUID of yours to stop the call with stratum_cancel_agent_run), flow ({runId, stepId?}: it works for that running flow, which records its usage; cancelling the flow stops it).
Needs a server that allows agents (--allow-agents), and cwd inside its allowed roots; refused otherwise (effect_not_allowed, invalid_arguments).
Returns status complete (text, usage, telemetry, exitCode), failed (reason, textTail, stderrTail), cancelled, or bg_started (runId, pid).
Example: stratum_agent_run {"agent": "codex", "prompt": "Review the uncommitted changes for bugs; list each as file:line and why.", "cwd": "/home/me/project"}`,
		statuses: []string{driver.AgentComplete, driver.AgentFailed, driver.AgentCancelled, statusBgStarted},
	}, func(ctx context.Context, c *call, in agentRunIn) (*driver.AgentRunView, error) {
		if s.agents == nil {
			return nil, &codedError{code: CodeBackgroundUnavailable, msg: "this server was started without agent runs"}
		}
		if raw := c.raw("sandboxMode"); raw != nil && string(raw) == `""` {
			return nil, argErrorf("sandboxMode is empty: pass read-only or workspace-write, or leave it out")
		}
		o := agent.Options{Model: in.Model, Effort: in.Effort, Sandbox: in.SandboxMode, AllowedTools: in.AllowedTools, DisallowedTools: in.DisallowedTools}
		if t := in.Thinking; t != nil {
			o.Thinking = &agent.Thinking{Type: t.Type, BudgetTokens: t.BudgetTokens, Display: t.Display}
		}
		req := driver.AgentRunRequest{Agent: in.Agent, Prompt: in.Prompt, Cwd: in.Cwd, Options: o, Background: in.Background,
			CancellationID: in.CancellationID, Flow: in.Flow, Progress: c.progress}
		if s.clientRoots {
			req.ClientRoots = s.roots.get(ctx, c.session)
		}
		v, err := s.agents.Run(ctx, req)
		if err != nil {
			return nil, err
		}
		if in.Background && v.Status == driver.AgentRunning {
			v.Status = statusBgStarted
		}
		return v, nil
	})
}

// statusBgStarted answers a detached agent run that started.
const statusBgStarted = "bg_started"
