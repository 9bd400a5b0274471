package mcp

import (
	"context"
	"encoding/json"

	"github.com/stratum-go/stratum/engine"
)

type flowRunBgIn struct {
	Spec          specArg   `json:"spec" jsonschema:"the flow spec: YAML text (version: 1) or the same document as a JSON object; validate it first with stratum_validate"`
	Input         objectArg `json:"input,omitzero" jsonschema:"the entry flow's input: an object with exactly the fields of the entry flow's input contract; omit it for a flow without input"`
	WorkspaceRoot string    `json:"workspaceRoot,omitzero" jsonschema:"the project directory the run and its agents work in; default: the server's working directory"`
}

func (s *server) flowRunBgTool() tool {
	return newTool(s, toolMeta{
		name:  "stratum_flow_run_bg",
		title: "Start a run the server drives",
		description: `Start a run that this server drives in the background: its own agents (claude or codex, read-only) do the flow's do steps and engine fanout items, with the flow's retries, and it stops only at gates, which stay the user's to decide. Use it for a flow you need not do yourself, then keep working on something else; check on it with stratum_flow_bg_poll now and then (every minute or two, not in a tight loop).
Needs a server that allows agents (started with --allow-agents); otherwise refused with error.code effect_not_allowed saying what would allow it. A spec with a dispatch: consumer fanout is refused (consumer_dispatch_bg_unsupported). An invalid spec or input is refused as by stratum_plan.
Returns status running (or completed/failed when nothing needed an agent), runId (keep it) and bg (status, pendingGates, driver). The run survives a server restart: another stratum mcp on the same state root takes it over.
Example: stratum_flow_run_bg {"spec": "<the YAML you validated>", "input": {"topic": "release notes"}}`,
		statuses: runStatuses(engine.StatusRunning, engine.StatusCompleted, engine.StatusFailed,
			engine.StatusBudgetExhausted, engine.StatusCancelled),
	}, func(ctx context.Context, c *call, in flowRunBgIn) (*engine.BackgroundPoll, error) {
		if s.bg == nil {
			return nil, &codedError{code: CodeBackgroundUnavailable, msg: "this server was started without background runs"}
		}
		src, err := specSource(c.raw("spec"))
		if err != nil {
			return nil, err
		}
		input := c.raw("input")
		if input == nil {
			input = json.RawMessage(`{}`)
		}
		req := engine.PlanRequest{Spec: src, Input: input, WorkspaceRoot: in.WorkspaceRoot}
		if s.clientRoots {
			req.ClientRoots = s.roots.get(ctx, c.session)
		}
		return s.bg.Start(ctx, req)
	})
}
