package mcp

import (
	"context"
	"encoding/json"

	"github.com/stratum-go/stratum/engine"
)

type planIn struct {
	Spec          specArg   `json:"spec" jsonschema:"the flow spec: YAML text (version: 1) or the same document as a JSON object; validate it first with stratum_validate"`
	Input         objectArg `json:"input,omitzero" jsonschema:"the entry flow's input: an object with exactly the fields of the entry flow's input contract; omit it (or pass {}) for a flow without input"`
	WorkspaceRoot string    `json:"workspaceRoot,omitzero" jsonschema:"the project directory the run works in (the jail of file_exists and file_contains); default: the server's working directory"`
}

func (s *server) planTool() tool {
	return newTool(s, toolMeta{
		name:  "stratum_plan",
		title: "Start a Stratum run",
		description: `Validate a flow spec and its entry input, start a persisted run and return its first actionable state. Call it once per run, after stratum_validate answers valid.
Returns status ready with ready[] (steps for you to do: each has id, do, contract and dispatchToken; report each with stratum_step_done), running with waiting[] (a gate for a person, or engine work), or completed/failed when nothing needed you. Also runId (keep it) and revisionDigest. An invalid spec or input is refused with error.code invalid_spec or invalid_input and every problem in error.errors; nothing is created.
workspaceRoot must lie in the roots the server allows. A spec with an effect the person who runs the server did not allow (a command, an agent dispatch) is refused with error.code effect_not_allowed: never work around it; tell the user what the message says (a fanout with dispatch: consumer gives you its items to do instead).
Example: stratum_plan {"spec": "<the YAML you validated>", "input": {"topic": "release notes"}}`,
		statuses: runStatuses(engine.StatusReady, engine.StatusRunning, engine.StatusCompleted,
			engine.StatusFailed, engine.StatusBudgetExhausted),
	}, func(ctx context.Context, c *call, in planIn) (*engine.Response, error) {
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
		r, err := s.eng.Plan(ctx, req)
		return r, err
	})
}
