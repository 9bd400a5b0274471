package mcp

import (
	"context"

	"github.com/stratum-go/stratum/engine"
)

type usageReportIn struct {
	RunID   string     `json:"runId" jsonschema:"the run's id"`
	Receipt receiptArg `json:"receipt" jsonschema:"the cost receipt"`
}

type receiptArg struct {
	DispatchID string        `json:"dispatchId" jsonschema:"your unique id for the dispatch the cost belongs to; reporting the same id again is a no-op (must not start with legacy: or engine:)"`
	StepID     string        `json:"stepId,omitzero" jsonschema:"the step the cost belongs to, if any (scoped ids allowed)"`
	Source     string        `json:"source" jsonschema:"who reports the cost (e.g. claude-code)"`
	Usage      usageArg      `json:"usage" jsonschema:"the cost: usd, tokens, ms (non-negative)"`
	Telemetry  *telemetryArg `json:"telemetry,omitzero" jsonschema:"how the dispatch ran"`
	USDSource  string        `json:"usdSource,omitzero" jsonschema:"reported or estimated; required when usage.usd is given"`
}

func (s *server) usageReportTool() tool {
	return newTool(s, toolMeta{
		name:  "stratum_usage_report",
		title: "Record what a dispatch cost",
		description: `Record an external cost receipt against a run's budget ledger, when you learn what a dispatch cost after reporting it (or outside any step). Idempotent by dispatchId: a repeated receipt is acknowledged as duplicate and counted once.
Returns ok (or duplicate) with the receipt's seq, the updated ledger, and budget when the cost breaches one (flow_exhausted ends the run as budget_exhausted). A malformed receipt is refused with error.code invalid_receipt, an unknown step with invalid_step.
Example: stratum_usage_report {"runId": "4b1f…", "receipt": {"dispatchId": "sess-42-outline", "stepId": "outline", "source": "claude-code", "usage": {"usd": 0.012, "tokens": 5400}, "usdSource": "reported"}}`,
		statuses:   []string{"ok", "duplicate"},
		idempotent: true,
	}, func(ctx context.Context, c *call, in usageReportIn) (*engine.UsageResult, error) {
		rc := engine.Receipt{DispatchID: in.Receipt.DispatchID, StepID: in.Receipt.StepID, Source: in.Receipt.Source,
			USDSource: in.Receipt.USDSource}
		if u := c.raw("receipt", "usage"); u != nil {
			rc.Usage = u
		}
		if tm := c.raw("receipt", "telemetry"); tm != nil {
			rc.Telemetry = tm
		}
		return s.eng.UsageReport(ctx, in.RunID, rc)
	})
}
