package guard

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/stratum-go/stratum/guard/internal/canon"
)

// UpgradeRequest changes a policy without any authorization, provided the
// change is additive-only (stratum_guard_upgrade).
type UpgradeRequest struct {
	ResourceID        string         `json:"resource_id" jsonschema:"the guarded resource"`
	NewGraph          map[string]any `json:"new_graph" jsonschema:"the new adjacency list (a superset of the old)"`
	NewEdgePredicates map[string]any `json:"new_edge_predicates" jsonschema:"the new edge predicates (existing edges unchanged)"`
	Rationale         string         `json:"rationale" jsonschema:"why; recorded in the ledger"`
	NewTerminal       any            `json:"new_terminal,omitempty" jsonschema:"terminal states (must equal the old set)"`
	NewStakes         any            `json:"new_stakes,omitempty" jsonschema:"stakes (existing edges unchanged)"`
}

// UpgradeResult is {status: "migrated"|"unchanged", ...}.
type UpgradeResult = MigrateResult

// Upgrade applies a provably non-weakening policy change: new states and
// new edges into new states, nothing removed, no existing predicate or
// stake touched, terminal states frozen. An identical policy is
// "unchanged" and writes nothing. Any other change is refused with every
// reason listed ([CodeIncompatibleUpgrade]): use [Guard.ApplyUpgrade] or
// [Guard.Migrate].
func (g *Guard) Upgrade(ctx context.Context, req UpgradeRequest) (*UpgradeResult, error) {
	if err := validateResourceID(req.ResourceID); err != nil {
		return nil, err
	}
	if blank(req.Rationale) {
		return nil, errorf(CodeOverrideUnavailable, "an upgrade needs a non-empty rationale")
	}
	h, r, dir, err := g.openExisting(ctx, req.ResourceID)
	if err != nil {
		return nil, err
	}
	defer h.unlock()
	// Tamper check first, so a tampered registry is never blessed as
	// "unchanged".
	if err := r.tamperCheck(); err != nil {
		return nil, err
	}
	in := PolicyInput{Graph: req.NewGraph, EdgePredicates: req.NewEdgePredicates, Terminal: req.NewTerminal, Stakes: req.NewStakes}
	p, err := validatePolicy(in, validation{initial: r.Initial, workspaceRoot: r.WorkspaceRoot, allowCommands: g.allowCommands()})
	if err != nil {
		return nil, err
	}
	sum, err := policyChecksum(p)
	if err != nil {
		return nil, err
	}
	if sum == r.Checksum {
		return &UpgradeResult{Status: "unchanged", Checksum: sum, GraphVersion: r.GraphVersion, Rationale: req.Rationale}, nil
	}
	if reasons := additiveViolations(r.Policy, p, r.Initial); len(reasons) > 0 {
		return nil, errorf(CodeIncompatibleUpgrade, "%s", strings.Join(reasons, "; "))
	}
	warning, err := g.commitPolicy(h, dir, r, p, sum, "agent", req.Rationale)
	if err != nil {
		return nil, err
	}
	return &UpgradeResult{Status: "migrated", Checksum: sum, GraphVersion: r.GraphVersion, LedgerRef: r.Log.Head, Rationale: req.Rationale, Warning: warning}, nil
}

// edges lists every "from->to" of a graph.
func (p *policy) edges() map[string][2]string {
	out := map[string][2]string{}
	for from, targets := range p.Graph {
		for _, to := range targets {
			out[EdgeKey(from, to)] = [2]string{from, to}
		}
	}
	return out
}

// nodes is every state a policy mentions, initial included.
func (p *policy) nodes(initial string) map[string]bool {
	n := map[string]bool{initial: true}
	for from, targets := range p.Graph {
		n[from] = true
		for _, t := range targets {
			n[t] = true
		}
	}
	for _, t := range p.Terminal {
		n[t] = true
	}
	return n
}

func canonOrNull(v any, present bool) []byte {
	if !present {
		return []byte("null")
	}
	b, err := canon.Marshal(v)
	if err != nil {
		return []byte(fmt.Sprintf("<unencodable %v>", err))
	}
	return b
}

// additiveViolations returns every reason the change old -> next is not
// additive-only (docs/guard.md, "Additive-only upgrades"), in a stable
// order.
func additiveViolations(old, next *policy, initial string) []string {
	var reasons []string
	// 1. Nothing removed.
	for _, k := range sortedKeys(old.Graph) {
		if _, ok := next.Graph[k]; !ok {
			reasons = append(reasons, fmt.Sprintf("state %q removed from the graph", k))
		}
	}
	oldEdges, newEdges := old.edges(), next.edges()
	for _, k := range sortedKeys(oldEdges) {
		if _, ok := newEdges[k]; !ok {
			reasons = append(reasons, fmt.Sprintf("edge %q removed", k))
		}
	}
	// 2. Existing edges keep their predicates and stakes byte for byte.
	existing := map[string]bool{}
	for k := range oldEdges {
		existing[k] = true
	}
	for k := range old.EdgePredicates {
		existing[k] = true
	}
	for k := range old.Stakes {
		existing[k] = true
	}
	for _, k := range sortedKeys(existing) {
		op, oOK := old.EdgePredicates[k]
		np, nOK := next.EdgePredicates[k]
		if !bytes.Equal(canonOrNull(op, oOK), canonOrNull(np, nOK)) {
			reasons = append(reasons, fmt.Sprintf("predicates of existing edge %q changed", k))
		}
		oldStake, oOK := old.Stakes[k]
		newStake, nOK := next.Stakes[k]
		if oOK != nOK || oldStake != newStake {
			reasons = append(reasons, fmt.Sprintf("stake of existing edge %q changed", k))
		}
	}
	// 3-4. New edges only lead into new states, never out of old terminals.
	oldNodes := old.nodes(initial)
	for _, k := range sortedKeys(newEdges) {
		if _, ok := oldEdges[k]; ok {
			continue
		}
		from, to := newEdges[k][0], newEdges[k][1]
		if oldNodes[to] {
			reasons = append(reasons, fmt.Sprintf("new edge %q leads into existing state %q (it would bypass the predicates of the existing routes)", k, to))
		}
		if slices.Contains(old.Terminal, from) {
			reasons = append(reasons, fmt.Sprintf("new edge %q leaves terminal state %q", k, from))
		}
	}
	// 5. Terminal states frozen.
	for _, t := range slices.Sorted(slices.Values(old.Terminal)) {
		if !slices.Contains(next.Terminal, t) {
			reasons = append(reasons, fmt.Sprintf("terminal state %q removed", t))
		}
	}
	for _, t := range slices.Sorted(slices.Values(next.Terminal)) {
		if !slices.Contains(old.Terminal, t) {
			reasons = append(reasons, fmt.Sprintf("terminal state %q added", t))
		}
	}
	return reasons
}
