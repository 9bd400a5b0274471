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
Returns status (the run's durable status: running, completed, failed, budget_exhausted, cancelled), events (200 at a time: pass nextEventsAfter back as eventsAfter for more), steps in declaration order (100 at a time: pass nextStepsAfter back as stepsAfter; narrow with steps: ["id"]), flowSpent, ledger, output or failure, checkpoints. An unknown run id is refused with error.code run_not_found, an unknown step with invalid_step.
Example: stratum_audit {"runId": "4b1f…", "steps": ["review"]}`,
		statuses: runStatuses(engine.StatusRunning, engine.StatusCompleted, engine.StatusFailed,
			engine.StatusBudgetExhausted, engine.StatusCancelled),
		readOnly:   true,
		idempotent: true,
	}, func(ctx context.Context, c *call, in auditIn) (*engine.AuditReport, error) {
		events, err := auditLimit(in.RunID, "eventsLimit", in.EventsLimit, defaultAuditEvents, maxAuditEvents)
		if err != nil {
			return nil, err
		}
		steps, err := auditLimit(in.RunID, "stepsLimit", in.StepsLimit, defaultAuditSteps, maxAuditSteps)
		if err != nil {
			return nil, err
		}
		return s.eng.AuditWith(ctx, in.RunID, engine.AuditOptions{EventsAfter: in.EventsAfter, EventsLimit: events,
			Steps: in.Steps, StepsAfter: in.StepsAfter, StepsLimit: steps})
	})
}

// An audit answers a page of events and a page of steps, so that a long
// run's record never floods the model's context; nextEventsAfter and
// nextStepsAfter lead to the next pages.
const (
	defaultAuditEvents = 200
	maxAuditEvents     = 1000
	defaultAuditSteps  = 100
	maxAuditSteps      = 1000
)

// auditLimit is a page size the caller gave (0 for the default), checked.
func auditLimit(runID, name string, limit, def, most int) (int, error) {
	switch {
	case limit == 0:
		return def, nil
	case limit < 0 || limit > most:
		return 0, &engine.Error{Kind: engine.ErrInvalidInput, RunID: runID,
			Message: fmt.Sprintf("%s %d: use 1..%d (or omit it for %d)", name, limit, most, def)}
	}
	return limit, nil
}

type auditIn struct {
	RunID       string   `json:"runId" jsonschema:"the run's id (from stratum_plan)"`
	EventsAfter int64    `json:"eventsAfter,omitzero" jsonschema:"return the events after this seq (the nextEventsAfter of the previous page); 0 or omitted: from the first"`
	EventsLimit int      `json:"eventsLimit,omitzero" jsonschema:"at most this many events, 1..1000; omitted: 200"`
	Steps       []string `json:"steps,omitempty" jsonschema:"only these steps of the entry flow (ids); omitted: every step; [] for none"`
	StepsAfter  string   `json:"stepsAfter,omitzero" jsonschema:"return the steps after this one (the nextStepsAfter of the previous page); omitted: from the first"`
	StepsLimit  int      `json:"stepsLimit,omitzero" jsonschema:"at most this many steps, 1..1000; omitted: 100"`
}
