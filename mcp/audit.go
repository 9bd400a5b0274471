package mcp

import (
	"context"

	"github.com/stratum-go/stratum/engine"
)

type runIn struct {
	RunID string `json:"runId" jsonschema:"the run's id (from stratum_plan)"`
}

func (s *server) auditTool() tool {
	return newTool(s, toolMeta{
		name:  "stratum_audit",
		title: "Read a run's full record",
		description: `Read a run's complete durable record: every step's state and attempts, every event, spend, output, checkpoints. Call it at the end of a run to summarise what happened (what ran, what was retried and why), or to see a step's attempts. It is large: for a waiting gate, read stratum_gates instead (token, digest, the work under review). Read-only.
Returns status (the run's durable status: running, completed, failed, budget_exhausted, cancelled), steps, events, flowSpent, ledger, output or failure, checkpoints. An unknown run id is refused with error.code run_not_found.
Example: stratum_audit {"runId": "4b1f…"}`,
		statuses: runStatuses(engine.StatusRunning, engine.StatusCompleted, engine.StatusFailed,
			engine.StatusBudgetExhausted, engine.StatusCancelled),
		readOnly:   true,
		idempotent: true,
	}, func(ctx context.Context, c *call, in runIn) (*engine.AuditReport, error) {
		return s.eng.Audit(ctx, in.RunID)
	})
}
