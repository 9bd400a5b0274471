package mcp

import (
	"context"

	"github.com/stratum-go/stratum/engine"
)

func (s *server) resumeTool() tool {
	return newTool(s, toolMeta{
		name:  "stratum_resume",
		title: "Continue a run",
		description: `Return a persisted run's current actionable state, so you can continue it: in a new session, after a restart, or when you lost track of its ready steps and tokens. Any run can be resumed by any server sharing the state root. Ready steps keep their dispatch tokens.
Returns the same shapes as stratum_plan (ready with ready[], running with waiting[], completed, failed, budget_exhausted) and revisionDigest; ready lists every entry awaiting you, also those stratum_step_done counted in stillReady. A cancelled run is refused with error.code run_cancelled, an unknown one with run_not_found.
Example: stratum_resume {"runId": "4b1f…"}`,
		statuses: runStatuses(engine.StatusReady, engine.StatusRunning, engine.StatusCompleted,
			engine.StatusFailed, engine.StatusBudgetExhausted),
		idempotent: true,
	}, func(ctx context.Context, c *call, in runIn) (*engine.Response, error) {
		r, err := s.eng.Resume(ctx, in.RunID)
		return r, err
	})
}
