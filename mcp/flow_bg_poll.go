package mcp

import (
	"context"

	"github.com/stratum-go/stratum/engine"
)

type flowBgPollIn struct {
	RunID  string `json:"runId" jsonschema:"the background run's id"`
	Cursor int64  `json:"cursor,omitzero" jsonschema:"the nextCursor of your previous poll, to get only newer events; 0 or omitted for the first ones"`
}

func (s *server) flowBgPollTool() tool {
	return newTool(s, toolMeta{
		name:  "stratum_flow_bg_poll",
		title: "Poll a background run",
		description: `Read how a background run (stratum_flow_run_bg) stands and the events since your last poll, without changing anything. Pass the previous nextCursor: at most 50 events come back per call (moreEvents says more follow). Any background run of the state root can be polled, also one another server drives or one started before a restart. Poll every minute or two, not in a tight loop: the run goes on by itself.
Returns status (running, completed, failed, budget_exhausted, cancelled) and bg.status: running (the server works on it), paused_gate (it waits for the user on bg.pendingGates: ask the user, read the gate with stratum_gates and apply their decision with stratum_gate_resolve; the run then continues by itself), halted (bg.halted says why; the server tries again) or the terminal status. Also bg.driver (the server driving it), events, nextCursor, waiting, ledger, output or failure. A run started with stratum_plan is refused (not_background).
Example: stratum_flow_bg_poll {"runId": "4b1f…", "cursor": 12}`,
		statuses: runStatuses(engine.StatusRunning, engine.StatusCompleted, engine.StatusFailed,
			engine.StatusBudgetExhausted, engine.StatusCancelled),
		readOnly:   true,
		idempotent: true,
	}, func(ctx context.Context, c *call, in flowBgPollIn) (*engine.BackgroundPoll, error) {
		return s.eng.PollBackground(ctx, in.RunID, in.Cursor)
	})
}
