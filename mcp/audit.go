package mcp

import (
	"context"
	"fmt"

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
Returns status (the run's durable status: running, completed, failed, budget_exhausted, cancelled), events (200 at a time: pass nextEventsAfter back as eventsAfter for more), steps (narrow with steps: ["id"]), flowSpent, ledger, output or failure, checkpoints. An unknown run id is refused with error.code run_not_found, an unknown step with invalid_step.
Example: stratum_audit {"runId": "4b1f…", "steps": ["review"]}`,
		statuses: runStatuses(engine.StatusRunning, engine.StatusCompleted, engine.StatusFailed,
			engine.StatusBudgetExhausted, engine.StatusCancelled),
		readOnly:   true,
		idempotent: true,
	}, func(ctx context.Context, c *call, in auditIn) (*engine.AuditReport, error) {
		limit := in.EventsLimit
		switch {
		case limit == 0:
			limit = defaultAuditEvents
		case limit < 0 || limit > maxAuditEvents:
			return nil, &engine.Error{Kind: engine.ErrInvalidInput, RunID: in.RunID,
				Message: fmt.Sprintf("eventsLimit %d: use 1..%d (or omit it for %d)", limit, maxAuditEvents, defaultAuditEvents)}
		}
		return s.eng.AuditWith(ctx, in.RunID, engine.AuditOptions{EventsAfter: in.EventsAfter, EventsLimit: limit, Steps: in.Steps})
	})
}

// An audit answers a page of events, so that a long run's record never
// floods the model's context; nextEventsAfter leads to the next page.
const (
	defaultAuditEvents = 200
	maxAuditEvents     = 1000
)

type auditIn struct {
	RunID       string   `json:"runId" jsonschema:"the run's id (from stratum_plan)"`
	EventsAfter int64    `json:"eventsAfter,omitzero" jsonschema:"return the events after this seq (the nextEventsAfter of the previous page); 0 or omitted: from the first"`
	EventsLimit int      `json:"eventsLimit,omitzero" jsonschema:"at most this many events, 1..1000; omitted: 200"`
	Steps       []string `json:"steps,omitempty" jsonschema:"only these steps of the entry flow (ids); omitted: every step; [] for none"`
}
