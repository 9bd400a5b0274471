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
	Status string `json:"status"`
	RunID  string `json:"runId"`
	// FlowSettled is true when the run is (now or already) cancelled.
	FlowSettled bool `json:"flowSettled"`
	// Acknowledged equals FlowSettled until agent teardown exists.
	Acknowledged bool `json:"acknowledged"`
	// Reason is already_<status> when the run had already finished.
	Reason string     `json:"reason,omitempty"`
	Ledger LedgerView `json:"ledger"`
	// Burned lists the issuances made void: step ids whose dispatch or
	// gate token was burnt, and the number of fanout item tokens.
	Burned BurnedTokens `json:"burned"`
	Agents AgentSummary `json:"agents"`
}

// BurnedTokens counts what a cancel made void.
type BurnedTokens struct {
	Steps []string `json:"steps"`
	Items int      `json:"items"`
}

// AgentSummary counts agent processes torn down by a cancel; the engine
// registers none, so it is all zero here.
type AgentSummary struct {
	Signalled      int `json:"signalled"`
	Reaped         int `json:"reaped"`
	Gone           int `json:"gone"`
	Unreachable    int `json:"unreachable"`
	AlreadySettled int `json:"alreadySettled"`
	Unresolved     int `json:"unresolved"`
	Unsettled      int `json:"unsettled"`
	Unreaped       int `json:"unreaped"`
}

// Cancel settles a running run as cancelled under the run lock: every
// outstanding dispatch, gate and item token is burnt (later reports are
// refused with ErrRunCancelled), engine fanouts stop at their next
// boundary, and a flow_cancelled event records what was burnt. A run that
// already finished is left as it is (Reason already_<status>).
func (e *Engine) Cancel(ctx context.Context, runID, reason string) (*CancelResult, error) {
	t, err := e.mutate(ctx, runID, func(t *txn) error {
		res := &CancelResult{RunID: t.st.ID, Burned: BurnedTokens{Steps: []string{}}}
		t.extra = res
		if t.st.Status != StatusRunning || t.st.CancelRequested {
			status := t.st.Status
			if t.st.CancelRequested {
				status = StatusCancelled
			}
			res.Status, res.Reason = status, "already_"+status
			res.FlowSettled = status == StatusCancelled
			res.Acknowledged = res.FlowSettled
			res.Ledger = t.ledgerView()
			return nil
		}
		root := t.rootScope()
		t.burn(root, &res.Burned)
		t.st.CancelRequested = true
		t.st.Status = StatusCancelled
		d := map[string]any{"by": "fg", "burned": res.Burned}
		if r := cleanText(strings.TrimSpace(reason)); r != "" {
			d["reason"] = r
		}
		t.emit("flow_cancelled", "", d)
		res.Status, res.FlowSettled, res.Acknowledged = StatusCancelled, true, true
		res.Ledger = t.ledgerView()
		return nil
	})
	if err != nil {
		return nil, err
	}
	return t.extra.(*CancelResult), nil
}

// burn voids every outstanding issuance of a scope, recursing into
// subflows.
func (t *txn) burn(sc *scope, b *BurnedTokens) {
	for _, s := range sc.flow.Steps {
		st := sc.peek(s)
		if st == nil {
			continue
		}
		if st.DispatchToken != "" || st.GateToken != "" {
			b.Steps = append(b.Steps, sc.scoped(s.ID))
			st.DispatchToken, st.GateToken = "", ""
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
