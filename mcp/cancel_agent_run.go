package mcp

import (
	"context"

	"github.com/stratum-go/stratum/driver"
)

type cancelAgentRunIn struct {
	RunID string `json:"runId" jsonschema:"a detached agent run's runId, or the cancellationId of a foreground call"`
}

func (s *server) cancelAgentRunTool() tool {
	return newTool(s, toolMeta{
		name:  "stratum_cancel_agent_run",
		title: "Stop an agent run",
		description: `Stop an agent run: a detached run's runId, or the cancellationId you gave a foreground stratum_agent_run call. Its whole process group is stopped, from any process on this machine, and the call waits (up to 15 s) until it is gone. Call it only when the user wants it stopped or its answer is no longer needed.
Returns status cancelled, already_complete, already_failed or not_found, with runId.
Example: stratum_cancel_agent_run {"runId": "9c2e…"}`,
		statuses:    []string{driver.AgentCancelled, "already_complete", "already_failed", statusNotFound},
		idempotent:  true,
		destructive: true,
	}, func(ctx context.Context, c *call, in cancelAgentRunIn) (*driver.AgentRunView, error) {
		if s.agents == nil {
			return nil, &codedError{code: CodeBackgroundUnavailable, msg: "this server was started without agent runs"}
		}
		v, out, err := s.agents.Cancel(ctx, in.RunID)
		if err != nil {
			return nil, err
		}
		if out.AlreadySettled > 0 && v.Status != driver.AgentCancelled {
			v.Status = "already_" + v.Status
		}
		return v, nil
	})
}
