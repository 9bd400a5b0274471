package mcp

import (
	"context"

	"github.com/stratum-go/stratum/guard"
)

// GuardHistoryResult is the answer of stratum_guard_history: the guard's
// history with a status, like every answer of this server.
type GuardHistoryResult struct {
	Status string `json:"status" jsonschema:"ok"`
	guard.HistoryResult
}

func (s *server) guardHistoryTool() tool {
	return guardTool(s, toolMeta{
		name:  "stratum_guard_history",
		title: "Read a guarded resource's ledger",
		description: `Read a guarded resource's current state, policy version and full ledger (every transition attempt, applied or refused, override and policy change, oldest first). Read-only.
Returns status ok with resource_id, current_state, graph_version and ledger. An unknown resource is refused with error.code guard_not_found.
Example: stratum_guard_history {"resource_id": "tracker:FEAT-1"}`,
		statuses:   []string{"ok"},
		readOnly:   true,
		idempotent: true,
	}, func(g *guard.Guard, ctx context.Context, in guard.HistoryRequest) (*GuardHistoryResult, error) {
		h, err := g.History(ctx, in)
		if err != nil {
			return nil, err
		}
		return &GuardHistoryResult{Status: "ok", HistoryResult: *h}, nil
	})
}
