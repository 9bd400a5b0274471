package mcp

import (
	"context"

	"github.com/stratum-go/stratum/driver"
)

type agentPollIn struct {
	RunID string `json:"runId" jsonschema:"the agent run's id (stratum_agent_run's answer)"`
}

func (s *server) agentPollTool() tool {
	return newTool(s, toolMeta{
		name:  "stratum_agent_poll",
		title: "Poll an agent run",
		description: `Read a detached agent run (stratum_agent_run with background: true), without changing it. Poll every minute or so, not in a tight loop: the agent works on by itself. Any process answers, also after a server restart (a run whose server stopped before it finished is failed, with that reason).
Returns status running (textTail: its last progress lines; eventsSeen), complete (text: its final message; usage, telemetry, exitCode), failed (reason, textTail, stderrTail, exitCode), cancelled, or not_found.
Example: stratum_agent_poll {"runId": "9c2e…"}`,
		statuses:   []string{driver.AgentRunning, driver.AgentComplete, driver.AgentFailed, driver.AgentCancelled, statusNotFound},
		readOnly:   true,
		idempotent: true,
	}, func(ctx context.Context, c *call, in agentPollIn) (*driver.AgentRunView, error) {
		if s.agents == nil {
			return nil, &codedError{code: CodeBackgroundUnavailable, msg: "this server was started without agent runs"}
		}
		return s.agents.Poll(ctx, in.RunID)
	})
}

// statusNotFound answers a poll or cancel of an unknown agent run.
const statusNotFound = "not_found"
