package guard

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gofrs/flock"

	"github.com/stratum-go/stratum/guard/internal/canon"
	"github.com/stratum-go/stratum/guard/internal/ledger"
	"github.com/stratum-go/stratum/internal/atomicfile"
	"github.com/stratum-go/stratum/judge"
)

// Environment variables the guard reads from the server environment.
const (
	EnvGuardsDir          = "STRATUM_GUARDS_DIR"
	EnvHome               = "STRATUM_HOME"
	EnvAllowCommands      = "STRATUM_GUARD_ALLOW_COMMANDS"
	EnvCommandTimeout     = "STRATUM_GUARD_CMD_TIMEOUT_S"
	EnvUpgradeDescriptors = "STRATUM_GUARD_UPGRADE_DESCRIPTORS"
)

// Files of a resource directory.
const (
	registryFile = "registry.json"
	ledgerFile   = "ledger.jsonl"
	markerFile   = "engine.json"
	lockFile     = ".lock"
)

// EngineOwner is the owner this engine writes into engine.json. A resource
// owned by another engine (the TypeScript engine writes "ts") is never
// mutated here: the engines' locks cannot see each other.
const EngineOwner = "go"

// DefaultLockTimeout bounds how long an operation waits for a resource.
const DefaultLockTimeout = 10 * time.Second

// Options configure a Guard.
type Options struct {
	// Root is the store directory holding one directory per resource.
	// Use RootFromEnv for the standard location.
	Root string
	// Getenv reads the server environment (STRATUM_GUARD_ALLOW_COMMANDS,
	// STRATUM_GUARD_CMD_TIMEOUT_S, STRATUM_GUARD_UPGRADE_DESCRIPTORS);
	// nil means os.Getenv. It is consulted at each call.
	Getenv func(string) string
	// Judge evaluates verified/judged predicates. Nil means no judge: a
	// transition over such a predicate is refused, never applied.
	Judge judge.Judge
	// Now is the clock for ledger timestamps; nil means time.Now.
	Now func() time.Time
	// LockTimeout bounds the wait for a resource lock; zero means
	// DefaultLockTimeout.
	LockTimeout time.Duration
}

// Guard owns a store of guarded resources. It is safe for concurrent use,
// and several processes may share one store: every mutation holds the
// resource's lock file.
type Guard struct {
	root        string
	getenv      func(string) string
	judge       judge.Judge
	now         func() time.Time
	lockTimeout time.Duration
	// trust is the allowed-signers text (the embedded trust root outside
	// tests).
	trust []byte
	locks lockTable
}

//go:embed guard-signers.allowed
var embeddedTrustRoot []byte

// New returns a Guard over opts.Root. Nothing is created on disk until a
// resource is registered.
func New(opts Options) (*Guard, error) {
	if opts.Root == "" {
		return nil, errors.New("guard: Options.Root is required")
	}
	root, err := filepath.Abs(opts.Root)
	if err != nil {
		return nil, fmt.Errorf("guard: root: %w", err)
	}
	g := &Guard{
		root:        root,
		getenv:      opts.Getenv,
		judge:       opts.Judge,
		now:         opts.Now,
		lockTimeout: opts.LockTimeout,
		trust:       embeddedTrustRoot,
	}
	if g.getenv == nil {
		g.getenv = os.Getenv
	}
	if g.now == nil {
		g.now = time.Now
	}
	if g.lockTimeout <= 0 {
		g.lockTimeout = DefaultLockTimeout
	}
	g.locks.m = map[string]*lockEntry{}
	return g, nil
}

// Root returns the store directory.
func (g *Guard) Root() string { return g.root }

// RootFromEnv is the standard store location: $STRATUM_GUARDS_DIR, else
// $STRATUM_HOME/guards, else ~/.stratum/guards.
func RootFromEnv(getenv func(string) string) (string, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if d := getenv(EnvGuardsDir); d != "" {
		return filepath.Abs(d)
	}
	if h := getenv(EnvHome); h != "" {
		return filepath.Abs(filepath.Join(h, "guards"))
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("guard store: no STRATUM_GUARDS_DIR, STRATUM_HOME or home directory: %w", err)
	}
	return filepath.Join(home, ".stratum", "guards"), nil
}

// DirName is the directory name of a resource: the first 32 hex digits of
// sha256(resource id), so any id is safe on disk.
func DirName(resourceID string) string {
	sum := sha256.Sum256([]byte(resourceID))
	return hex.EncodeToString(sum[:])[:32]
}

func (g *Guard) dir(id string) string { return filepath.Join(g.root, DirName(id)) }

func (g *Guard) allowCommands() bool { return g.getenv(EnvAllowCommands) == "1" }

// --- locking ---------------------------------------------------------------

// lockTable gives each resource id an in-process FIFO queue (a buffered
// channel: blocked senders are served in arrival order) in front of the
// cross-process file lock.
type lockTable struct {
	mu sync.Mutex
	m  map[string]*lockEntry
}

type lockEntry struct {
	sem  chan struct{}
	refs int
}

func (t *lockTable) get(id string) *lockEntry {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.m[id]
	if e == nil {
		e = &lockEntry{sem: make(chan struct{}, 1)}
		t.m[id] = e
	}
	e.refs++
	return e
}

func (t *lockTable) put(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.m[id]; e != nil {
		if e.refs--; e.refs == 0 {
			delete(t.m, id)
		}
	}
}

// held is a held resource lock.
type held struct {
	g     *Guard
	id    string
	entry *lockEntry
	path  string
	fl    *flock.Flock
}

// lock takes the resource's in-process queue and then its lock file (a
// fresh flock per acquisition), backing off from 10 ms to 250 ms, for at
// most the lock timeout. dir must exist.
func (g *Guard) lock(ctx context.Context, id, dir string) (*held, error) {
	ctx, cancel := context.WithTimeout(ctx, g.lockTimeout)
	defer cancel()
	entry := g.locks.get(id)
	select {
	case entry.sem <- struct{}{}:
	case <-ctx.Done():
		g.locks.put(id)
		return nil, g.lockErr(ctx)
	}
	release := func() {
		<-entry.sem
		g.locks.put(id)
	}
	path := filepath.Join(dir, lockFile)
	fl := flock.New(path, flock.SetPermissions(0o644))
	delay := 10 * time.Millisecond
	for {
		ok, err := fl.TryLock()
		if err != nil {
			release()
			return nil, wrapInternal(err, "lock %s", path)
		}
		if ok {
			return &held{g: g, id: id, entry: entry, path: path, fl: fl}, nil
		}
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			release()
			return nil, g.lockErr(ctx)
		}
		delay = min(delay*2, 250*time.Millisecond)
	}
}

func (g *Guard) lockErr(ctx context.Context) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return errorf(CodeLockTimeout, "resource lock not acquired within %s (another writer holds it)", g.lockTimeout)
	}
	return &Error{Code: CodeInternal, Message: "cancelled while waiting for the resource lock", Err: ctx.Err()}
}

// fence confirms, immediately before a write, that the lock file we hold
// is still the one at the path (nobody removed or replaced it).
func (h *held) fence() error {
	mine, err := h.fl.Stat()
	if err != nil {
		return &Error{Code: CodeLockLost, Message: "lock file handle unusable: " + err.Error(), Err: err}
	}
	cur, err := os.Stat(h.path)
	if err != nil || !os.SameFile(mine, cur) {
		return errorf(CodeLockLost, "lock file %s was removed or replaced while held; nothing written", h.path)
	}
	return nil
}

func (h *held) unlock() {
	h.fl.Unlock()
	<-h.entry.sem
	h.g.locks.put(h.id)
}

// --- ownership marker ---------------------------------------------------------

// markerOwner reads engine.json's owner; "" when missing or malformed.
func markerOwner(dir string) string {
	data, err := os.ReadFile(filepath.Join(dir, markerFile))
	if err != nil {
		return ""
	}
	var m struct {
		Owner string `json:"owner"`
	}
	if json.Unmarshal(data, &m) != nil {
		return ""
	}
	return m.Owner
}

func (g *Guard) writeMarker(h *held, dir string) error {
	b, err := canon.Marshal(map[string]any{"owner": EngineOwner, "since": g.now().UTC().Format("2006-01-02T15:04:05.000Z")})
	if err != nil {
		return wrapInternal(err, "ownership marker")
	}
	if err := h.fence(); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, markerFile), append(b, '\n'), 0o600); err != nil {
		return wrapInternal(err, "write ownership marker")
	}
	return nil
}

// checkOwner is the ownership rule for mutating an existing resource: the
// marker must name this engine.
func checkOwner(dir string) error {
	switch owner := markerOwner(dir); owner {
	case EngineOwner:
		return nil
	case "":
		return errorf(CodeEngineOwned, "resource directory has no %s marker for engine %q; another engine wrote it", markerFile, EngineOwner)
	default:
		return errorf(CodeEngineOwned, "resource is owned by engine %q, not %q", owner, EngineOwner)
	}
}

// --- registry ---------------------------------------------------------------

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
}

// errAbsent: no readable registry.
var errAbsent = errors.New("registry absent")

func (g *Guard) notFound(id string) error {
	return errorf(CodeNotFound, "no guard registered for resource %q", id)
}

// loadRegistry reads registry.json and the ledger of dir. A missing or
// unparseable registry.json is errAbsent; a ledger that exists without a
// registry is tampering (someone removed the policy).
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
	in := PolicyInput{}
	if in.Graph, ok = raw["graph"].(map[string]any); !ok {
		return nil, malformed("graph is not an object")
	}
	if in.EdgePredicates, ok = raw["edge_predicates"].(map[string]any); !ok {
		return nil, malformed("edge_predicates is not an object")
	}
	in.Terminal = raw["terminal"]
	if s, present := raw["stakes"]; present && s != nil {
		if _, ok = s.(map[string]any); !ok {
			return nil, malformed("stakes is not an object")
		}
		in.Stakes = s
	}
	p, err := validatePolicy(in, validation{initial: r.Initial, stored: true})
	if err != nil {
		return nil, malformed("%v", err)
	}
	r.Policy = p
	if c, present := raw["checksum"]; present {
		if r.Checksum, ok = c.(string); !ok {
			return nil, malformed("checksum is not a string")
		}
	}
	r.GraphVersion = 1
	if v, present := raw["graph_version"]; present {
		f, isNum := v.(float64)
		if !isNum || f != float64(int64(f)) || f < 1 {
			return nil, malformed("graph_version is not a positive integer")
		}
		r.GraphVersion = int64(f)
	}
	if w, present := raw["workspace_root"]; present && w != nil {
		s, isStr := w.(string)
		if !isStr {
			return nil, malformed("workspace_root is not a string or null")
		}
		r.WorkspaceRoot = &s
	}
	r.BundleID = raw["bundle_id"]
	log, err := ledger.Read(filepath.Join(dir, ledgerFile))
	if err != nil {
		if errors.Is(err, ledger.ErrCorrupt) {
			return nil, &Error{Code: CodeLedgerCorrupt, Message: fmt.Sprintf("resource %q: %v (interior tampering)", id, err), Err: err}
		}
		return nil, wrapInternal(err, "resource %q", id)
	}
	r.Log = log
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

// tamperCheck recomputes the policy checksum.
func (r *registry) tamperCheck() error {
	sum, err := r.Policy.checksum()
	if err != nil || sum != r.Checksum {
		return errorf(CodeTampered, "resource %q: stored checksum %s does not match its policy (recomputed %s)", r.ResourceID, short(r.Checksum), short(sum))
	}
	return nil
}

func short(d string) string {
	if len(d) > 12 {
		return d[:12]
	}
	return d
}

// save writes registry.json (pretty canonical, atomically).
func (g *Guard) save(h *held, dir string, r *registry) error {
	m := map[string]any{
		"resource_id":     r.ResourceID,
		"graph":           r.Policy.Graph,
		"edge_predicates": r.Policy.EdgePredicates,
		"initial":         r.Initial,
		"terminal":        r.Policy.Terminal,
		"stakes":          r.Policy.Stakes,
		"checksum":        r.Checksum,
		"graph_version":   r.GraphVersion,
		"workspace_root":  r.WorkspaceRoot,
		"current_state":   r.CurrentState,
	}
	if r.BundleID != nil {
		m["bundle_id"] = r.BundleID
	}
	b, err := canon.MarshalIndent(m)
	if err != nil {
		return wrapInternal(err, "encode registry")
	}
	if err := h.fence(); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, registryFile), b, 0o600); err != nil {
		return wrapInternal(err, "write registry")
	}
	return nil
}

// appendEntry is the commit point of every mutation: repair a torn tail,
// fence, append one fsynced line.
func (g *Guard) appendEntry(h *held, dir string, r *registry, e *ledger.Entry) error {
	path := filepath.Join(dir, ledgerFile)
	if err := h.fence(); err != nil {
		return err
	}
	if err := ledger.Repair(path, r.Log, g.now()); err != nil {
		return wrapInternal(err, "resource %q", r.ResourceID)
	}
	e.TsMs = g.now().UnixMilli()
	if err := ledger.Append(path, r.Log, e); err != nil {
		if errors.Is(err, canon.ErrNotCanonical) {
			return errorf(CodeInvalidArgument, "ledger entry has no canonical JSON form: %v", err)
		}
		return wrapInternal(err, "resource %q", r.ResourceID)
	}
	return nil
}

// openExisting is the prologue of every mutation other than register:
// without creating anything, fail with guard_not_found unless the
// resource's registry exists, then lock, check ownership and load.
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
	h, err := g.lock(ctx, id, dir)
	if err != nil {
		return nil, nil, "", err
	}
	if owner := markerOwner(dir); owner != "" && owner != EngineOwner {
		h.unlock()
		return nil, nil, "", checkOwner(dir)
	}
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

// trimmed reports a rationale's emptiness the way a person reads it.
func blank(s string) bool { return strings.TrimSpace(s) == "" }
