package mcp

import (
	"context"

	"github.com/stratum-go/stratum/engine"
)

type stepDoneIn struct {
	RunID         string        `json:"runId" jsonschema:"the run's id"`
	StepID        string        `json:"stepId" jsonschema:"the id of the ready entry you did"`
	DispatchToken string        `json:"dispatchToken" jsonschema:"the dispatchToken of that ready entry (each attempt has a new one)"`
	Result        stepResultArg `json:"result" jsonschema:"what you produced: output, or failure when you could not do the task"`
}

type stepResultArg struct {
	Output    anyArg        `json:"output,omitzero" jsonschema:"the step's output: a JSON value matching the entry's contract (an object with exactly its fields)"`
	Failure   string        `json:"failure,omitzero" jsonschema:"instead of output: why you could not do the task (the attempt fails and may be retried)"`
	Usage     *usageArg     `json:"usage,omitzero" jsonschema:"what the attempt cost, when you know it"`
	Telemetry *telemetryArg `json:"telemetry,omitzero" jsonschema:"how the attempt ran"`
}

type usageArg struct {
	USD    *amountArg `json:"usd,omitzero" jsonschema:"cost in US dollars (non-negative)"`
	Tokens *amountArg `json:"tokens,omitzero" jsonschema:"tokens used (non-negative)"`
	MS     *amountArg `json:"ms,omitzero" jsonschema:"milliseconds spent (non-negative)"`
}

type telemetryArg struct {
	DurationMs durationArg `json:"durationMs" jsonschema:"how long the attempt took, in milliseconds"`
	Model      nameArg     `json:"model" jsonschema:"the model that did the work"`
	Effort     nameArg     `json:"effort,omitzero" jsonschema:"the reasoning effort used, if any"`
}

func (s *server) stepDoneTool() tool {
	return newTool(s, toolMeta{
		name:  "stratum_step_done",
		title: "Report a step's result",
		description: `Report the result of a ready step you did: Stratum checks the output against the step's contract and ensure rules and answers with the run's next state. Call it once per ready entry, with that entry's id as stepId and its dispatchToken.
Returns ready (the next steps, or the SAME step again with a higher attempt and previousFailure saying why your result was rejected: fix exactly that and report with the new dispatchToken), running (waiting on a gate or engine work), completed (with output), or failed/budget_exhausted. A superseded or reused token is refused with error.code stale_token and the current state in error.state; nothing changes.
ready lists only the entries this call issued; stillReady counts the entries issued earlier that still await you: keep those you have and do them too (stratum_resume lists every ready entry again). An entry with revision is a person's request from a gate: do exactly what revision.note asks. An entry with interrupted had an attempt that died mid-way: inspect the workspace for what it left before you start.
Example: stratum_step_done {"runId": "4b1f…", "stepId": "outline", "dispatchToken": "9c2e…", "result": {"output": {"title": "Release notes", "points": ["faster", "smaller"]}}}`,
		statuses: runStatuses(engine.StatusReady, engine.StatusRunning, engine.StatusCompleted,
			engine.StatusFailed, engine.StatusBudgetExhausted),
	}, func(ctx context.Context, c *call, in stepDoneIn) (*engine.Response, error) {
		res := engine.StepResult{Failure: in.Result.Failure}
		// Taken raw: key order and number precision as the client wrote them.
		if out := c.raw("result", "output"); out != nil {
			res.Output = out
		}
		if u := c.raw("result", "usage"); u != nil {
			res.Usage = u
		}
		if tm := c.raw("result", "telemetry"); tm != nil {
			res.Telemetry = tm
		}
		// Only the entries this report issued: the model holds the others
		// (their count is stillReady), so answers grow with each report's
		// change, not with everything pending (docs/mcp.md).
		r, err := s.eng.StepDone(ctx, engine.StepDoneRequest{RunID: in.RunID, StepID: in.StepID, DispatchToken: in.DispatchToken, Result: res,
			OnlyNew: true})
		return r, err
	})
}
