package guard

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	"github.com/stratum-go/stratum/internal/atomicfile"
)

// RegisterRequest registers a resource's lifecycle (stratum_guard_register).
type RegisterRequest struct {
	ResourceID     string         `json:"resource_id" jsonschema:"opaque id of the guarded resource, e.g. compose:FEAT-1"`
	Graph          map[string]any `json:"graph" jsonschema:"adjacency list: state -> array of next states"`
	EdgePredicates map[string]any `json:"edge_predicates" jsonschema:"\"from->to\" -> array of predicates {id?, type?: deterministic|verified|judged, statement}"`
	Initial        string         `json:"initial" jsonschema:"genesis state (a graph key or terminal state)"`
	Terminal       any            `json:"terminal,omitempty" jsonschema:"array of terminal states (default [])"`
	Stakes         any            `json:"stakes,omitempty" jsonschema:"\"from->to\" -> stake (cheap, default, paranoid); paranoid edges need a deterministic predicate"`
	WorkspaceRoot  *string        `json:"workspace_root,omitempty" jsonschema:"absolute directory for file, git and command evidence"`
}

// RegisterResult is {guard_id, checksum, status: registered|exists}.
type RegisterResult struct {
	Status   string `json:"status"`
	GuardID  string `json:"guard_id"`
	Checksum string `json:"checksum"`
}

// Register validates and stores a policy. Registering the same policy again
// is a no-op ("exists"); a different policy for a registered resource is
// refused (guard_already_registered): a policy can only change through
// upgrade, apply_upgrade or migrate.
func (g *Guard) Register(ctx context.Context, req RegisterRequest) (*RegisterResult, error) {
	if err := validateResourceID(req.ResourceID); err != nil {
		return nil, err
	}
	root := req.WorkspaceRoot
	if root != nil && *root == "" {
		root = nil
	}
	p, err := validatePolicy(PolicyInput{Graph: req.Graph, EdgePredicates: req.EdgePredicates, Terminal: req.Terminal, Stakes: req.Stakes},
		validation{initial: req.Initial, workspaceRoot: root, allowCommands: g.allowCommands()})
	if err != nil {
		return nil, err
	}
	sum, err := policyChecksum(p)
	if err != nil {
		return nil, err
	}
	dir := g.dir(req.ResourceID)
	if err := g.makeDir(dir); err != nil {
		return nil, err
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
		if err := g.writeMarker(h, dir); err != nil {
			return nil, err
		}
	default:
		return nil, checkOwner(dir)
	}

	existing, err := g.loadRegistry(req.ResourceID, dir)
	switch {
	case err == nil:
		if existing.Checksum == sum {
			return &RegisterResult{Status: "exists", GuardID: req.ResourceID, Checksum: sum}, nil
		}
		return nil, errorf(CodeAlreadyRegistered, "resource %q is already registered with policy %s; a different policy (%s) cannot replace it: use upgrade, apply_upgrade or migrate", req.ResourceID, short(existing.Checksum), short(sum))
	case !errors.Is(err, errAbsent):
		return nil, err
	}
	r := &registry{
		ResourceID:    req.ResourceID,
		Policy:        p,
		Initial:       req.Initial,
		Checksum:      sum,
		GraphVersion:  1,
		WorkspaceRoot: root,
		CurrentState:  req.Initial,
	}
	if err := g.save(h, dir, r); err != nil {
		return nil, err
	}
	return &RegisterResult{Status: "registered", GuardID: req.ResourceID, Checksum: sum}, nil
}

// makeDir creates the resource directory (and the store root) if needed,
// syncing each parent whose entries changed so that an acknowledged
// registration survives a crash.
func (g *Guard) makeDir(dir string) error {
	var created []string
	for p := dir; ; p = filepath.Dir(p) {
		if _, err := os.Stat(p); err == nil || filepath.Dir(p) == p {
			break
		}
		created = append(created, p)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return wrapInternal(err, "create resource directory")
	}
	for _, p := range created {
		if err := atomicfile.SyncDir(filepath.Dir(p)); err != nil {
			return wrapInternal(err, "create resource directory")
		}
	}
	return nil
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
