package mcp

import (
	"context"

	"github.com/stratum-go/stratum/engine"
)

// GatesResult is the answer of stratum_gates.
type GatesResult struct {
	Status string            `json:"status" jsonschema:"ok"`
	RunID  string            `json:"runId" jsonschema:"the run's id"`
	Gates  []engine.GateView `json:"gates" jsonschema:"the run's gates waiting for a decision, each with its token, round, effective limit, the work under review and its digest"`
}

func (s *server) gatesTool() tool {
	return newTool(s, toolMeta{
		name:  "stratum_gates",
		title: "Read a run's waiting gates",
		description: `Read the gates of a run that wait for a person's decision, with everything the decision needs in one small answer: gateToken, round, maxRounds (the effective limit), revisesLeft, the routes, the work under review (each step the gate follows, with its task and output) and its digest. Call it when a run is running with a gate in waiting, to tell the person what is under review; never decide a gate unless the person told you to. Read-only.
Returns status ok and gates (empty when nothing waits). To decide on the person's word: stratum_gate_resolve with stepId, gateToken and the digest you showed them.
Example: stratum_gates {"runId": "4b1f…"}`,
		statuses:   []string{"ok"},
		readOnly:   true,
		idempotent: true,
	}, func(ctx context.Context, c *call, in runIn) (*GatesResult, error) {
		views, err := s.eng.GateViews(ctx, in.RunID)
		if err != nil {
			return nil, err
		}
		return &GatesResult{Status: "ok", RunID: in.RunID, Gates: views}, nil
	})
}
