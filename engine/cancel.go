package engine

import (
	"context"
	"strings"

	"github.com/stratum-go/stratum/ir"
)

// CancelResult is the outcome of Cancel (spec/mcp.md 2.15). The agent
// teardown half belongs to the front ends; the engine settles the run.
type CancelResult struct {
	// Status is the run's status after the call.
	Status RunStatus `json:"status" jsonschema:"the run's status after the call: cancelled, or completed/failed/budget_exhausted when it had already finished (nothing changed)"`
	RunID  string    `json:"runId" jsonschema:"the run's id"`
	// FlowSettled is true when the run is (now or already) cancelled.
	FlowSettled bool `json:"flowSettled" jsonschema:"true when the run is (now or already) cancelled"`
	// Acknowledged equals FlowSettled until agent teardown exists.
	Acknowledged bool `json:"acknowledged" jsonschema:"true when the cancel is settled and every agent started for the run is accounted for"`
	// Reason is already_<status> when the run had already finished.
	Reason string     `json:"reason,omitzero" jsonschema:"already_<status> when the run had already finished or been cancelled"`
	Ledger LedgerView `json:"ledger" jsonschema:"spend and the flow's budget"`
	// Burned lists the issuances made void: step ids whose dispatch or
	// gate token was burnt, and the number of fanout item tokens.
	Burned BurnedTokens `json:"burned" jsonschema:"the outstanding issuances made void: step ids whose dispatch or gate token was burnt, and the number of fanout item tokens"`
	Agents AgentSummary `json:"agents" jsonschema:"agent processes signalled and reaped for the run"`
}

// BurnedTokens counts what a cancel made void.
type BurnedTokens struct {
	Steps []string `json:"steps" jsonschema:"the steps whose dispatch or gate token was burnt"`
	Items int      `json:"items" jsonschema:"how many fanout item tokens were burnt"`
}

// AgentSummary counts agent processes torn down by a cancel; the engine
// registers none, so it is all zero here.
type AgentSummary struct {
	Signalled      int `json:"signalled" jsonschema:"agent processes: signalled"`
	Reaped         int `json:"reaped" jsonschema:"agent processes: reaped"`
	Gone           int `json:"gone" jsonschema:"agent processes: gone"`
	Unreachable    int `json:"unreachable" jsonschema:"agent processes: unreachable"`
	AlreadySettled int `json:"alreadySettled" jsonschema:"agent processes: alreadySettled"`
	Unresolved     int `json:"unresolved" jsonschema:"agent processes: unresolved"`
	Unsettled      int `json:"unsettled" jsonschema:"agent processes: unsettled"`
	Unreaped       int `json:"unreaped" jsonschema:"agent processes: unreaped"`
}

// Cancel settles a running run as cancelled under the run lock: every
// outstanding dispatch, gate and item token is burnt (later reports are
// refused with ErrRunCancelled), engine fanouts stop at their next
// boundary, and a flow_cancelled event records what was burnt. A run that
// already finished is left as it is (Reason already_<status>).
func (e *Engine) Cancel(ctx context.Context, runID, reason string) (*CancelResult, error) {
	return e.cancel(ctx, runID, reason, "fg")
}

// cancel is Cancel, recorded as made by "fg" (a client or a person) or
// "bg" (a background run's cancel).
func (e *Engine) cancel(ctx context.Context, runID, reason, by string) (*CancelResult, error) {
	t, err := e.mutate(ctx, runID, func(t *txn) error {
		res := &CancelResult{RunID: t.st.ID, Burned: BurnedTokens{Steps: []string{}}}
		t.extra = res
		if t.st.Status != StatusRunning || t.st.CancelRequested {
			status := t.st.Status
			if t.st.CancelRequested {
				status = StatusCancelled
			}
			res.Status, res.Reason = status, "already_"+string(status)
			res.FlowSettled = status == StatusCancelled
			res.Acknowledged = res.FlowSettled
			res.Ledger = t.ledgerView()
			return nil
		}
		root := t.rootScope()
		t.burn(root, &res.Burned)
		t.st.CancelRequested = true
		t.st.Status = StatusCancelled
		t.emit(EventFlowCancelled, "", CancelledDetail{By: by, Burned: res.Burned, Reason: cleanText(strings.TrimSpace(reason))})
		res.Status, res.FlowSettled, res.Acknowledged = StatusCancelled, true, true
		res.Ledger = t.ledgerView()
		return nil
	})
	if err != nil {
		return nil, err
	}
	// The cancel is durable: stop at once what this process runs for the
	// run (other processes see it within effectPollInterval).
	e.stopEffects(runID)
	return t.extra.(*CancelResult), nil
}

// burn voids every outstanding issuance of a scope, recursing into
// subflows.
func (t *txn) burn(sc *scope, b *BurnedTokens) {
	for _, s := range sc.liveSteps() {
		st := sc.peek(s)
		if st == nil {
			continue
		}
		if st.DispatchToken != "" || st.GateToken != "" || st.Effect != nil {
			b.Steps = append(b.Steps, sc.scoped(s.ID))
			st.DispatchToken, st.GateToken, st.Effect = "", "", nil
			st.touch()
		}
		if st.Fanout != nil {
			for _, it := range st.Fanout.Items {
				if it.DispatchToken != "" {
					b.Items++
					it.DispatchToken = ""
					st.touch()
				}
			}
		}
		if s.Kind == ir.KindRun && st.Sub != nil {
			if child := t.childScope(sc, s); child != nil {
				n := len(b.Steps)
				t.burn(child, b)
				if len(b.Steps) != n {
					st.touch() // the subflow lives in the run step's state
				}
			}
		}
	}
}
