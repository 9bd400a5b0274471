package mcp

import (
	"context"

	"github.com/stratum-go/stratum/driver"
	"github.com/stratum-go/stratum/engine"
)

type flowCancelBgIn struct {
	RunID string `json:"runId" jsonschema:"the background run's id"`
}

func (s *server) flowCancelBgTool() tool {
	return newTool(s, toolMeta{
		name:  "stratum_flow_cancel_bg",
		title: "Cancel a background run",
		description: `Cancel a background run for good: it becomes cancelled, its agents are stopped wherever they run (this server or another one driving it), and nothing more is done. Call it only when the user wants the run stopped. Cancelling a finished run changes nothing.
Returns status cancelled (or the run's terminal status when it had already finished), runId and bg; a run started with stratum_plan is refused (not_background: use stratum_flow_cancel).
Example: stratum_flow_cancel_bg {"runId": "4b1f…"}`,
		statuses: runStatuses(engine.StatusCancelled, engine.StatusCompleted, engine.StatusFailed,
			engine.StatusBudgetExhausted, engine.StatusRunning),
		idempotent:  true,
		destructive: true,
	}, func(ctx context.Context, c *call, in flowCancelBgIn) (*engine.BackgroundPoll, error) {
		if s.bg == nil {
			if _, err := s.eng.CancelBackground(ctx, in.RunID, "cancelled with stratum_flow_cancel_bg"); err != nil {
				return nil, err
			}
			info, err := s.eng.BackgroundInfo(ctx, in.RunID)
			if err != nil {
				return nil, err
			}
			return s.eng.PollBackground(ctx, in.RunID, info.Head)
		}
		return s.bg.Cancel(ctx, in.RunID, driver.DefaultCancelWait)
	})
}
