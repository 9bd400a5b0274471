package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/stratum-go/stratum/ir"
)

// Receipt is an external cost receipt (docs/engine.md, "Budgets").
type Receipt struct {
	// DispatchID identifies the dispatch the cost belongs to; receipts
	// are idempotent by it. It must not start with legacy: or engine:.
	DispatchID string
	// StepID optionally attributes the cost to a step (scoped ids
	// allowed).
	StepID string
	// Source names who reports (non-empty).
	Source string
	// Usage is a JSON object with keys among usd, tokens, ms.
	Usage json.RawMessage
	// Telemetry is nil or the JSON object {durationMs, model, effort?}.
	Telemetry json.RawMessage
	// USDSource is "reported" or "estimated"; required when usd is
	// present.
	USDSource string
}

// UsageResult is the answer to UsageReport.
type UsageResult struct {
	// Status is "ok" or "duplicate" (the dispatchId was already
	// receipted; Seq is the original's).
	Status string `json:"status" jsonschema:"ok: recorded; duplicate: this dispatchId was already recorded (seq is the original's)"`
	RunID  string `json:"runId" jsonschema:"the run's id"`
	Seq    int64  `json:"seq" jsonschema:"the receipt's sequence number in the run"`
	// Budget reports a breach: flow_exhausted (the run is now
	// budget_exhausted), flow_exhausted_after_terminal, subflow_exhausted
	// or task_exhausted (recorded only).
	Budget string     `json:"budget,omitzero" jsonschema:"set when the cost breaches a budget: flow_exhausted (the run is now budget_exhausted), flow_exhausted_after_terminal, subflow_exhausted, task_exhausted"`
	Ledger LedgerView `json:"ledger" jsonschema:"spend and the flow's budget after the receipt"`
}

// UsageReport appends an external cost receipt to a run's ledgers,
// idempotently by dispatchId. Receipts against do and fanout steps debit
// the flow, subflow and task ledgers; against other steps the flow and
// subflow ledgers; without a step the flow ledger. A flow breach on a
// running run ends it as budget_exhausted. Cancelled runs refuse receipts.
func (e *Engine) UsageReport(ctx context.Context, runID string, rc Receipt) (*UsageResult, error) {
	bad := func(format string, args ...any) error {
		return newErr(ErrInvalidReceipt, runID, "invalid receipt: "+format, args...)
	}
	switch {
	case rc.DispatchID == "":
		return nil, bad("dispatchId is required")
	case strings.HasPrefix(rc.DispatchID, "legacy:") || strings.HasPrefix(rc.DispatchID, "engine:"):
		return nil, bad("dispatchId %q uses a reserved prefix (legacy:, engine:)", rc.DispatchID)
	case rc.Source == "":
		return nil, bad("source is required")
	case !utf8.ValidString(rc.DispatchID + rc.Source + rc.StepID + rc.USDSource):
		return nil, bad("dispatchId, source, stepId and usdSource must be valid UTF-8")
	}
	usage, dispatches, err := parseUsage(rc.Usage)
	if err != nil {
		return nil, bad("usage: %s", shapeReason(err))
	}
	if rc.Usage == nil {
		return nil, bad("usage must be an object with non-negative usd, tokens, ms")
	}
	if dispatches {
		return nil, bad("dispatches are engine-accounted and cannot be receipted")
	}
	if usage.USD > 0 && rc.USDSource != "reported" && rc.USDSource != "estimated" {
		return nil, bad("usdSource must be reported or estimated when usage.usd is present")
	}
	tele, err := parseTelemetry(rc.Telemetry)
	if err != nil {
		return nil, bad("telemetry must be {durationMs, model, effort?}: %s", shapeReason(err))
	}
	t, err := e.mutate(ctx, runID, func(t *txn) error {
		if t.st.Status == StatusCancelled || t.st.CancelRequested {
			return newErr(ErrRunCancelled, t.st.ID, "run %s is cancelled; receipts cannot be recorded", t.st.ID)
		}
		res := &UsageResult{Status: "ok", RunID: t.st.ID}
		t.extra = res
		if seq, dup := t.st.ExternalReceipts[rc.DispatchID]; dup {
			res.Status, res.Seq, res.Ledger = "duplicate", seq, t.ledgerView()
			return nil
		}
		var loc located
		if rc.StepID != "" {
			var ok bool
			loc, ok = t.locate(rc.StepID)
			if !ok {
				return newErr(ErrInvalidStep, t.st.ID, "invalid step: run %s has no step %q", t.st.ID, rc.StepID)
			}
		}
		extra := map[string]any{}
		if rc.USDSource != "" {
			extra["usdSource"] = rc.USDSource
		}
		res.Seq = t.receipt(rc.Source, rc.DispatchID, rc.StepID, usage, tele, extra)
		if t.st.ExternalReceipts == nil {
			t.st.ExternalReceipts = map[string]int64{}
		}
		t.st.ExternalReceipts[rc.DispatchID] = res.Seq
		var lvl level
		switch {
		case loc.sc == nil:
			lvl = t.settle(t.rootScope(), nil, nil, usage, false)
		default:
			task := loc.step.Kind == ir.KindDo || loc.step.Kind == ir.KindFanout
			lvl = t.settle(loc.sc, loc.step, loc.sc.state(loc.step), usage, task)
		}
		switch lvl {
		case levelFlow:
			if t.st.Status == StatusRunning {
				res.Budget = "flow_exhausted"
				t.exhaustRun(&Failure{Reason: fmt.Sprintf("flow budget exhausted (usage report %s)", rc.DispatchID)})
			} else {
				res.Budget = "flow_exhausted_after_terminal"
			}
		case levelSubflow:
			res.Budget = "subflow_exhausted"
		case levelTask:
			res.Budget = "task_exhausted"
		}
		res.Ledger = t.ledgerView()
		return nil
	})
	if err != nil {
		return nil, err
	}
	return t.extra.(*UsageResult), nil
}
