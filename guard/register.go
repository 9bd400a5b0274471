package guard

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	"github.com/stratum-go/stratum/guard/internal/ledger"
)

// RegisterRequest registers a resource's lifecycle (stratum_guard_register).
type RegisterRequest struct {
	ResourceID     string         `json:"resource_id" jsonschema:"opaque id of the guarded resource, e.g. compose:FEAT-1"`
	Graph          map[string]any `json:"graph" jsonschema:"adjacency list: state -> array of next states"`
	EdgePredicates map[string]any `json:"edge_predicates" jsonschema:"\"from->to\" -> array of predicates {id?, type?: deterministic|verified|judged, statement}"`
	Initial        string         `json:"initial" jsonschema:"genesis state (a graph key or terminal state)"`
	Terminal       any            `json:"terminal,omitempty" jsonschema:"array of terminal states (default [])"`
	Stakes         any            `json:"stakes,omitempty" jsonschema:"\"from->to\" -> stake (cheap, default, paranoid); paranoid edges need a deterministic predicate"`
	WorkspaceRoot  *string        `json:"workspace_root,omitempty" jsonschema:"absolute directory for file, git and command evidence, inside the roots the server allows"`
}

// RegisterResult is {guard_id, checksum, status: registered|exists}.
type RegisterResult struct {
	Status   string `json:"status" jsonschema:"registered, or exists when the same policy was already registered"`
	GuardID  string `json:"guard_id" jsonschema:"the guard's id (the resource_id)"`
	Checksum string `json:"checksum" jsonschema:"the policy checksum (graph, edge predicates, terminal, stakes)"`
}

// Register validates and stores a policy. Registering the same policy,
// initial state and workspace root again is a no-op ("exists"); anything
// different for a registered resource is refused
// ([CodeAlreadyRegistered]): a policy can only change through
// [Guard.Upgrade], [Guard.ApplyUpgrade] or [Guard.Migrate], and initial and
// workspace_root never change. A workspace_root must lie inside the allowed
// roots ([Options.AllowedRoots]).
func (g *Guard) Register(ctx context.Context, req RegisterRequest) (*RegisterResult, error) {
	if err := validateResourceID(req.ResourceID); err != nil {
		return nil, err
	}
	root := req.WorkspaceRoot
	if root != nil && *root == "" {
		root = nil
	}
	p, err := validatePolicy(PolicyInput{Graph: req.Graph, EdgePredicates: req.EdgePredicates, Terminal: req.Terminal, Stakes: req.Stakes},
		validation{initial: req.Initial, workspaceRoot: root, allowCommands: g.allowCommands(),
			jail: func(root string) error { return g.checkWorkspaceRoot("workspace_root", root) }})
	if err != nil {
		return nil, err
	}
	sum, err := policyChecksum(p)
	if err != nil {
		return nil, err
	}
	dir := g.dir(req.ResourceID)
	if err := mkdirPrivate(dir); err != nil {
		return nil, wrapInternal(err, "create resource directory")
	}
	h, err := g.lock(ctx, req.ResourceID, dir)
	if err != nil {
		return nil, err
	}
	defer h.unlock()

	// Ownership: claim a directory that holds no guard yet (fresh, or left
	// empty by an interrupted registration); refuse one another engine
	// wrote.
	switch owner := markerOwner(dir); owner {
	case EngineOwner:
	case "":
		if hasGuardData(dir) {
			return nil, checkOwner(dir)
		}
		if err := g.writeMarker(h, dir, ""); err != nil {
			return nil, err
		}
	default:
		return nil, checkOwner(dir)
	}

	tightenFiles(dir)
	existing, err := g.loadRegistry(req.ResourceID, dir)
	switch {
	case err == nil:
		if existing.Checksum != sum {
			return nil, errorf(CodeAlreadyRegistered, "resource %q is already registered with policy %s; a different policy (%s) cannot replace it: use upgrade, apply_upgrade or migrate", req.ResourceID, short(existing.Checksum), short(sum))
		}
		// initial and workspace_root are part of what was registered too
		// (sealed, unlike in the reference): another value is not "the same
		// registration", and cannot be changed by registering again.
		if existing.Initial != req.Initial {
			return nil, errorf(CodeAlreadyRegistered, "resource %q is already registered with initial state %q, not %q", req.ResourceID, existing.Initial, req.Initial)
		}
		if was, now := derefOr(existing.WorkspaceRoot, ""), derefOr(root, ""); was != now {
			return nil, errorf(CodeAlreadyRegistered, "resource %q is already registered with workspace_root %q, not %q", req.ResourceID, was, now)
		}
		return &RegisterResult{Status: "exists", GuardID: req.ResourceID, Checksum: sum}, nil
	case !errors.Is(err, errAbsent):
		return nil, err
	}
	m := readMarker(dir)
	r := &registry{
		ResourceID:         req.ResourceID,
		Policy:             p,
		Initial:            req.Initial,
		Checksum:           sum,
		GraphVersion:       1,
		WorkspaceRoot:      root,
		CurrentState:       req.Initial,
		RegisteredChecksum: sum,
		Log:                &ledger.Log{},
		markerSealed:       m.RegistrySeal != 0,
		markerSince:        m.Since,
	}
	if err := g.save(h, dir, r); err != nil {
		return nil, err
	}
	return &RegisterResult{Status: "registered", GuardID: req.ResourceID, Checksum: sum}, nil
}

func derefOr(p *string, def string) string {
	if p == nil {
		return def
	}
	return *p
}

// hasGuardData reports whether dir holds a registry or a ledger. A file
// that cannot even be checked counts as present: a directory is claimed
// only when it provably holds no guard.
func hasGuardData(dir string) bool {
	for _, f := range []string{registryFile, ledgerFile} {
		if _, err := os.Lstat(filepath.Join(dir, f)); !errors.Is(err, os.ErrNotExist) {
			return true
		}
	}
	return false
}
