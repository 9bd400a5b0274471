package engine

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/stratum-go/stratum/ir"
	"github.com/stratum-go/stratum/store"
)

// Engine runs flows over a Store. It is safe for concurrent use by many
// goroutines, and several Engines (in several processes) may share one
// store: every change happens inside the store's per-run locked Update, so
// concurrent calls on one run are serialised and each sees the previous
// one's result.
type Engine struct {
	store store.Store
	now   func() time.Time
	newID func() string
	opts  Options

	mu    sync.Mutex
	plans map[string]*compiled // by revision digest
	// planBytes is the estimated heap of the cached plans (storePlan).
	planBytes int
	cache     map[string]*cachedRun
	// cacheBytes is the estimated heap of the cached states (remember).
	cacheBytes int
	// blobs caches internal events' payloads (immutable) by run and seq.
	blobs blobCache

	// fanouts tracks engine-dispatched fanouts being driven by this
	// process, by "runID\x00stepID".
	fanoutMu sync.Mutex
	fanouts  map[string]bool
	// worktrees holds the base names of the item worktrees in use.
	worktrees map[string]bool
	// worktreeAnchors maps the workdir of each item worktree in use to
	// its anchor (see [Isolated]).
	worktreeAnchors map[string]string
	wg              sync.WaitGroup
	// running holds the cancel functions of the effects this process
	// runs, by run id and effect token (several for one token when its
	// reports' checks evaluate at once).
	effectMu sync.Mutex
	running  map[string]map[string][]*context.CancelCauseFunc
	bgCtx    context.Context
	bgCancel context.CancelFunc

	// leases are the run leases this process holds (lease.go).
	leases leaseHolds

	// verifyWrites (tests only) re-reads every written run from the store
	// and compares it with the state in memory.
	verifyWrites bool
	// checkHook (tests only) is called as the checks of a reported result
	// (its contract, ensures and iterate condition) or a set step's
	// ensures start to evaluate, with where they run (checksInline...).
	checkHook func(ctx context.Context, mode string)
}

// cachedRun is the decoded state of a run as last written by this process,
// valid while the stored document is byte-identical to doc.
type cachedRun struct {
	doc  []byte
	st   *runState
	size int // runHeapEstimate
}

// The compiled-plan cache is bounded by count and by bytes: a plan's heap
// depends on its spec's shape and grows as its runs use it (planheap.go),
// so a count alone would let a few large specs hold gigabytes
// (docs/engine.md, "Cost").
const maxPlans = 64

// maxPlanBytes is the cache's budget (a variable for tests).
var maxPlanBytes = 256 << 20

// maxCachedRuns and maxCachedRunBytes bound the decoded-state cache, by
// count and by the estimate of runHeapEstimate: a run's decoded state holds
// its fanouts' every item, which its document does not (a variable for
// tests).
const maxCachedRuns = 256

var maxCachedRunBytes = 256 << 20

// New returns an Engine over st.
func New(st store.Store, opts Options) *Engine {
	e := &Engine{store: st, opts: opts, plans: map[string]*compiled{}, cache: map[string]*cachedRun{}, fanouts: map[string]bool{},
		worktrees: map[string]bool{}, running: map[string]map[string][]*context.CancelCauseFunc{}}
	e.now = opts.Now
	if e.now == nil {
		e.now = time.Now
	}
	e.newID = opts.NewID
	if e.newID == nil {
		e.newID = randomUUID
	}
	e.bgCtx, e.bgCancel = context.WithCancel(context.Background())
	e.leases.init(opts)
	return e
}

// Close stops background work (engine-dispatched fanouts started by this
// Engine) and waits for it to finish. Work in progress is abandoned at its
// next boundary; everything acknowledged stays durable.
func (e *Engine) Close() {
	e.bgCancel()
	e.wg.Wait()
	e.leases.releaseAll()
}

// Wait blocks until background work started by this Engine has finished
// or ctx ends.
func (e *Engine) Wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() { e.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// randomUUID returns a random (version 4) UUID from crypto/rand.
func randomUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand panics on an unusable source)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// compile builds (or fetches) the compiled plan for a spec source.
func (e *Engine) compileSource(src []byte) (*compiled, error) {
	p, doc, diags := ir.BuildDocument(src)
	if len(diags) > 0 {
		return nil, &Error{Kind: ErrInvalidSpec, Message: "spec validation failed: " + diags.Error(), Diagnostics: diags}
	}
	digest, err := digestOf(doc)
	if err != nil {
		return nil, &Error{Kind: ErrInvalidSpec, Message: "spec validation failed: " + err.Error(), Err: err}
	}
	e.mu.Lock()
	c, ok := e.plans[digest]
	e.mu.Unlock()
	if ok {
		return c, nil
	}
	specJSON, err := canonicalOrdered(doc)
	if err != nil {
		return nil, &Error{Kind: ErrInvalidSpec, Message: "spec validation failed: " + err.Error(), Err: err}
	}
	// Made without the engine's lock, which every run's transitions take.
	c = newCompiled(p, digest, specJSON)
	e.mu.Lock()
	defer e.mu.Unlock()
	if old, ok := e.plans[digest]; ok {
		return old, nil // compiled meanwhile by another call
	}
	e.storePlan(c)
	return c, nil
}

// storePlan caches c, evicting others (in no particular order) until it
// fits both bounds; a plan larger than the whole budget is used but not
// kept.
func (e *Engine) storePlan(c *compiled) {
	size := c.estimate
	if size > maxPlanBytes {
		return
	}
	for k, old := range e.plans {
		if len(e.plans) < maxPlans && e.planBytes+size <= maxPlanBytes {
			break
		}
		delete(e.plans, k)
		e.planBytes -= old.estimate
	}
	e.plans[c.digest] = c
	e.planBytes += size
}

// planFor returns the compiled plan of a persisted run, rebuilding it
// from the persisted spec snapshot when this process has not seen it.
func (e *Engine) planFor(st *runState) (*compiled, error) {
	if c := st.plan; c != nil {
		// Used once: a state kept in the state cache must not hold a plan
		// past the plan cache's budget.
		st.plan = nil
		if c.digest == st.RevisionDigest {
			return c, nil
		}
	}
	e.mu.Lock()
	c, ok := e.plans[st.RevisionDigest]
	e.mu.Unlock()
	if ok {
		return c, nil
	}
	if st.Spec == nil {
		return nil, fmt.Errorf("%w: run %s: the spec snapshot was not loaded", ErrCorrupt, st.ID)
	}
	return e.compileSnapshot(st.ID, st.RevisionDigest, st.Spec)
}

// compileSnapshot compiles a run's spec snapshot and caches the plan.
func (e *Engine) compileSnapshot(runID, digest string, spec []byte) (*compiled, error) {
	// Escaped again on reading: a snapshot written before snapshots were
	// escaped (yamlSafeJSON) loads, with the text it was written with.
	p, diags := ir.Build(yamlSafeJSON(spec))
	if len(diags) > 0 {
		return nil, fmt.Errorf("%w: run %s: persisted run contains an invalid spec: %v", ErrCorrupt, runID, diags)
	}
	c := newCompiled(p, digest, spec)
	e.mu.Lock()
	if old, ok := e.plans[digest]; ok {
		c = old
	} else {
		e.storePlan(c)
	}
	e.mu.Unlock()
	return c, nil
}

// checkState verifies that a decoded run fits its plan (checkStateSteps),
// finding steps through the plan's index: every load checks.
func (c *compiled) checkState(st *runState) error {
	o := c.outline()
	var fo *ir.FlowOutline
	f := c.plan.Flow(st.FlowName)
	if f != nil {
		fo = o.Flow(f.Name)
	}
	return checkStateSteps(o, fo, st, func(id string) (ir.StepOutline, bool) {
		if s := f.Step(id); s != nil {
			return fo.Steps[s.Index], true // the outline keeps the plan's order
		}
		return ir.StepOutline{}, false
	})
}

// canonicalOrdered is the ordered compact JSON of a value, as a run's
// spec snapshot: it is read back through the spec loader, which reads JSON
// as YAML, so the characters YAML refuses raw or reads as line breaks are
// written as \u escapes (see yamlSafeJSON).
func canonicalOrdered(v any) ([]byte, error) {
	b, err := Value{Data: v, Present: true}.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return yamlSafeJSON(b), nil
}

// yamlSafeJSON is JSON text with every character that YAML refuses raw
// (DEL, the C1 controls, U+FFFE, U+FFFF) or reads as a line break or a
// byte order mark (NEL, U+2028, U+2029, U+FEFF) written as a \u escape,
// which JSON and YAML both read back as that character. Outside strings
// JSON text is ASCII without DEL, so every such character is inside a
// string, where an escape means the same. b is returned as it is when it
// has none.
func yamlSafeJSON(b []byte) []byte {
	var out []byte
	done := 0
	for i := 0; i < len(b); {
		r, size := rune(b[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRune(b[i:])
		}
		if yamlUnsafe(r) {
			out = append(out, b[done:i]...)
			out = fmt.Appendf(out, `\u%04x`, r)
			done = i + size
		}
		i += size
	}
	if out == nil {
		return b
	}
	return append(out, b[done:]...)
}

func yamlUnsafe(r rune) bool {
	switch {
	case r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r == 0x2028, r == 0x2029, r == 0xfeff, r == 0xfffe, r == 0xffff:
		return true
	}
	return false
}

// decode returns the full decoded state of a snapshot (under the run
// lock), from the cache when the document is the one this process last
// wrote. The returned state is owned by the caller (the cache entry is
// removed until the caller stores a new one), so a failed transition can
// never leave a mutated cached state behind.
func (e *Engine) decode(ctx context.Context, snap *store.Snapshot) (st *runState, cached bool, err error) {
	e.mu.Lock()
	c, ok := e.cache[snap.RunID]
	if ok {
		delete(e.cache, snap.RunID)
		e.cacheBytes -= c.size
	}
	e.mu.Unlock()
	if ok && string(c.doc) == string(snap.State) {
		return c.st, true, nil
	}
	st, err = e.decodeRun(ctx, snap)
	return st, false, err
}

func (e *Engine) remember(id string, doc []byte, st *runState) {
	size := runHeapEstimate(doc, st)
	e.mu.Lock()
	defer e.mu.Unlock()
	if old, ok := e.cache[id]; ok {
		delete(e.cache, id)
		e.cacheBytes -= old.size
	}
	if size > maxCachedRunBytes {
		return // decoded again at its next transition
	}
	for k, old := range e.cache {
		if len(e.cache) < maxCachedRuns && e.cacheBytes+size <= maxCachedRunBytes {
			break
		}
		delete(e.cache, k)
		e.cacheBytes -= old.size
	}
	e.cache[id] = &cachedRun{doc: doc, st: st, size: size}
	e.cacheBytes += size
}

// load reads a run without the lock (a consistent acknowledged snapshot):
// the state document and its cold index (finished steps load when read).
// The returned state must not be cached.
func (e *Engine) load(ctx context.Context, runID string) (*runState, *compiled, store.Head, error) {
	if err := store.ValidateRunID(runID); err != nil {
		return nil, nil, store.Head{}, newErr(ErrRunNotFound, runID, "run %q not found: %v", runID, err)
	}
	snap, err := e.store.Load(ctx, runID)
	if err != nil {
		return nil, nil, store.Head{}, mapStoreErr(runID, err)
	}
	st, err := e.decodeRun(ctx, snap)
	if err != nil {
		return nil, nil, store.Head{}, mapStoreErr(runID, err)
	}
	c, err := e.planFor(st)
	if err == nil {
		err = c.checkState(st)
	}
	if err != nil {
		return nil, nil, store.Head{}, mapStoreErr(runID, err)
	}
	return st, c, snap.Head, nil
}

// mapStoreErr turns store errors into engine errors.
func mapStoreErr(runID string, err error) error {
	var ee *Error
	if errors.As(err, &ee) {
		return err
	}
	switch {
	case errors.Is(err, store.ErrRunNotFound), errors.Is(err, store.ErrInvalidRunID):
		return &Error{Kind: ErrRunNotFound, RunID: runID, Message: fmt.Sprintf("run %q not found", runID), Err: err}
	case errors.Is(err, store.ErrLocked):
		e := &Error{Kind: ErrRunLocked, RunID: runID, Message: fmt.Sprintf("run %s is locked by another process; retry shortly", runID), Err: err}
		var le *store.LockedError
		if errors.As(err, &le) {
			e.HolderPID = le.PID
		}
		return e
	case errors.Is(err, store.ErrCorrupt), errors.Is(err, ErrCorrupt):
		return &Error{Kind: ErrCorrupt, RunID: runID, Message: fmt.Sprintf("run %s is corrupt: %v", runID, err), Err: err}
	}
	return err
}

// mutate runs fn as one transition (see transition), then the effects
// that transition reserved, each outside the run's lock and settled in a
// transition of its own, until no effect is pending. The txn returned is
// the first transition's; a result it set is replaced by the run's state
// after the last settle (keeping what only the first call reports: the
// revision digest, the checkpoint reverted to).
func (e *Engine) mutate(ctx context.Context, runID string, fn func(t *txn) error) (*txn, error) {
	t, err := e.transition(ctx, runID, fn)
	if err != nil {
		return t, err
	}
	if len(t.effects) > 0 {
		last, err := e.runEffects(ctx, runID, t.effects)
		if err != nil {
			return nil, err
		}
		t.result = laterState(t.result, last)
	}
	if t.known != nil {
		t.result = t.result.onlyNew(t.known)
	}
	return t, nil
}

// laterState is the later of two states of one call, keeping the first's
// call-specific fields.
func laterState(first, last *Response) *Response {
	if first == nil || last == nil {
		return first
	}
	r := *last
	r.RevisionDigest, r.RevertedTo = first.RevisionDigest, first.RevertedTo
	return &r
}

// transition runs fn as one atomic, durable transition of a run: under
// the store's run lock it loads the state, lets fn change it and record
// events, then writes both. When fn fails nothing is written. The result
// is whatever fn returned, available only once the change is durable. fn
// decides only: it never runs a command, a judge or an agent (those are
// reserved as effects and run by mutate after the transition). Work a
// decision needs but that must not hold the lock (a judge's verdict, the
// checks of a reported result) stops it with nothing written (needOutside);
// the work is then done with the lock free and the transition runs again
// with its outcome (one round per piece of work reached).
func (e *Engine) transition(ctx context.Context, runID string, fn func(t *txn) error) (*txn, error) {
	var outside map[outsideKey]any
	var now time.Time // zero: the attempt reads the clock
	for {
		t, err := e.transitionOnce(ctx, runID, fn, outside, now)
		var no *needOutside
		if !errors.As(err, &no) {
			return t, err
		}
		now = time.Time{}
		if no.sameTime {
			now = no.at
		}
		if _, done := outside[no.key]; done {
			return nil, fmt.Errorf("run %s: internal error: the outcome of the work done outside the lock for %s was not used", runID, no.key.step)
		}
		if outside == nil {
			outside = map[outsideKey]any{}
		}
		out := no.work(ctx)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		outside[no.key] = out
	}
}

// transitionOnce is one attempt of transition with the outcomes of the
// work done outside the lock so far; now, when not zero, is the time the
// attempt keeps instead of reading the clock.
func (e *Engine) transitionOnce(ctx context.Context, runID string, fn func(t *txn) error, outside map[outsideKey]any, now time.Time) (*txn, error) {
	if err := store.ValidateRunID(runID); err != nil {
		return nil, newErr(ErrRunNotFound, runID, "run %q not found: %v", runID, err)
	}
	var t *txn
	var doc []byte
	head, err := e.store.Update(ctx, runID, func(cur *store.Snapshot) (*store.Change, error) {
		st, cached, err := e.decode(ctx, cur)
		if err != nil {
			return nil, err
		}
		c, err := e.planFor(st)
		if err == nil && !cached { // a cached state is one this process wrote
			err = c.checkState(st)
		}
		if err != nil {
			return nil, err
		}
		if now.IsZero() {
			t = newTxn(ctx, e, st, c)
		} else {
			t = &txn{ctx: ctx, e: e, st: st, c: c, now: now}
		}
		t.headSeq, t.lease = cur.Head.Seq, cur.Lease
		t.outside, t.deferrable = outside, true
		if err := decideWith(fn, t); err != nil {
			return nil, err
		}
		if len(t.events) == 0 { // every state change records an event
			doc = cur.State
			return nil, nil
		}
		st.UpdatedAt = t.now
		doc, err = t.encode()
		if err != nil {
			return nil, err
		}
		sum, err := t.summaryJSON()
		if err != nil {
			return nil, err
		}
		return &store.Change{State: doc, Events: t.events, Summary: sum}, nil
	})
	if err != nil {
		return nil, mapStoreErr(runID, err)
	}
	if e.verifyWrites {
		if err := e.checkPersisted(ctx, runID, head, t.st); err != nil {
			return nil, err
		}
	}
	e.remember(runID, doc, t.st)
	if t.engineWork {
		e.kickFanouts(runID)
	}
	return t, nil
}

// fanoutsText is every fanout's array and items among steps, in full.
func fanoutsText(prefix string, steps map[string]*stepState) string {
	ids := make([]string, 0, len(steps))
	for id := range steps {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var b strings.Builder
	for _, id := range ids {
		ss := steps[id]
		if ss == nil || ss.coldSeq != 0 {
			continue
		}
		if ss.Fanout != nil {
			over, _ := json.Marshal(ss.Fanout.Over)
			items, _ := json.Marshal(ss.Fanout.Items)
			fmt.Fprintf(&b, "%s%s: over %s items %s\n", prefix, id, over, items)
		}
		if ss.Sub != nil {
			b.WriteString(fanoutsText(prefix+id+"/", ss.Sub.Steps))
		}
	}
	return b.String()
}

// decideWith runs a transition's decision. A needOutside raised from deep
// inside the decision (txn.judge, txn.reportChecks) becomes its error,
// with the transition's time: the state it leaves half changed is
// discarded with the transition.
func decideWith(fn func(t *txn) error, t *txn) (err error) {
	defer func() {
		if r := recover(); r != nil {
			switch x := r.(type) {
			case *needOutside:
				x.at = t.now
				err = x
			case *loadError:
				err = x.err
			default:
				panic(r)
			}
		}
	}()
	return fn(t)
}

// checkPersisted compares a run as a fresh process would read it with the
// state this process holds (a test-only invariant check: a finished step
// changed in a transition that wrote nothing would be caught here).
func (e *Engine) checkPersisted(ctx context.Context, runID string, head store.Head, mem *runState) error {
	snap, err := e.store.Load(ctx, runID)
	if err != nil {
		return err
	}
	if snap.Head != head { // another writer (a fanout worker) wrote since: nothing to compare
		return nil
	}
	disk, err := e.decodeRun(ctx, snap)
	if err != nil {
		return err
	}
	// The stored summary says what the run says.
	c, err := e.planFor(disk)
	if err != nil {
		return err
	}
	want, err := (&txn{ctx: ctx, e: e, st: disk, c: c}).summaryJSON() // no clock read: tests pin the clock
	if err != nil {
		return err
	}
	got, ok := decodeSummary(snap.Summary)
	if !ok {
		return fmt.Errorf("run %s: no summary stored (%s)", runID, snap.Summary)
	}
	if g, _ := json.Marshal(got); !bytes.Equal(g, want) {
		return fmt.Errorf("run %s: stored summary differs from the run:\n stored %s\n run    %s", runID, g, want)
	}
	for id, s := range mem.Steps {
		if s.coldSeq == 0 {
			continue
		}
		// A finished step read from the log must still equal its record.
		was, err := e.blob(ctx, runID, s.coldSeq)
		if err != nil {
			return err
		}
		if same, _ := sameAsRecord(s, was); !same {
			now, _ := encodeStepRecord(s)
			return fmt.Errorf("run %s: finished step %s changed in memory but not in the log:\n log %s\n mem %s", runID, id, was, now)
		}
	}
	norm := func(st *runState) string {
		steps := map[string]*stepState{}
		for id, s := range st.Steps {
			if s.coldSeq == 0 && !s.pristine() {
				steps[id] = compactStep(s)
			}
		}
		b, _ := json.Marshal(struct {
			Doc   doc   `json:"doc"`
			Input Value `json:"input"`
		}{st.doc(steps), st.Input})
		return string(b)
	}
	if a, b := norm(disk), norm(mem); a != b {
		return fmt.Errorf("persisted run %s differs from memory:\n disk %s\n mem  %s", runID, a, b)
	}
	// Every fanout item, the ones in records included.
	if a, b := fanoutsText("", disk.Steps), fanoutsText("", mem.Steps); a != b {
		return fmt.Errorf("persisted fanouts of run %s differ from memory:\n disk %s\n mem  %s", runID, a, b)
	}
	return checkWindows("", mem.Steps)
}

// checkWindows checks the window of every fanout among steps (subflows
// included): tests only, as checkPersisted.
func checkWindows(prefix string, steps map[string]*stepState) error {
	for id, ss := range steps {
		if ss == nil {
			continue
		}
		if ss.Fanout != nil {
			if err := ss.Fanout.checkWindow(prefix + id); err != nil {
				return err
			}
		}
		if ss.Sub != nil {
			if err := checkWindows(prefix+id+"/", ss.Sub.Steps); err != nil {
				return err
			}
		}
	}
	return nil
}

// workspaceRoot resolves a plan's workspace root and checks it against
// the workspace policy and the effects policy, which gives the root's
// anchor ("" without a policy).
func (e *Engine) workspaceRoot(root string, clientRoots []string) (abs, anchor string, err error) {
	if root == "" {
		root = e.opts.Workspace.Default
	}
	if root == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", "", fmt.Errorf("workspace root: %w", err)
		}
		root = wd
	}
	abs, err = absClean(root)
	if err != nil {
		return "", "", err
	}
	if e.opts.Workspace.Check != nil {
		if err := e.opts.Workspace.Check(abs); err != nil {
			return "", "", err
		}
	}
	if e.opts.Policy != nil {
		if anchor, err = e.opts.Policy.Workspace(abs, clientRoots); err != nil {
			return "", "", err
		}
	}
	return abs, anchor, nil
}
