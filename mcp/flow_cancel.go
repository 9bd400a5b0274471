package mcp

import (
	"context"

	"github.com/stratum-go/stratum/engine"
)

type flowCancelIn struct {
	RunID  string `json:"runId" jsonschema:"the run's id"`
	Reason string `json:"reason,omitzero" jsonschema:"why the run is cancelled; recorded in the audit"`
}

// CancelResult is the answer of stratum_flow_cancel.
type CancelResult struct {
	Status       string              `json:"status" jsonschema:"the run's status after the call: cancelled, or completed/failed/budget_exhausted when it had already finished (nothing changed)"`
	RunID        string              `json:"runId" jsonschema:"the run's id"`
	FlowSettled  bool                `json:"flowSettled" jsonschema:"true when the run is (now or already) cancelled"`
	Acknowledged bool                `json:"acknowledged" jsonschema:"true when the cancel is settled and every agent started for the run is accounted for"`
	Reason       string              `json:"reason,omitzero" jsonschema:"already_<status> when the run had already finished or been cancelled"`
	Ledger       ledgerView          `json:"ledger" jsonschema:"spend and the flow's budget"`
	Burned       engine.BurnedTokens `json:"burned" jsonschema:"the outstanding issuances made void: step ids whose dispatch or gate token was burnt, and the number of fanout item tokens"`
	Agents       engine.AgentSummary `json:"agents" jsonschema:"agent processes signalled and reaped for the run"`
}

func (s *server) flowCancelTool() tool {
	return newTool(s, toolMeta{
		name:  "stratum_flow_cancel",
		title: "Cancel a run",
		description: `Cancel a run for good: it becomes cancelled, every outstanding dispatch and gate token is burnt (later step_done or gate_resolve calls are refused), and engine work for it stops. Call it only when the user wants the run stopped. Cancelling a finished run changes nothing.
Returns status cancelled (or the run's terminal status when it had already finished, with reason already_<status>), flowSettled, acknowledged, burned, agents, ledger.
Example: stratum_flow_cancel {"runId": "4b1f…", "reason": "user abandoned the task"}`,
		statuses: []string{engine.StatusCancelled, engine.StatusCompleted, engine.StatusFailed,
			engine.StatusBudgetExhausted},
		idempotent:  true,
		destructive: true,
	}, func(ctx context.Context, c *call, in flowCancelIn) (*CancelResult, error) {
		r, err := s.eng.Cancel(ctx, in.RunID, in.Reason)
		if err != nil {
			return nil, err
		}
		out := &CancelResult{Status: r.Status, RunID: r.RunID, FlowSettled: r.FlowSettled, Acknowledged: r.Acknowledged,
			Reason: r.Reason, Ledger: newLedgerView(r.Ledger), Burned: r.Burned, Agents: r.Agents}
		out.Burned.Steps = nonNil(out.Burned.Steps)
		return out, nil
	})
}
