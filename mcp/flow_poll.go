package mcp

import (
	"context"

	"github.com/stratum-go/stratum/engine"
)

type flowPollIn struct {
	RunID  string `json:"runId" jsonschema:"the run's id"`
	Cursor int64  `json:"cursor,omitzero" jsonschema:"the nextCursor of your previous poll, to get only newer events; 0 or omitted for all"`
}

func (s *server) flowPollTool() tool {
	return newTool(s, toolMeta{
		name:  "stratum_flow_poll",
		title: "Poll a run's progress",
		description: `Read a run's current state and the events since your last poll, without changing anything. Call it while a run is running on engine work (waiting kind fanout or subflow), every few seconds, passing the previous nextCursor, until the status changes.
Returns status (ready, running, completed, failed, budget_exhausted, cancelled), events after cursor, nextCursor, ready entries with their current tokens, waiting, ledger, and output or failure. A cursor beyond the log is refused with error.code invalid_cursor.
Example: stratum_flow_poll {"runId": "4b1f…", "cursor": 12}`,
		statuses: runStatuses(engine.StatusReady, engine.StatusRunning, engine.StatusCompleted,
			engine.StatusFailed, engine.StatusBudgetExhausted, engine.StatusCancelled),
		readOnly:   true,
		idempotent: true,
	}, func(ctx context.Context, c *call, in flowPollIn) (*engine.PollReport, error) {
		return s.eng.Poll(ctx, in.RunID, in.Cursor)
	})
}
