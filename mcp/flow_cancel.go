package mcp

import (
	"context"

	"github.com/stratum-go/stratum/driver"
	"github.com/stratum-go/stratum/engine"
)

type flowCancelIn struct {
	RunID  string `json:"runId" jsonschema:"the run's id"`
	Reason string `json:"reason,omitzero" jsonschema:"why the run is cancelled; recorded in the audit"`
}

func (s *server) flowCancelTool() tool {
	return newTool(s, toolMeta{
		name:  "stratum_flow_cancel",
		title: "Cancel a run",
		description: `Cancel a run for good: it becomes cancelled, every outstanding dispatch and gate token is burnt (later step_done or gate_resolve calls are refused), and engine work for it stops. Call it only when the user wants the run stopped. Cancelling a finished run changes nothing.
Returns status cancelled (or the run's terminal status when it had already finished, with reason already_<status>), flowSettled, acknowledged, burned, agents, ledger.
Example: stratum_flow_cancel {"runId": "4b1f…", "reason": "user abandoned the task"}`,
		statuses: runStatuses(engine.StatusCancelled, engine.StatusCompleted, engine.StatusFailed,
			engine.StatusBudgetExhausted),
		idempotent:  true,
		destructive: true,
	}, func(ctx context.Context, c *call, in flowCancelIn) (*engine.CancelResult, error) {
		// The agents of the run stop too, wherever they run: agent runs
		// tagged with it and the agents of whatever process drives it.
		return driver.Cancel(ctx, s.eng, s.agents, s.bg, in.RunID, in.Reason, driver.DefaultCancelWait)
	})
}
