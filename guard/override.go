package guard

import (
	"context"

	"github.com/stratum-go/stratum/guard/internal/ledger"
)

// OverrideRequest moves one declared edge without its predicates, on a
// signed one-shot authorization (stratum_guard_override): [Guard.Authorize]
// gives the payload to sign.
type OverrideRequest struct {
	ResourceID    string `json:"resource_id" jsonschema:"the guarded resource"`
	FromState     string `json:"from_state" jsonschema:"the current state"`
	ToState       string `json:"to_state" jsonschema:"target state; the edge must be declared"`
	Authorization string `json:"authorization" jsonschema:"armored SSH signature (ssh-keygen -Y sign -n stratum-guard-override) over the payload printed by stratum guard authorize"`
	Rationale     string `json:"rationale" jsonschema:"why; recorded in the ledger and part of the signed payload"`
	ResolvedBy    string `json:"resolved_by,omitempty" jsonschema:"must be human (the default)"`
}

// OverrideResult is {status: "deviation", ...}.
type OverrideResult struct {
	Status        string `json:"status" jsonschema:"deviation"`
	LedgerRef     string `json:"ledger_ref" jsonschema:"the digest of the ledger entry that records the override"`
	CurrentState  string `json:"current_state" jsonschema:"the resource's state after the override (to_state)"`
	Rationale     string `json:"rationale" jsonschema:"the rationale recorded"`
	AuthorizedBy  string `json:"authorized_by" jsonschema:"the signer: principal and key fingerprint"`
	EntryDigest   string `json:"entry_digest" jsonschema:"the ledger entry's digest (same as ledger_ref)"`
	PrevDigest    string `json:"prev_digest" jsonschema:"the previous ledger entry's digest"`
	PayloadDigest string `json:"payload_digest" jsonschema:"digest of the request as recorded"`
	// Warning: see TransitionResult.Warning.
	Warning string `json:"warning,omitempty" jsonschema:"set only when the attempt was recorded but a write after its commit failed: what happened; the next operation completes the record"`
}

// Override records a deviation: a move along a declared edge that skips
// the edge's predicates, authorized by a signature over the resource, the
// edge, the rationale and the current ledger head (read under the lock, so
// the signature is spent by this very entry). It never bypasses the graph,
// and it refuses a tampered registry (guard_tampered).
func (g *Guard) Override(ctx context.Context, req OverrideRequest) (*OverrideResult, error) {
	if err := validateResourceID(req.ResourceID); err != nil {
		return nil, err
	}
	resolvedBy := req.ResolvedBy
	if resolvedBy == "" {
		resolvedBy = "human"
	}
	if resolvedBy != "human" {
		return nil, errorf(CodeOverrideUnavailable, "an override must be resolved_by human, not %q", resolvedBy)
	}
	if blank(req.Rationale) {
		return nil, errorf(CodeOverrideUnavailable, "an override needs a non-empty rationale")
	}
	h, r, dir, err := g.openExisting(ctx, req.ResourceID)
	if err != nil {
		return nil, err
	}
	defer h.unlock()
	// Unlike the reference, an override refuses a tampered registry: its
	// write would seal the edited record (repair with a signed migrate).
	if err := r.tamperCheck(); err != nil {
		return nil, err
	}
	payload, err := overridePayload(req.ResourceID, req.FromState, req.ToState, req.Rationale, r.Log.Head)
	if err != nil {
		return nil, errorf(CodeInvalidArgument, "override payload: %v", err)
	}
	signer, err := g.authorize(NamespaceOverride, req.Authorization, payload)
	if err != nil {
		return nil, err
	}
	if req.FromState != r.CurrentState {
		return nil, errorf(CodeStaleFromState, "from_state %q is stale: the current state is %q", req.FromState, r.CurrentState)
	}
	edge := EdgeKey(req.FromState, req.ToState)
	if !r.Policy.hasEdge(req.FromState, req.ToState) {
		return nil, errorf(CodeIllegalEdge, "edge %q is not declared: an override skips predicates, never the graph", edge)
	}
	tp := &transitionPayload{from: req.FromState, to: req.ToState, artifacts: map[string]any{}, modifiedFiles: []string{}, resolvedBy: resolvedBy}
	pd, err := tp.digest(ledger.CurrentPayloadDigestVersion, r.Checksum)
	if err != nil {
		return nil, err
	}
	rationale := "authorized by " + authorizedBy(signer) + ": " + req.Rationale
	e := &ledger.Entry{
		FromState: req.FromState, ToState: req.ToState, Outcome: ledger.OutcomeDeviation, Kind: ledger.KindDeviation,
		ResolvedBy: resolvedBy, PayloadDigest: &pd, PayloadDigestVersion: ledger.CurrentPayloadDigestVersion, Rationale: &rationale,
	}
	warning, err := g.commit(h, dir, r, e, nil)
	if err != nil {
		return nil, err
	}
	return &OverrideResult{
		Status: "deviation", LedgerRef: e.EntryDigest, CurrentState: r.CurrentState, Rationale: req.Rationale,
		AuthorizedBy: authorizedBy(signer), EntryDigest: e.EntryDigest, PrevDigest: e.PrevDigest, PayloadDigest: pd, Warning: warning,
	}, nil
}
