package mcp

import (
	"context"
)

type checkpointIn struct {
	RunID string `json:"runId" jsonschema:"the run's id"`
	Label string `json:"label" jsonschema:"the checkpoint's name (surrounding spaces are trimmed)"`
}

// CommitResult is the answer of stratum_commit.
type CommitResult struct {
	Status        string   `json:"status" jsonschema:"committed"`
	RunID         string   `json:"runId" jsonschema:"the run's id"`
	Label         string   `json:"label" jsonschema:"the checkpoint's label as saved (trimmed)"`
	StepNumber    int      `json:"stepNumber" jsonschema:"1-based position of currentStepId among the entry flow's steps (one past the last when all are finished)"`
	CurrentStepID *string  `json:"currentStepId" jsonschema:"the first entry-flow step not yet finished, null when all are"`
	Checkpoints   []string `json:"checkpoints" jsonschema:"every checkpoint label of the run, oldest first"`
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
	}, func(ctx context.Context, c *call, in checkpointIn) (*CommitResult, error) {
		r, err := s.eng.Commit(ctx, in.RunID, in.Label)
		if err != nil {
			return nil, err
		}
		return &CommitResult{Status: r.Status, RunID: r.RunID, Label: r.Label, StepNumber: r.StepNumber,
			CurrentStepID: r.CurrentStepID, Checkpoints: nonNil(r.Checkpoints)}, nil
	})
}
