package mcp

import (
	"context"

	"github.com/stratum-go/stratum/engine"
)

func (s *server) revertTool() tool {
	return newTool(s, toolMeta{
		name:  "stratum_revert",
		title: "Restore a run checkpoint",
		description: `Restore a run's state to a checkpoint saved with stratum_commit and continue from there: steps finished after the checkpoint become pending again, and every ready step gets a new dispatch token. Spend is never rolled back. It restores Stratum's state only: undo your file changes yourself (e.g. git).
Returns the run's state as stratum_plan does (ready, running, completed, failed, budget_exhausted) with revertedTo. An unknown label is refused with error.code checkpoint_not_found and the existing labels in error.available.
Example: stratum_revert {"runId": "4b1f…", "label": "before-refactor"}`,
		statuses: runStatuses(engine.StatusReady, engine.StatusRunning, engine.StatusCompleted,
			engine.StatusFailed, engine.StatusBudgetExhausted),
		destructive: true,
	}, func(ctx context.Context, c *call, in checkpointIn) (*engine.Response, error) {
		r, err := s.eng.Revert(ctx, in.RunID, in.Label)
		return r, err
	})
}
