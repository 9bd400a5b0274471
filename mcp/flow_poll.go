package mcp

import (
	"context"

	"github.com/stratum-go/stratum/engine"
)

type flowPollIn struct {
	RunID  string `json:"runId" jsonschema:"the run's id"`
	Cursor int64  `json:"cursor,omitzero" jsonschema:"the nextCursor of your previous poll, to get only newer events; 0 or omitted for all"`
}

// PollResult is the answer of stratum_flow_poll.
type PollResult struct {
	Status     string              `json:"status" jsonschema:"the run's state: ready (steps await your results), running, completed, failed, budget_exhausted or cancelled"`
	RunID      string              `json:"runId" jsonschema:"the run's id"`
	Events     []Event             `json:"events" jsonschema:"the events after cursor, oldest first"`
	NextCursor int64               `json:"nextCursor" jsonschema:"pass it as cursor to the next poll"`
	Ready      []engine.ReadyEntry `json:"ready,omitzero" jsonschema:"steps awaiting your result (status ready), with their current dispatch tokens"`
	Waiting    []engine.Waiting    `json:"waiting,omitzero" jsonschema:"what a running run waits on: gate (a person), fanout or subflow (engine work)"`
	Ledger     ledgerView          `json:"ledger" jsonschema:"spend and the flow's budget"`
	Output     any                 `json:"output,omitzero" jsonschema:"the flow's output (completed)"`
	Failure    *engine.Failure     `json:"failure,omitzero" jsonschema:"why the run failed (failed, budget_exhausted)"`
}

func (s *server) flowPollTool() tool {
	return newTool(s, toolMeta{
		name:  "stratum_flow_poll",
		title: "Poll a run's progress",
		description: `Read a run's current state and the events since your last poll, without changing anything. Call it while a run is running on engine work (waiting kind fanout or subflow), every few seconds, passing the previous nextCursor, until the status changes.
Returns status (ready, running, completed, failed, budget_exhausted, cancelled), events after cursor, nextCursor, ready entries with their current tokens, waiting, ledger, and output or failure. A cursor beyond the log is refused with error.code invalid_cursor.
Example: stratum_flow_poll {"runId": "4b1f…", "cursor": 12}`,
		statuses: []string{engine.StatusReady, engine.StatusRunning, engine.StatusCompleted,
			engine.StatusFailed, engine.StatusBudgetExhausted, engine.StatusCancelled},
		readOnly:   true,
		idempotent: true,
	}, func(ctx context.Context, c *call, in flowPollIn) (*PollResult, error) {
		p, err := s.eng.Poll(ctx, in.RunID, in.Cursor)
		if err != nil {
			return nil, err
		}
		out := &PollResult{Status: p.Status, RunID: p.RunID, Events: newEvents(p.Events), NextCursor: p.NextCursor,
			Ledger: newLedgerView(p.Ledger), Output: value(p.Output), Failure: p.Failure}
		if rs := newRunState(p.Response); rs != nil {
			out.Status, out.Ready, out.Waiting = rs.Status, rs.Ready, rs.Waiting
		}
		return out, nil
	})
}
