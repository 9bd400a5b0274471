package guard

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"

	"github.com/stratum-go/stratum/guard/internal/canon"
	"github.com/stratum-go/stratum/guard/internal/ledger"
)

// TransitionRequest asks to move a resource along one edge
// (stratum_guard_transition).
type TransitionRequest struct {
	ResourceID     string         `json:"resource_id" jsonschema:"the guarded resource"`
	FromState      string         `json:"from_state" jsonschema:"the state the caller believes is current"`
	ToState        string         `json:"to_state" jsonschema:"the target state; the edge must be declared"`
	Artifacts      map[string]any `json:"artifacts" jsonschema:"context for LLM-tier predicates only; never satisfies trusted evidence"`
	ModifiedFiles  []string       `json:"modified_files,omitempty" jsonschema:"files the caller changed (context only)"`
	IdempotencyKey *string        `json:"idempotency_key,omitempty" jsonschema:"retry key: the same key and payload replays the recorded outcome"`
	ResolvedBy     string         `json:"resolved_by,omitempty" jsonschema:"agent (default) or human"`
	// ExpectedPolicyChecksum, when given, must equal the resource's current
	// policy checksum (policy_checksum_mismatch otherwise): a tracker can
	// pin the policy it reviewed.
	ExpectedPolicyChecksum string `json:"expected_policy_checksum,omitempty" jsonschema:"optional: refuse unless the policy checksum is exactly this (64 lowercase hex)"`
}

// TransitionResult is the outcome of a transition attempt. A refusal is a
// normal result (status "refused"), not an error.
type TransitionResult struct {
	// Status is applied, refused or replayed.
	Status        string         `json:"status" jsonschema:"applied, refused or replayed"`
	Verdict       map[string]any `json:"verdict" jsonschema:"each predicate of the edge with whether it held and why (on refused: what to fix)"`
	LedgerRef     string         `json:"ledger_ref" jsonschema:"the digest of the ledger entry that records this attempt"`
	CurrentState  string         `json:"current_state" jsonschema:"the resource's state after the attempt"`
	EntryDigest   string         `json:"entry_digest" jsonschema:"the ledger entry's digest (same as ledger_ref)"`
	PrevDigest    string         `json:"prev_digest" jsonschema:"the previous ledger entry's digest"`
	PayloadDigest string         `json:"payload_digest" jsonschema:"digest of the request's evidence as recorded"`
	// Warning is set only when the attempt was recorded (applied or
	// refused) but a write after the commit point failed: what happened,
	// and that the next operation completes the record (docs/guard.md,
	// "Writes and failures"). An error answer always means nothing was
	// recorded.
	Warning string `json:"warning,omitempty" jsonschema:"set only when the attempt was recorded but a write after its commit failed: what happened; the next operation completes the record"`
}

// transition payload, fixed once per request.
type transitionPayload struct {
	from, to      string
	artifacts     map[string]any
	modifiedFiles []string // sorted
	resolvedBy    string
}

// digest is the payload digest (docs/guard.md, "Checksums and digests"):
// version 1 without the policy checksum (legacy), version 2 with it.
func (p *transitionPayload) digest(version int, checksum string) (string, error) {
	material := map[string]any{
		"from_state":     p.from,
		"to_state":       p.to,
		"artifacts":      p.artifacts,
		"modified_files": p.modifiedFiles,
		"resolved_by":    p.resolvedBy,
	}
	if version >= 2 {
		material["policy_checksum"] = checksum
	}
	b, err := canon.Marshal(material)
	if err != nil {
		return "", errorf(CodeInvalidArgument, "artifacts or modified_files have no canonical JSON form: %v", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// replay looks for the newest entry with key: same payload digest (in that
// entry's digest version) is a replay; a different one is a conflict.
func (p *transitionPayload) replay(r *registry, key *string) (*ledger.Entry, error) {
	if key == nil {
		return nil, nil
	}
	prior, ok := r.Log.ByIdempotencyKey(*key)
	if !ok {
		return nil, nil
	}
	d, err := p.digest(prior.PayloadDigestVersion, r.Checksum)
	if err != nil {
		return nil, err
	}
	if prior.PayloadDigest == nil || *prior.PayloadDigest != d {
		return nil, errorf(CodeIdempotencyConflict, "idempotency_key %q was used for a different request (entry %s); use a new key", *key, short(prior.EntryDigest))
	}
	return prior, nil
}

func replayResult(prior *ledger.Entry, current string) (*TransitionResult, error) {
	if err := prior.DecodeVerdict(); err != nil {
		return nil, &Error{Code: CodeLedgerCorrupt, Message: err.Error(), Err: err}
	}
	verdict, _ := prior.Verdict.(map[string]any)
	if verdict == nil {
		verdict = replayVerdict(prior.Outcome == ledger.OutcomeApplied)
	}
	pd := ""
	if prior.PayloadDigest != nil {
		pd = *prior.PayloadDigest
	}
	return &TransitionResult{
		Status: "replayed", Verdict: verdict, LedgerRef: prior.EntryDigest, CurrentState: current,
		EntryDigest: prior.EntryDigest, PrevDigest: prior.PrevDigest, PayloadDigest: pd,
	}, nil
}

// Transition attempts one edge. It checks cheaply under the resource lock
// (phase 1), evaluates the predicates with no lock held (phase 2), then
// re-validates under the lock and commits the attempt, applied or refused,
// as one ledger entry (phase 3).
func (g *Guard) Transition(ctx context.Context, req TransitionRequest) (*TransitionResult, error) {
	if err := validateResourceID(req.ResourceID); err != nil {
		return nil, err
	}
	resolvedBy := req.ResolvedBy
	if resolvedBy == "" {
		resolvedBy = "agent"
	}
	if resolvedBy != "agent" && resolvedBy != "human" {
		return nil, errorf(CodeEvidenceParseError, "resolved_by must be agent or human, not %q", resolvedBy)
	}
	if req.Artifacts == nil {
		return nil, errorf(CodeInvalidArgument, "artifacts is required (an object)")
	}
	if req.ExpectedPolicyChecksum != "" && !isChecksum(req.ExpectedPolicyChecksum) {
		return nil, errorf(CodeInvalidArgument, "expected_policy_checksum must be 64 lowercase hex digits")
	}
	payload := &transitionPayload{
		from: req.FromState, to: req.ToState, artifacts: req.Artifacts,
		modifiedFiles: slices.Sorted(slices.Values(req.ModifiedFiles)), resolvedBy: resolvedBy,
	}
	if payload.modifiedFiles == nil {
		payload.modifiedFiles = []string{}
	}
	edge := EdgeKey(req.FromState, req.ToState)

	// Phase 1: cheap checks under the lock.
	h, r, _, err := g.openExisting(ctx, req.ResourceID)
	if err != nil {
		return nil, err
	}
	snap, replayed, err := func() (*edgeSnapshot, *TransitionResult, error) {
		defer h.unlock()
		if err := r.tamperCheck(); err != nil {
			return nil, nil, err
		}
		if req.ExpectedPolicyChecksum != "" && req.ExpectedPolicyChecksum != r.Checksum {
			return nil, nil, errorf(CodePolicyChecksumMismatch, "the resource's policy is %s, not the expected %s", r.Checksum, req.ExpectedPolicyChecksum)
		}
		if _, err := payload.digest(2, r.Checksum); err != nil {
			return nil, nil, err
		}
		prior, err := payload.replay(r, req.IdempotencyKey)
		if err != nil {
			return nil, nil, err
		}
		if prior != nil {
			res, err := replayResult(prior, r.CurrentState)
			return nil, res, err
		}
		if req.FromState != r.CurrentState {
			return nil, nil, errorf(CodeStaleFromState, "from_state %q is stale: the current state is %q", req.FromState, r.CurrentState)
		}
		if !r.Policy.hasEdge(req.FromState, req.ToState) {
			return nil, nil, errorf(CodeIllegalEdge, "edge %q is not declared in the graph", edge)
		}
		root := ""
		if r.WorkspaceRoot != nil {
			root = *r.WorkspaceRoot
		}
		if root != "" {
			// The jail holds at every transition, not only at registration:
			// a registry may name a root the server no longer allows.
			if err := g.checkWorkspaceRoot("the registered workspace_root", root); err != nil {
				return nil, nil, err
			}
		}
		return &edgeSnapshot{
			resourceID: req.ResourceID, edge: edge, stake: r.Policy.stake(edge),
			predicates: r.Policy.EdgePredicates[edge], workspaceRoot: root, log: r.Log,
			artifacts: req.Artifacts, modifiedFiles: payload.modifiedFiles,
		}, nil, nil
	}()
	if err != nil || replayed != nil {
		return replayed, err
	}
	checksumAtEvaluation := r.Checksum

	// Phase 2: evaluate with no lock held.
	met, verdict := g.evaluate(ctx, snap)
	if ctx.Err() != nil {
		return nil, &Error{Code: CodeInternal, Message: "transition cancelled during evaluation; nothing recorded", Err: ctx.Err()}
	}

	// Phase 3: re-validate and commit.
	h, r, dir, err := g.openExisting(ctx, req.ResourceID)
	if err != nil {
		return nil, err
	}
	defer h.unlock()
	prior, err := payload.replay(r, req.IdempotencyKey)
	if err != nil {
		return nil, err
	}
	if prior != nil {
		// Another caller committed this very request meanwhile.
		return replayResult(prior, r.CurrentState)
	}
	if r.CurrentState != req.FromState {
		return nil, errorf(CodeStaleFromState, "current_state advanced from %q to %q during evaluation", req.FromState, r.CurrentState)
	}
	if err := r.tamperCheck(); err != nil {
		return nil, err
	}
	// An edge a concurrent migrate removed is illegal_edge, as in the
	// reference (docs/guard.md, "Transitions, idempotency, concurrency");
	// only then is any other policy change stale.
	if !r.Policy.hasEdge(req.FromState, req.ToState) {
		return nil, errorf(CodeIllegalEdge, "edge %q is no longer declared in the graph", edge)
	}
	if r.Checksum != checksumAtEvaluation {
		// The verdict was reached under a policy that no longer holds.
		return nil, errorf(CodeStaleFromState, "the policy changed during evaluation (%s -> %s); evaluate again", short(checksumAtEvaluation), short(r.Checksum))
	}
	pd, err := payload.digest(ledger.CurrentPayloadDigestVersion, r.Checksum)
	if err != nil {
		return nil, err
	}
	outcome := ledger.OutcomeRefused
	if met {
		outcome = ledger.OutcomeApplied
	}
	e := &ledger.Entry{
		FromState: req.FromState, ToState: req.ToState, Outcome: outcome, Kind: ledger.KindTransition,
		ResolvedBy: resolvedBy, PayloadDigest: &pd, PayloadDigestVersion: ledger.CurrentPayloadDigestVersion,
		Verdict: normalize(verdict),
	}
	if req.IdempotencyKey != nil && *req.IdempotencyKey != "" {
		key := *req.IdempotencyKey
		e.IdempotencyKey = &key
	}
	warning, err := g.commit(h, dir, r, e, nil)
	if err != nil {
		return nil, err
	}
	v, _ := e.Verdict.(map[string]any)
	return &TransitionResult{
		Status: outcome, Verdict: v, LedgerRef: e.EntryDigest, CurrentState: r.CurrentState,
		EntryDigest: e.EntryDigest, PrevDigest: e.PrevDigest, PayloadDigest: pd, Warning: warning,
	}, nil
}
