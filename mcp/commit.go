package mcp

import (
	"context"

	"github.com/stratum-go/stratum/engine"
)

type checkpointIn struct {
	RunID string `json:"runId" jsonschema:"the run's id"`
	Label string `json:"label" jsonschema:"the checkpoint's name (surrounding spaces are trimmed)"`
}

func (s *server) commitTool() tool {
	return newTool(s, toolMeta{
		name:  "stratum_commit",
		title: "Save a run checkpoint",
		description: `Save a named checkpoint of a run's state, to come back to with stratum_revert (for example before a risky step). It saves Stratum's state only and touches no files: you must keep your own undo for file changes (e.g. a git commit). Committing an existing label replaces that checkpoint.
Returns status committed with label, stepNumber, currentStepId and the run's checkpoints. Refused while a fanout is in flight (fanout_in_flight), for an empty label (invalid_label) or a cancelled run (run_cancelled).
Example: stratum_commit {"runId": "4b1f…", "label": "before-refactor"}`,
		statuses:   []string{"committed"},
		idempotent: true,
	}, func(ctx context.Context, c *call, in checkpointIn) (*engine.CommitResult, error) {
		return s.eng.Commit(ctx, in.RunID, in.Label)
	})
}
