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
	"slices"
	"sync"
	"time"

	"github.com/gofrs/flock"

	"github.com/stratum-go/stratum/guard/internal/canon"
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

// Options configure a [Guard] (see [New]).
type Options struct {
	// Root is the store directory holding one directory per resource.
	// Use [RootFromEnv] for the standard location.
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
	// AllowedRoots are the directories a workspace_root must lie inside
	// (each given as an absolute or relative path; symlinks are resolved
	// when a root is checked). They are chosen by the person who starts
	// Stratum — the composition root passes the roots of its policy, e.g.
	// every --allow-root DIR — never by a caller of a guard operation.
	// Empty means the server's working directory (at New), unless it is
	// the filesystem root (then none is allowed). See
	// docs/guard.md, "The workspace jail".
	AllowedRoots []string
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
	// allowedRoots: see Options.AllowedRoots (absolute, cleaned).
	allowedRoots []string
	// fault, set by tests only, is consulted before every durable write
	// (files.go) and may make it fail: the fault-injection seam of the
	// guard's own file layer.
	fault func(op writeOp, path string) error
}

//go:embed guard-signers.allowed
var embeddedTrustRoot []byte

// New returns a [Guard] over [Options.Root]. Nothing is created on disk until a
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
	roots := opts.AllowedRoots
	if len(roots) == 0 {
		// Unreadable, or the filesystem root (which would jail nothing):
		// no root is allowed, and every workspace_root is refused with a
		// message that says how to allow one.
		if wd, err := os.Getwd(); err == nil && filepath.Dir(wd) != wd {
			roots = []string{wd}
		}
	}
	for _, r := range roots {
		abs, err := filepath.Abs(r)
		if err != nil {
			return nil, fmt.Errorf("guard: allowed root %q: %w", r, err)
		}
		g.allowedRoots = append(g.allowedRoots, filepath.Clean(abs))
	}
	return g, nil
}

// AllowedRoots returns the directories a workspace_root must lie inside
// ([Options.AllowedRoots], absolute).
func (g *Guard) AllowedRoots() []string { return slices.Clone(g.allowedRoots) }

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
// most the lock timeout. dir must exist. The lock file is 0600 inside the
// 0700 resource directory, so no other local user can open it, let alone
// hold it against the owner.
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
	fl := flock.New(path, flock.SetPermissions(fileMode))
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

// marker is engine.json: the engine that owns the resource and whether
// that engine has sealed its registry (registry.go). Once sealed, a
// registry.json without a seal is tampering, not a legacy file.
type marker struct {
	Owner        string `json:"owner"`
	Since        string `json:"since"`
	RegistrySeal int    `json:"registry_seal"`
}

// readMarker reads engine.json; the zero marker when missing or malformed.
func readMarker(dir string) marker {
	var m marker
	data, err := os.ReadFile(filepath.Join(dir, markerFile))
	if err != nil || json.Unmarshal(data, &m) != nil {
		return marker{}
	}
	return m
}

// markerOwner reads engine.json's owner; "" when missing or malformed.
func markerOwner(dir string) string { return readMarker(dir).Owner }

// writeMarker claims dir for this engine, recording that its registry is
// sealed (since keeps the time of the first claim).
func (g *Guard) writeMarker(h *held, dir, since string) error {
	if since == "" {
		since = g.now().UTC().Format("2006-01-02T15:04:05.000Z")
	}
	b, err := canon.Marshal(map[string]any{"owner": EngineOwner, "since": since, "registry_seal": sealVersion})
	if err != nil {
		return wrapInternal(err, "ownership marker")
	}
	if err := h.fence(); err != nil {
		return err
	}
	if err := g.writeFile(opMarker, filepath.Join(dir, markerFile), append(b, '\n')); err != nil {
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
