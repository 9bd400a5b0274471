package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/stratum-go/stratum/internal/lease"
	"github.com/stratum-go/stratum/ir"
	"github.com/stratum-go/stratum/store"
)

// Leases and background runs (docs/engine.md, "Leases"). A process that
// drives a run (the background driver of `stratum mcp`) holds the run's
// lease, recorded through the Store: an owner id, an expiry judged on the
// store's clock, renewed by heartbeat. While another owner holds it, the
// calls that drive a run (step_done, attempt starts, resume, commit,
// revert) are refused with ErrRunLeased naming the holder; a person's gate
// decision and a cancel are not (a person may always decide and stop).
// A background run (PlanRequest.Background) may be driven only by the
// holder of its lease: when its holder dies the lease runs out and
// another process takes the run over (TakeOver) from its durable state.

// DefaultLeaseTTL is the time to live of a run lease when
// Options.LeaseTTL is zero: a dead holder's run is taken over after at
// most this long (plus the taker's scan interval).
const DefaultLeaseTTL = 10 * time.Second

// Events of background runs.
const (
	// EventDriverAcquired: a process took over driving a background run
	// under a new lease (the first drive or a take-over).
	EventDriverAcquired EventType = "driver_acquired" // DriverDetail
	// EventDriverHalted: the driver of a background run stopped before
	// the run finished, for a reason outside the run (an agent that
	// cannot run); the run stays as it is and is driven again later.
	EventDriverHalted EventType = "driver_halted" // DriverDetail
)

// DriverDetail is the detail of driver_acquired and driver_halted.
type DriverDetail struct {
	// Owner is the lease holder (the driving process).
	Owner string `json:"owner"`
	// Epoch is the lease's fencing epoch (driver_acquired).
	Epoch int64 `json:"epoch,omitempty"`
	// Previous is the owner that drove the run before (driver_acquired
	// of a take-over).
	Previous string `json:"previous,omitempty"`
	// Reason says why the drive stopped (driver_halted).
	Reason string `json:"reason,omitempty"`
}

// backgroundState marks a run driven by a server rather than by its
// client (stratum_flow_run_bg): persisted with the run, so that any
// process finds it.
type backgroundState struct {
	Since time.Time `json:"since"`
	// Owner and Epoch are the lease under which the run was last taken
	// over.
	Owner string `json:"owner,omitempty"`
	Epoch int64  `json:"epoch,omitempty"`
	// Halted says why the last drive stopped before the run finished
	// (cleared by the next take-over).
	Halted string `json:"halted,omitempty"`
}

// leaseHolds are the leases this process holds, one per run, shared by
// everything in the process that drives the run.
type leaseHolds struct {
	owner string
	ttl   time.Duration
	mu    sync.Mutex
	m     map[string]*heldLease
}

type heldLease struct {
	k    *lease.Keeper
	refs int
}

func (h *leaseHolds) init(opts Options) {
	h.owner, h.ttl, h.m = opts.LeaseOwner, opts.LeaseTTL, map[string]*heldLease{}
	if h.owner == "" {
		h.owner = defaultOwner()
	}
	if h.ttl <= 0 {
		h.ttl = DefaultLeaseTTL
	}
}

// defaultOwner is "<host>:<pid>:<random>": unique (the random part), and
// readable in a refusal (the host and process a person can look for).
func defaultOwner() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "host"
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s:%d:%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// Owner is this Engine's lease owner id.
func (e *Engine) Owner() string { return e.leases.owner }

// LeaseTTL is the time to live of the leases this Engine takes.
func (e *Engine) LeaseTTL() time.Duration { return e.leases.ttl }

// Hold is this process's share of a run's lease (see Engine.Hold).
type Hold struct {
	e     *Engine
	runID string
	h     *heldLease
	once  sync.Once
}

// Hold takes the run's lease for this Engine (or shares the one it holds
// already) and keeps it renewed until every Hold of the run is released.
// The error is an *Error: ErrRunLeased naming the holder when another
// process holds it, ErrRunNotFound. When the lease is lost (another
// process took it after this one could not renew it in time) every
// effect this process runs for the run is stopped and Lost is closed.
func (e *Engine) Hold(ctx context.Context, runID string) (*Hold, error) {
	if err := store.ValidateRunID(runID); err != nil {
		return nil, newErr(ErrRunNotFound, runID, "run %q not found: %v", runID, err)
	}
	hs := &e.leases
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if h := hs.m[runID]; h != nil && h.k.Valid() {
		h.refs++
		return &Hold{e: e, runID: runID, h: h}, nil
	}
	k, err := lease.Acquire(ctx, e.store, runID, hs.owner, hs.ttl)
	if err != nil {
		return nil, leaseErr(runID, err)
	}
	h := &heldLease{k: k, refs: 1}
	hs.m[runID] = h
	go func() {
		select {
		case <-k.Lost():
			e.stopEffects(runID)
			hs.mu.Lock()
			if hs.m[runID] == h {
				delete(hs.m, runID)
			}
			hs.mu.Unlock()
		case <-e.bgCtx.Done():
		}
	}()
	return &Hold{e: e, runID: runID, h: h}, nil
}

// leaseErr maps a store lease error to the engine's.
func leaseErr(runID string, err error) error {
	var held *store.LeaseHeldError
	if errors.As(err, &held) {
		return &Error{Kind: ErrRunLeased, RunID: runID, Holder: held.Holder, Err: err,
			Message: fmt.Sprintf("run %s is driven by %s (its lease runs until %s unless renewed)", runID, held.Holder, held.Expires.Format(time.RFC3339))}
	}
	return mapStoreErr(runID, err)
}

// Lease is the lease as last granted or renewed.
func (h *Hold) Lease() store.Lease { return h.h.k.Lease() }

// Lost is closed when the lease is lost.
func (h *Hold) Lost() <-chan struct{} { return h.h.k.Lost() }

// LostErr says why the lease was lost, once Lost is closed (nil before):
// it wraps store.ErrLeaseLost, and lease.ErrNotRenewed when this process
// did not renew it in time (rather than the store giving it to another).
func (h *Hold) LostErr() error { return h.h.k.Err() }

// Valid reports whether the lease is still held.
func (h *Hold) Valid() bool { return h.h.k.Valid() }

// Release gives this share of the lease up; the lease itself is released
// in the store when the last share is.
func (h *Hold) Release() {
	h.once.Do(func() {
		hs := &h.e.leases
		hs.mu.Lock()
		h.h.refs--
		last := h.h.refs == 0
		if last && hs.m[h.runID] == h.h {
			delete(hs.m, h.runID)
		}
		hs.mu.Unlock()
		if last {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = h.h.k.Release(ctx) // a lease not released runs out by itself
		}
	})
}

// releaseAll gives up every lease this process holds (Engine.Close).
func (hs *leaseHolds) releaseAll() {
	hs.mu.Lock()
	held := hs.m
	hs.m = map[string]*heldLease{}
	hs.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, h := range held {
		_ = h.k.Release(ctx)
	}
}

// holds reports whether this process holds a valid lease on the run.
func (hs *leaseHolds) holds(runID string) bool {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	h := hs.m[runID]
	return h != nil && h.k.Valid()
}

// driverKey marks the context of a driver's calls (AsDriver).
type driverKey struct{}

// AsDriver marks ctx as the context of the calls a driver makes for the
// runs it holds the lease of: only such calls may drive a leased run,
// even in the holder's process (an MCP client of the server driving a
// background run does not report its steps).
func AsDriver(ctx context.Context) context.Context { return context.WithValue(ctx, driverKey{}, true) }

func isDriver(ctx context.Context) bool { v, _ := ctx.Value(driverKey{}).(bool); return v }

// guardDriver refuses a call that drives a run while a lease is held on
// it, unless it is the holder's driver calling (AsDriver), and any
// driving of a background run but by the holder of its lease.
func (t *txn) guardDriver() error {
	mine := t.lease != nil && t.lease.Owner == t.e.leases.owner && isDriver(t.ctx)
	switch {
	case t.lease != nil && !mine:
		who := t.lease.Owner
		if who == t.e.leases.owner {
			who = "this process (" + who + ")"
		}
		err := t.refuse(ErrRunLeased, "", "run %s is driven by %s, which holds its lease: only its driver reports its steps", t.st.ID, who)
		err.Holder = t.lease.Owner
		if t.st.Background != nil {
			err.Message = fmt.Sprintf("run %s is a background run driven by %s, which holds its lease: the server does its steps; watch it with stratum_flow_bg_poll", t.st.ID, who)
		}
		return err
	case t.st.Background != nil && !mine && !isTerminalRun(t.st.Status) && !t.st.CancelRequested:
		return t.refuse(ErrRunLeased, "", "run %s is a background run: only the server holding its lease drives it, and none holds it right now (a stratum mcp on this state root takes it over); watch it with stratum_flow_bg_poll", t.st.ID)
	}
	return nil
}

// checkBackground refuses a spec that cannot run in the background and
// asks the policy about the agents of its do steps (the server does them).
func (e *Engine) checkBackground(p *ir.Plan) error {
	var ds []Detail
	var msgs []string
	for _, f := range p.Flows {
		for i, s := range f.Steps {
			if s.Kind == ir.KindFanout && s.Fanout.Dispatch == ir.DispatchConsumer {
				path := fmt.Sprintf("flows.%s.steps[%d].fanout.dispatch", f.Name, i)
				msg := fmt.Sprintf("step %q of flow %q is a fanout with dispatch: consumer, whose items go back to the client as ready steps, and a background run has no client to do them", s.ID, f.Name)
				ds = append(ds, Detail{Code: CodeBackgroundUnsupported, Path: path, Message: msg})
				msgs = append(msgs, msg)
			}
		}
	}
	if len(ds) > 0 {
		return &Error{Kind: ErrBackgroundUnsupported, Details: ds,
			Message: strings.Join(msgs, "; ") + ": run this flow with stratum_plan (you do its steps and items), or write dispatch: engine on the fanout (the server's agents do the items)"}
	}
	if e.opts.Policy == nil {
		return nil
	}
	var first error
	for _, f := range BackgroundEffects(p) {
		if err := e.opts.Policy.Allow(f); err != nil {
			if first == nil {
				first = err
			}
			msgs = append(msgs, err.Error())
		}
	}
	if first == nil {
		return nil
	}
	return &Error{Kind: ErrEffectNotAllowed, Err: first,
		Message: "the spec needs effects this server does not allow in the background (nothing was planned): " + strings.Join(msgs, "; ")}
}

// BackgroundEffects lists the effects a spec causes when a server runs
// it in the background: its own (SpecEffects, with every agent's Origin
// OriginBackground) and an agent for each do step (read-only), which the
// server starts instead of the client.
func BackgroundEffects(p *ir.Plan) []Effect {
	out := SpecEffects(p)
	for i := range out {
		if out[i].Kind == EffectAgent {
			out[i].Origin = OriginBackground
		}
	}
	for _, f := range p.Flows {
		seen := map[string]bool{}
		for _, s := range f.Steps {
			if s.Kind != ir.KindDo {
				continue
			}
			a := agentOf(string(s.Agent))
			if seen[a] {
				continue
			}
			seen[a] = true
			out = append(out, Effect{Kind: EffectAgent, StepID: s.ID, Flow: f.Name, Agent: a, Sandbox: SandboxReadOnly, Origin: OriginBackground})
		}
	}
	return out
}

// TakeOver starts or continues driving a background run under the lease
// this Engine holds (Hold): it records a driver_acquired event when the
// lease is new to the run, checks the run's effects against this
// process's policy, then does what Resume does (attempts and effects
// left by a dead driver are taken over; running engine fanouts are
// driven) and returns the run's actionable state.
func (e *Engine) TakeOver(ctx context.Context, runID string) (*Response, error) {
	t, err := e.mutate(ctx, runID, func(t *txn) error {
		bg := t.st.Background
		if bg == nil {
			return t.refuse(ErrNotBackground, "", "run %s was not started in the background", t.st.ID)
		}
		if err := t.guardActive(); err != nil {
			return err
		}
		if t.lease == nil || t.lease.Owner != t.e.leases.owner {
			holder := "nobody"
			if t.lease != nil {
				holder = t.lease.Owner
			}
			err := t.refuse(ErrRunLeased, "", "run %s cannot be taken over without its lease (held by %s)", t.st.ID, holder)
			if t.lease != nil {
				err.Holder = t.lease.Owner
			}
			return err
		}
		if err := t.e.checkBackground(t.c.plan); err != nil {
			return err
		}
		if bg.Owner != t.lease.Owner || bg.Epoch != t.lease.Epoch {
			t.emit(EventDriverAcquired, "", DriverDetail{Owner: t.lease.Owner, Epoch: t.lease.Epoch, Previous: bg.Owner})
			bg.Owner, bg.Epoch = t.lease.Owner, t.lease.Epoch
		}
		bg.Halted = ""
		t.fullSweep, t.root = true, nil // taken over: looked at whole
		t.resumeFanouts()
		t.takeOverEffects()
		t.takeOverAttempts()
		t.advance()
		t.engineWork = true
		t.result = t.response()
		return nil
	})
	if err != nil {
		return nil, err
	}
	return t.result, nil
}

// DriverHalted records why the driver of a background run stopped before
// the run finished (driver_halted); the driver keeps its lease and
// drives the run again later. Only the lease holder records it.
func (e *Engine) DriverHalted(ctx context.Context, runID, reason string) error {
	_, err := e.transition(ctx, runID, func(t *txn) error {
		bg := t.st.Background
		if bg == nil || isTerminalRun(t.st.Status) || t.st.CancelRequested {
			return nil
		}
		if t.lease == nil || t.lease.Owner != t.e.leases.owner {
			return nil // not the driver any more: the new one decides
		}
		reason = cleanText(reason)
		if bg.Halted == reason {
			return nil
		}
		bg.Halted = reason
		t.emit(EventDriverHalted, "", DriverDetail{Owner: t.lease.Owner, Reason: reason})
		return nil
	})
	return err
}

// mayDrive reports whether this process may drive the engine work of a
// run it loaded: not while another process holds its lease, and a
// background run only under this process's lease.
func (e *Engine) mayDrive(st *runState, l *store.Lease) bool {
	if l != nil && l.Owner != e.leases.owner {
		return false
	}
	if st.Background != nil {
		return e.leases.holds(st.ID)
	}
	return true
}

// loadLeased is load, also returning the run's lease.
func (e *Engine) loadLeased(ctx context.Context, runID string) (*runState, *compiled, *store.Snapshot, error) {
	if err := store.ValidateRunID(runID); err != nil {
		return nil, nil, nil, newErr(ErrRunNotFound, runID, "run %q not found: %v", runID, err)
	}
	snap, err := e.store.Load(ctx, runID)
	if err != nil {
		return nil, nil, nil, mapStoreErr(runID, err)
	}
	st, err := e.decodeRun(ctx, snap)
	if err != nil {
		return nil, nil, nil, mapStoreErr(runID, err)
	}
	c, err := e.planFor(st)
	if err == nil {
		err = c.checkState(st)
	}
	if err != nil {
		return nil, nil, nil, mapStoreErr(runID, err)
	}
	return st, c, snap, nil
}

// Background statuses (BackgroundView.Status).
const (
	BgRunning         = "running"
	BgPausedGate      = "paused_gate"
	BgHalted          = "halted"
	BgCompleted       = "completed"
	BgFailed          = "failed"
	BgBudgetExhausted = "budget_exhausted"
	BgCancelled       = "cancelled"
)

// BackgroundView is how a background run stands, from its durable state
// and its lease (any process sees the same).
type BackgroundView struct {
	// Status is running (the server works on it), paused_gate (it waits
	// only for a person's decision: pendingGates), halted (the driver
	// stopped for a reason outside the run, see halted; it is retried),
	// or the run's terminal status.
	Status          string   `json:"status" jsonschema:"running (the server works on it), paused_gate (it waits only for a person's decision on pendingGates), halted (the server's driver stopped for a reason outside the run, see halted; it tries again), completed, failed, budget_exhausted or cancelled"`
	CancelRequested bool     `json:"cancelRequested" jsonschema:"a cancel was requested (the run is cancelled)"`
	PendingGates    []string `json:"pendingGates" jsonschema:"the gates (and interrupted attempts) awaiting a person's decision: root gates first, then gates inside subflows (<runStep>/<gate>)"`
	GateStepID      string   `json:"gateStepId,omitzero" jsonschema:"the first of pendingGates"`
	// Driver is the lease holder driving the run ("" when none does now:
	// a stratum mcp on the state root takes it over).
	Driver string `json:"driver,omitzero" jsonschema:"the server process driving the run (its lease holder); absent when none holds it right now: a stratum mcp started on this state root takes it over"`
	Halted string `json:"halted,omitzero" jsonschema:"why the driver stopped before the run finished (status halted)"`
}

// BackgroundPoll is a poll of a background run: the flow poll's fields
// (without ready entries: the server does them) and bg.
type BackgroundPoll struct {
	Status     RunStatus      `json:"status" jsonschema:"the run's state: running, completed, failed, budget_exhausted or cancelled (see bg for what it waits on)"`
	RunID      string         `json:"runId" jsonschema:"the run's id"`
	Events     []Event        `json:"events" jsonschema:"up to 50 events after cursor, oldest first"`
	NextCursor int64          `json:"nextCursor" jsonschema:"pass it as cursor to the next poll"`
	MoreEvents bool           `json:"moreEvents,omitzero" jsonschema:"more events follow nextCursor: poll again for them"`
	Waiting    []Waiting      `json:"waiting,omitzero" jsonschema:"what the run waits on: gate (a person), fanout, evaluate or subflow (engine work)"`
	Ledger     LedgerView     `json:"ledger" jsonschema:"spend and the flow's budget"`
	Output     Value          `json:"output,omitzero" jsonschema:"the flow's output (completed)"`
	Failure    *Failure       `json:"failure,omitzero" jsonschema:"why the run failed (failed, budget_exhausted)"`
	Bg         BackgroundView `json:"bg" jsonschema:"the background driver's view: status, pendingGates, driver"`
}

// MaxPollEvents bounds the events of one background poll.
const MaxPollEvents = 50

// PollBackground returns a background run's state, its events after
// cursor (at most MaxPollEvents; MoreEvents says more follow) and its
// background view, without taking the run lock. Any process answers for
// any background run of the store. A run started with Plan is refused
// with ErrNotBackground.
func (e *Engine) PollBackground(ctx context.Context, runID string, cursor int64) (_ *BackgroundPoll, err error) {
	defer recoverLoad(&err)
	st, c, snap, err := e.loadLeased(ctx, runID)
	if err != nil {
		return nil, err
	}
	if st.Background == nil {
		return nil, newErr(ErrNotBackground, runID, "run %s was not started in the background (stratum_plan): poll it with stratum_flow_poll", runID)
	}
	head := snap.Head.Seq
	if cursor < 0 || cursor > head {
		return nil, &Error{Kind: ErrInvalidCursor, RunID: runID,
			Message: fmt.Sprintf("invalid event cursor %d: the run has %d events; use 0..%d", cursor, head, head)}
	}
	// Events are read in bounded slices until enough visible ones (the
	// internal records are left out) are found.
	var evs []Event
	next := cursor
	for next < head && len(evs) < MaxPollEvents {
		upTo := min(head, next+2*MaxPollEvents)
		got, err := e.events(ctx, runID, next, upTo)
		if err != nil {
			return nil, err
		}
		for _, ev := range got {
			if len(evs) == MaxPollEvents {
				upTo = evs[len(evs)-1].Seq
				break
			}
			evs = append(evs, ev)
		}
		next = upTo
	}
	if evs == nil {
		evs = []Event{}
	}
	t := newTxn(ctx, e, st, c)
	resp := t.response()
	view := backgroundView(st, resp, snap.Lease)
	status := resp.Status
	if status == StatusReady {
		status = StatusRunning // its ready steps are the server's
	}
	return &BackgroundPoll{Status: status, RunID: st.ID, Events: evs, NextCursor: next, MoreEvents: next < head,
		Waiting: resp.Waiting, Ledger: resp.Ledger, Output: resp.Output, Failure: resp.Failure, Bg: view}, nil
}

// backgroundView computes a background run's view.
func backgroundView(st *runState, resp *Response, l *store.Lease) BackgroundView {
	v := BackgroundView{Status: BgRunning, CancelRequested: st.CancelRequested, PendingGates: []string{}}
	if l != nil {
		v.Driver = l.Owner
	}
	switch {
	case st.CancelRequested || st.Status == StatusCancelled:
		v.Status = BgCancelled
		return v
	case isTerminalRun(st.Status):
		v.Status = string(st.Status)
		return v
	}
	gates, other := []string{}, 0
	for _, w := range resp.Waiting {
		if w.Kind == WaitGate || w.Kind == WaitInterrupted {
			gates = append(gates, w.StepID)
		} else {
			other++
		}
	}
	sort.SliceStable(gates, func(i, j int) bool {
		return !strings.Contains(gates[i], "/") && strings.Contains(gates[j], "/")
	})
	v.PendingGates = gates
	if len(gates) > 0 {
		v.GateStepID = gates[0]
	}
	switch {
	case st.Background != nil && st.Background.Halted != "":
		v.Status, v.Halted = BgHalted, st.Background.Halted
	case len(gates) > 0 && other == 0 && len(resp.Ready) == 0:
		v.Status = BgPausedGate
	}
	return v
}

// BackgroundRun is what a supervisor of background runs needs to know
// about one run (BackgroundInfo).
type BackgroundRun struct {
	RunID string
	// Background is false for a run started with Plan (never driven by
	// a server).
	Background bool
	// Done: the run is terminal or cancelled; nothing will drive it.
	Done bool
	// Holder is the run's lease holder, "" when none.
	Holder string
	// Head is the seq of the run's last event.
	Head int64
	// View is the background view (Background runs only).
	View BackgroundView
	// Unclaimed: a background run no process holds the lease of and none
	// has driven yet, planned at Since. The server that started it takes
	// it at once; a supervisor leaves it to that server for a lease ttl
	// (docs/mcp.md, "Take-over and restart").
	Unclaimed bool
	Since     time.Time
}

// BackgroundInfo reads what a supervisor of background runs needs about
// one run, without the run lock.
func (e *Engine) BackgroundInfo(ctx context.Context, runID string) (_ *BackgroundRun, err error) {
	defer recoverLoad(&err)
	st, c, snap, err := e.loadLeased(ctx, runID)
	if err != nil {
		return nil, err
	}
	r := &BackgroundRun{RunID: runID, Background: st.Background != nil, Head: snap.Head.Seq,
		Done: isTerminalRun(st.Status) || st.CancelRequested}
	if snap.Lease != nil {
		r.Holder = snap.Lease.Owner
	}
	if r.Background {
		r.View = backgroundView(st, newTxn(ctx, e, st, c).response(), snap.Lease)
		r.Unclaimed = snap.Lease == nil && st.Background.Owner == "" // Owner is set by the first take-over
		r.Since = st.Background.Since
	}
	return r, nil
}

// RunHead is a run as a store listing shows it (RunHeads).
type RunHead struct {
	// Seq is the seq of the run's last event.
	Seq int64
	// Settled: the run's summary says it needs no driver, for good: it
	// was started in the foreground, or it has finished.
	Settled bool
}

// RunHeads lists the runs of the store from the store's listing alone
// (the runs' summaries; no run is read): a supervisor of background runs
// reads only the runs it does not know yet, or that changed, with
// BackgroundInfo.
func (e *Engine) RunHeads(ctx context.Context) (map[string]RunHead, error) {
	infos, err := e.store.List(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]RunHead, len(infos))
	for _, info := range infos {
		h := RunHead{Seq: info.Head.Seq}
		if s, ok := decodeSummary(info.Summary); ok {
			h.Settled = !s.Background || s.Status.Terminal() || s.CancelRequested
		}
		out[info.ID] = h
	}
	return out, nil
}

// CancelBackground cancels a background run as Cancel does, recorded as
// a background cancel (flow_cancelled by "bg").
func (e *Engine) CancelBackground(ctx context.Context, runID, reason string) (*CancelResult, error) {
	st, _, _, err := e.load(ctx, runID)
	if err != nil {
		return nil, err
	}
	if st.Background == nil {
		return nil, newErr(ErrNotBackground, runID, "run %s was not started in the background (stratum_plan): cancel it with stratum_flow_cancel", runID)
	}
	return e.cancel(ctx, runID, reason, "bg")
}
