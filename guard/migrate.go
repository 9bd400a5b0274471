package guard

import (
	"context"

	"github.com/stratum-go/stratum/guard/internal/ledger"
)

// MigrateRequest replaces a resource's policy on a signed one-shot
// authorization (stratum_guard_migrate): the emergency path.
// [Guard.Authorize] gives the payload to sign.
type MigrateRequest struct {
	ResourceID        string         `json:"resource_id" jsonschema:"the guarded resource"`
	NewGraph          map[string]any `json:"new_graph" jsonschema:"the new adjacency list"`
	NewEdgePredicates map[string]any `json:"new_edge_predicates" jsonschema:"the new edge predicates"`
	Authorization     string         `json:"authorization" jsonschema:"armored SSH signature (ssh-keygen -Y sign -n stratum-guard-migrate) over the payload printed by stratum guard authorize"`
	Rationale         string         `json:"rationale" jsonschema:"why; recorded in the ledger and part of the signed payload"`
	NewTerminal       any            `json:"new_terminal,omitempty" jsonschema:"the new terminal states (default [])"`
	NewStakes         any            `json:"new_stakes,omitempty" jsonschema:"the new stakes (default {})"`
}

func (r MigrateRequest) policy() PolicyInput {
	return PolicyInput{Graph: r.NewGraph, EdgePredicates: r.NewEdgePredicates, Terminal: r.NewTerminal, Stakes: r.NewStakes}
}

// MigrateResult is {status: "migrated", ...}; AuthorizedBy is empty for an
// upgrade ([UpgradeResult]).
type MigrateResult struct {
	Status       string `json:"status" jsonschema:"migrated, or unchanged when the policy was already the one given (upgrade)"`
	Checksum     string `json:"checksum" jsonschema:"the checksum of the policy now in force"`
	GraphVersion int64  `json:"graph_version" jsonschema:"the policy version now in force"`
	LedgerRef    string `json:"ledger_ref,omitempty" jsonschema:"the digest of the graph_version ledger entry recording the change (absent when unchanged)"`
	Rationale    string `json:"rationale" jsonschema:"the rationale recorded"`
	AuthorizedBy string `json:"authorized_by,omitempty" jsonschema:"the signer of a migrate: principal and key fingerprint (absent for an upgrade)"`
	// Warning: see TransitionResult.Warning.
	Warning string `json:"warning,omitempty" jsonschema:"set only when the attempt was recorded but a write after its commit failed: what happened; the next operation completes the record"`
}

// Migrate replaces the policy with any valid one. The signature names the
// resulting checksum and the ledger head, so it cannot be spent on another
// migration or twice. It never changes the current state and skips the
// tamper check (it is the repair tool for a tampered registry).
func (g *Guard) Migrate(ctx context.Context, req MigrateRequest) (*MigrateResult, error) {
	if err := validateResourceID(req.ResourceID); err != nil {
		return nil, err
	}
	if blank(req.Rationale) {
		return nil, errorf(CodeOverrideUnavailable, "a migration needs a non-empty rationale")
	}
	h, r, dir, err := g.openExisting(ctx, req.ResourceID)
	if err != nil {
		return nil, err
	}
	defer h.unlock()
	in := req.policy()
	sum, err := inputChecksum(in)
	if err != nil {
		return nil, err
	}
	payload, err := migratePayload(req.ResourceID, sum, req.Rationale, r.Log.Head)
	if err != nil {
		return nil, errorf(CodeInvalidArgument, "migrate payload: %v", err)
	}
	signer, err := g.authorize(NamespaceMigrate, req.Authorization, payload)
	if err != nil {
		return nil, err
	}
	p, err := validatePolicy(in, validation{initial: r.Initial, workspaceRoot: r.WorkspaceRoot, allowCommands: g.allowCommands()})
	if err != nil {
		return nil, err
	}
	rationale := "authorized by " + authorizedBy(signer) + ": " + req.Rationale
	warning, err := g.commitPolicy(h, dir, r, p, sum, "human", rationale)
	if err != nil {
		return nil, err
	}
	return &MigrateResult{
		Status: "migrated", Checksum: sum, GraphVersion: r.GraphVersion, LedgerRef: r.Log.Head,
		Rationale: req.Rationale, AuthorizedBy: authorizedBy(signer), Warning: warning,
	}, nil
}

// commitPolicy is the shared tail of migrate, upgrade and apply_upgrade:
// the current state must stay a node, and a graph_version entry recording
// the new policy's checksum (as its payload_digest, so that the ledger
// pins every policy in force: seal.go) is committed together with the new
// policy and graph version.
func (g *Guard) commitPolicy(h *held, dir string, r *registry, p *policy, sum, resolvedBy, rationale string) (warning string, err error) {
	if !p.isNode(r.CurrentState) {
		return "", errorf(CodeInvalidStateName, "the current state %q would not be a node of the new policy", r.CurrentState)
	}
	checksum := sum
	e := &ledger.Entry{
		FromState: r.CurrentState, ToState: r.CurrentState, Outcome: ledger.OutcomeGraphVersion, Kind: ledger.KindGraphVersion,
		ResolvedBy: resolvedBy, PayloadDigest: &checksum, PayloadDigestVersion: ledger.CurrentPayloadDigestVersion, Rationale: &rationale,
	}
	return g.commit(h, dir, r, e, &policyChange{policy: p, checksum: sum})
}
