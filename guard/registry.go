package guard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/stratum-go/stratum/guard/internal/canon"
	"github.com/stratum-go/stratum/guard/internal/ledger"
)

// registry is a loaded registry.json plus the ledger it is consistent with.
type registry struct {
	ResourceID    string
	Policy        *policy
	Initial       string
	Checksum      string
	GraphVersion  int64
	WorkspaceRoot *string
	// CurrentState is derived from the ledger on every load; the file's
	// value is only a cache.
	CurrentState string
	// BundleID is kept as found (policy bundles are not implemented here,
	// but a rewrite must not drop it).
	BundleID any
	Log      *ledger.Log

	// Sealed: registry.json carried a seal (seal.go) when loaded. An
	// unsealed registry (written by an older Stratum or another engine) is
	// checked the reference's way and sealed by its next write.
	Sealed bool
	// sealErr is set when the seal does not match the record; tamperCheck
	// reports it.
	sealErr error
	// RegisteredChecksum is the policy checksum at registration, "" when
	// unknown (a registry sealed after the fact).
	RegisteredChecksum string
	// pending is the digest of a ledger entry being appended (a write in
	// flight, or one cut short), pendingPolicy the policy that entry
	// installs.
	pending       string
	pendingPolicy *policyChange
	// notes say what the load found and tolerated (an interrupted write).
	notes []string
	// tornExplained: the ledger's incomplete last line is that of the
	// write registry.json names as pending.
	tornExplained bool
	// markerSealed: engine.json records that this registry is sealed.
	markerSealed bool
	markerSince  string
}

// policyChange is a policy a graph_version entry installs.
type policyChange struct {
	policy   *policy
	checksum string
}

// errAbsent: no readable registry.
var errAbsent = errors.New("registry absent")

func (g *Guard) notFound(id string) error {
	return errorf(CodeNotFound, "no guard registered for resource %q", id)
}

// rawPolicy reads the four policy fields of a registry object (the record
// itself, or its pending_policy).
func rawPolicy(raw map[string]any, initial string) (*policy, error) {
	in := PolicyInput{}
	var ok bool
	if in.Graph, ok = raw["graph"].(map[string]any); !ok {
		return nil, errors.New("graph is not an object")
	}
	if in.EdgePredicates, ok = raw["edge_predicates"].(map[string]any); !ok {
		return nil, errors.New("edge_predicates is not an object")
	}
	in.Terminal = raw["terminal"]
	if s, present := raw["stakes"]; present && s != nil {
		if _, ok = s.(map[string]any); !ok {
			return nil, errors.New("stakes is not an object")
		}
		in.Stakes = s
	}
	return validatePolicy(in, validation{initial: initial, stored: true})
}

func rawCount(v any) (int, bool) {
	f, ok := v.(float64)
	if !ok || f != float64(int64(f)) || f < 0 || f > canon.MaxSafeInteger {
		return 0, false
	}
	return int(f), true
}

// loadRegistry reads registry.json and the ledger of dir and reconciles
// them. A missing or unparseable registry.json is errAbsent; a ledger that
// exists without a registry is tampering (someone removed the policy).
func (g *Guard) loadRegistry(id, dir string) (*registry, error) {
	data, err := os.ReadFile(filepath.Join(dir, registryFile))
	var raw map[string]any
	if err != nil || json.Unmarshal(data, &raw) != nil || raw == nil {
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, wrapInternal(err, "read registry")
		}
		if fi, serr := os.Stat(filepath.Join(dir, ledgerFile)); serr == nil && fi.Size() > 0 {
			return nil, errorf(CodeTampered, "resource %q has a ledger but no readable %s", id, registryFile)
		}
		return nil, errAbsent
	}
	r := &registry{}
	malformed := func(format string, args ...any) error {
		return errorf(CodeTampered, "%s of resource %q is malformed: %s", registryFile, id, fmt.Sprintf(format, args...))
	}
	var ok bool
	if r.ResourceID, ok = raw["resource_id"].(string); !ok {
		return nil, malformed("resource_id missing")
	}
	if r.ResourceID != id {
		return nil, errorf(CodeResourceIDMismatch, "directory %s holds resource %q, not %q", DirName(id), r.ResourceID, id)
	}
	for _, k := range []string{"graph", "edge_predicates", "initial"} {
		if _, ok := raw[k]; !ok {
			return nil, malformed("%s missing", k)
		}
	}
	if r.Initial, ok = raw["initial"].(string); !ok {
		return nil, malformed("initial is not a string")
	}
	if r.Policy, err = rawPolicy(raw, r.Initial); err != nil {
		return nil, malformed("%v", err)
	}
	if c, present := raw["checksum"]; present {
		if r.Checksum, ok = c.(string); !ok {
			return nil, malformed("checksum is not a string")
		}
	}
	r.GraphVersion = 1
	if v, present := raw["graph_version"]; present {
		n, isCount := rawCount(v)
		if !isCount || n < 1 {
			return nil, malformed("graph_version is not a positive integer")
		}
		r.GraphVersion = int64(n)
	}
	if w, present := raw["workspace_root"]; present && w != nil {
		s, isStr := w.(string)
		if !isStr {
			return nil, malformed("workspace_root is not a string or null")
		}
		r.WorkspaceRoot = &s
	}
	r.BundleID = raw["bundle_id"]
	m := readMarker(dir)
	r.markerSealed, r.markerSince = m.Owner == EngineOwner && m.RegistrySeal != 0, m.Since
	var recorded ledgerRecord
	if _, present := raw["seal_version"]; present {
		if recorded, err = r.readSeal(raw); err != nil {
			return nil, malformed("%v", err)
		}
	} else if r.markerSealed {
		return nil, errorf(CodeTampered, "resource %q: %s has no seal, but %s records that this engine sealed it: the seal was removed", id, registryFile, markerFile)
	}
	log, err := ledger.Read(filepath.Join(dir, ledgerFile))
	if err != nil {
		if errors.Is(err, ledger.ErrCorrupt) {
			return nil, &Error{Code: CodeLedgerCorrupt, Message: fmt.Sprintf("resource %q: %v (tampering)", id, err), Err: err}
		}
		return nil, wrapInternal(err, "resource %q", id)
	}
	r.Log = log
	if r.Sealed {
		if err := r.reconcile(recorded); err != nil {
			if r.sealErr != nil {
				// The record itself was edited: its head cannot be trusted
				// either, so say that first.
				return nil, r.sealErr
			}
			return nil, err
		}
	}
	r.CurrentState = log.CurrentState(r.Initial)
	return r, nil
}

// load is loadRegistry with "absent" reported as guard_not_found.
func (g *Guard) load(id, dir string) (*registry, error) {
	r, err := g.loadRegistry(id, dir)
	if errors.Is(err, errAbsent) {
		return nil, g.notFound(id)
	}
	return r, err
}

// loadForRead is load for operations that take no lock (history,
// authorize, verify). A writer between its registry and ledger writes can
// make the two files disagree for a moment, so a disagreement is looked at
// again under the resource lock before it is reported.
func (g *Guard) loadForRead(ctx context.Context, id string) (*registry, error) {
	dir := g.dir(id)
	r, err := g.load(id, dir)
	if c := CodeOf(err); c != CodeTampered && c != CodeLedgerCorrupt {
		return r, err
	}
	h, lerr := g.lock(ctx, id, dir)
	if lerr != nil {
		return nil, err
	}
	defer h.unlock()
	return g.load(id, dir)
}

// tamperCheck recomputes what guards the policy: the seal over the whole
// record (workspace_root and initial included), the reference's policy
// checksum, and that the policy is the one the ledger last recorded (a
// graph_version entry's checksum, else the checksum at registration).
func (r *registry) tamperCheck() error {
	if r.sealErr != nil {
		return r.sealErr
	}
	sum, err := r.Policy.checksum()
	if err != nil || sum != r.Checksum {
		return errorf(CodeTampered, "resource %q: stored checksum %s does not match its policy (recomputed %s)", r.ResourceID, short(r.Checksum), short(sum))
	}
	if want, where, ok := r.policyOnRecord(); ok && want != r.Checksum {
		return errorf(CodeTampered, "resource %q: the policy in %s (%s) is not the one %s recorded (%s): it was replaced without a migration", r.ResourceID, registryFile, short(r.Checksum), where, short(want))
	}
	return nil
}

// policyOnRecord is the checksum of the policy that should be in force:
// the one the last graph_version entry recorded (as its payload_digest),
// else, if no policy change happened, the one registered. ok is false when
// it is not known (a graph_version entry written before checksums were
// recorded, or an unsealed registry).
func (r *registry) policyOnRecord() (sum, where string, ok bool) {
	for i := len(r.Log.Entries) - 1; i >= 0; i-- {
		e := &r.Log.Entries[i]
		if e.Outcome != ledger.OutcomeGraphVersion {
			continue
		}
		if e.PayloadDigest == nil {
			return "", "", false
		}
		return *e.PayloadDigest, fmt.Sprintf("ledger entry %d", i+1), true
	}
	if r.RegisteredChecksum != "" {
		return r.RegisteredChecksum, "registration", true
	}
	return "", "", false
}

func short(d string) string {
	if len(d) > 12 {
		return d[:12]
	}
	return d
}

// policyFields is the policy part of a registry record.
func policyFields(p *policy) map[string]any {
	return map[string]any{
		"graph":           p.Graph,
		"edge_predicates": p.EdgePredicates,
		"terminal":        p.Terminal,
		"stakes":          p.Stakes,
	}
}

// record is registry.json's content, sealed.
func (r *registry) record() (map[string]any, error) {
	m := policyFields(r.Policy)
	for k, v := range map[string]any{
		"resource_id":    r.ResourceID,
		"initial":        r.Initial,
		"checksum":       r.Checksum,
		"graph_version":  r.GraphVersion,
		"workspace_root": r.WorkspaceRoot,
		"current_state":  r.CurrentState,
	} {
		m[k] = v
	}
	if r.BundleID != nil {
		m["bundle_id"] = r.BundleID
	}
	if err := r.addSeal(m); err != nil {
		return nil, err
	}
	return m, nil
}

// save writes registry.json (pretty canonical, sealed, atomically). The
// first sealed write of a registry that was not sealed before also marks
// engine.json, after the registry (so that a failure in between leaves a
// sealed registry and an unmarked marker, which is consistent).
func (g *Guard) save(h *held, dir string, r *registry) error {
	m, err := r.record()
	if err != nil {
		return wrapInternal(err, "encode registry")
	}
	b, err := canon.MarshalIndent(m)
	if err != nil {
		return wrapInternal(err, "encode registry")
	}
	if err := h.fence(); err != nil {
		return err
	}
	if err := g.writeFile(opRegistry, filepath.Join(dir, registryFile), b); err != nil {
		return wrapInternal(err, "write registry")
	}
	r.Sealed, r.sealErr = true, nil
	if !r.markerSealed && g.writeMarker(h, dir, r.markerSince) == nil {
		r.markerSealed = true
	}
	return nil
}

// openExisting is the prologue of every mutation other than register:
// without creating anything, fail with guard_not_found unless the
// resource's registry exists, then lock, check ownership and load. Modes
// left loose by an older Stratum are tightened on the way: the directory
// before the lock is taken, the files under it.
func (g *Guard) openExisting(ctx context.Context, id string) (*held, *registry, string, error) {
	if err := validateResourceID(id); err != nil {
		return nil, nil, "", err
	}
	dir := g.dir(id)
	if _, err := os.Stat(filepath.Join(dir, registryFile)); err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			// Unreadable is not "not registered".
			return nil, nil, "", wrapInternal(err, "resource %q", id)
		}
		if fi, lerr := os.Stat(filepath.Join(dir, ledgerFile)); lerr == nil && fi.Size() > 0 {
			return nil, nil, "", errorf(CodeTampered, "resource %q has a ledger but no %s", id, registryFile)
		}
		return nil, nil, "", g.notFound(id)
	}
	tightenDir(dir)
	h, err := g.lock(ctx, id, dir)
	if err != nil {
		return nil, nil, "", err
	}
	if owner := markerOwner(dir); owner != "" && owner != EngineOwner {
		h.unlock()
		return nil, nil, "", checkOwner(dir)
	}
	tightenFiles(dir)
	r, err := g.load(id, dir)
	if err == nil {
		err = checkOwner(dir)
	}
	if err != nil {
		h.unlock()
		return nil, nil, "", err
	}
	return h, r, dir, nil
}

// blank reports a rationale's emptiness the way a person reads it.
func blank(s string) bool { return strings.TrimSpace(s) == "" }
