package mcp

import (
	"context"
	"time"

	"github.com/stratum-go/stratum/engine"
)

type runIn struct {
	RunID string `json:"runId" jsonschema:"the run's id (from stratum_plan)"`
}

// AuditResult is the answer of stratum_audit.
type AuditResult struct {
	Status         string                        `json:"status" jsonschema:"the run's durable status: running, completed, failed, budget_exhausted or cancelled"`
	RunID          string                        `json:"runId" jsonschema:"the run's id"`
	Flow           string                        `json:"flow" jsonschema:"the entry flow's name"`
	RevisionDigest string                        `json:"revisionDigest" jsonschema:"SHA-256 of the run's spec revision"`
	WorkspaceRoot  string                        `json:"workspaceRoot,omitzero" jsonschema:"the run's workspace root"`
	CreatedAt      time.Time                     `json:"createdAt" jsonschema:"when the run was planned (RFC 3339)"`
	UpdatedAt      time.Time                     `json:"updatedAt" jsonschema:"when the run last changed (RFC 3339)"`
	Input          any                           `json:"input" jsonschema:"the entry input"`
	Steps          map[string]*engine.StepState  `json:"steps" jsonschema:"every step's state by id: status, attempts (each with its result or failure), output, spent; a waiting gate's gateToken; fanout items; sub.steps for a subflow's steps"`
	Events         []Event                       `json:"events" jsonschema:"every event of the run, oldest first"`
	FlowSpent      engine.Ledger                 `json:"flowSpent" jsonschema:"the run's total spend: usd, tokens, dispatches, ms"`
	Ledger         ledgerView                    `json:"ledger" jsonschema:"spend and the flow's budget"`
	Output         any                           `json:"output,omitzero" jsonschema:"the flow's output (completed)"`
	Failure        *engine.Failure               `json:"failure,omitzero" jsonschema:"why the run failed (failed, budget_exhausted)"`
	Carry          map[string]*engine.CarryEntry `json:"carry,omitzero" jsonschema:"loop-carried values and their provenance"`
	Rounds         int                           `json:"rounds" jsonschema:"gate revise rounds used so far"`
	Checkpoints    []string                      `json:"checkpoints" jsonschema:"checkpoint labels, oldest first"`
}

func (s *server) auditTool() tool {
	return newTool(s, toolMeta{
		name:  "stratum_audit",
		title: "Read a run's full record",
		description: `Read a run's complete durable record: every step's state and attempts, every event, spend, output, checkpoints. Call it to obtain a waiting gate's gateToken (steps.<gateId>.gateToken) before stratum_gate_resolve, and at the end of a run to summarise what happened (what ran, what was retried and why). Read-only.
Returns status (the run's durable status: running, completed, failed, budget_exhausted, cancelled), steps, events, flowSpent, ledger, output or failure, checkpoints. An unknown run id is refused with error.code run_not_found.
Example: stratum_audit {"runId": "4b1f…"}`,
		statuses: []string{engine.StatusRunning, engine.StatusCompleted, engine.StatusFailed,
			engine.StatusBudgetExhausted, engine.StatusCancelled},
		readOnly:   true,
		idempotent: true,
	}, func(ctx context.Context, c *call, in runIn) (*AuditResult, error) {
		a, err := s.eng.Audit(ctx, in.RunID)
		if err != nil {
			return nil, err
		}
		return &AuditResult{
			Status: a.Status, RunID: a.RunID, Flow: a.Flow, RevisionDigest: a.RevisionDigest,
			WorkspaceRoot: a.WorkspaceRoot, CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt,
			Input: a.Input, Steps: a.Steps, Events: newEvents(a.Events), FlowSpent: a.FlowSpent,
			Ledger: newLedgerView(a.Ledger), Output: value(a.Output), Failure: a.Failure, Carry: a.Carry,
			Rounds: a.Rounds, Checkpoints: nonNil(a.Checkpoints),
		}, nil
	})
}
