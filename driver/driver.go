package driver

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/stratum-go/stratum/agent"
	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/internal/lease"
	"github.com/stratum-go/stratum/internal/scratch"
	"github.com/stratum-go/stratum/ir"
)

// GateMode says what the driver does when a gate waits for a decision.
type GateMode string

const (
	// GateStop ends the drive once nothing but gates is left to wait for;
	// the run stays at its gates (Outcome.Gates) for a person to decide
	// with `stratum gate`, and a later Resume continues it.
	GateStop GateMode = "stop"
	// GateWait keeps driving until someone else (stratum gate, an MCP
	// client) decides each gate.
	GateWait GateMode = "wait"
	// GateAsk asks Options.AskGate for each gate, while a decision made
	// elsewhere is still accepted (the question is then withdrawn).
	GateAsk GateMode = "ask"
	// GateApprove and GateKill decide every gate at once (CI).
	GateApprove GateMode = "approve"
	GateKill    GateMode = "kill"
)

// DefaultConcurrency bounds how many agent attempts of do steps and
// consumer fanout items run at once when Options.Concurrency is zero.
const DefaultConcurrency = 4

// DefaultPollInterval is how often a drive that waits on engine work or on
// decisions made elsewhere re-reads the run.
const DefaultPollInterval = 100 * time.Millisecond

// Options configure a Driver.
type Options struct {
	// Agent overrides every step's agent (the --agent value): claude,
	// codex, human or a command line. Empty lets each step's agent: decide.
	Agent string
	// Resolver maps agent choices to connectors; nil means a zero
	// Resolver (claude, codex and commands; no human).
	Resolver *agent.Resolver
	// Gates is what to do at gates; empty means GateStop.
	Gates GateMode
	// AskGate asks for a decision on a gate (GateAsk), given its view
	// (what is under review and its digest: show it): it returns the
	// decision (approve, revise or kill) with the note and the decider to
	// record, or an error. The decision is recorded with the view's token
	// and digest, so it is refused (and asked again) if the content under
	// review is no longer what was shown. ctx ends when the gate is decided
	// elsewhere or the drive ends. ErrNoAnswer means nobody can answer: the
	// drive then stops at its gates as with GateStop.
	AskGate func(ctx context.Context, g engine.GateView) (GateAnswer, error)
	// GateWaiting, in GateWait mode, is told once about each gate round
	// that starts waiting (to say how to decide it elsewhere). Called from
	// the drive's goroutine.
	GateWaiting func(g engine.WaitingGate)
	// Agents is how the agents run: their options, a per-step hook for a
	// policy, and the progress view. Engine fanout items get the same
	// through Dispatcher.
	Agents AgentSetup
	// RunTimeout bounds one drive (Start or Resume) of a run; zero means
	// no limit. When it expires the agents still at work are stopped
	// (their process groups signalled and reaped), each of their attempts
	// is recorded as failed with a reason naming the limit, and the drive
	// halts with a *RunTimeLimitError (the run stays resumable).
	RunTimeout time.Duration
	// Concurrency bounds concurrent attempts of do steps and consumer
	// items; zero means DefaultConcurrency. Engine fanouts use their own
	// declared concurrency.
	Concurrency int
	// PollInterval is how often a waiting drive re-reads the run; zero
	// means DefaultPollInterval.
	PollInterval time.Duration
	// PatchLimit bounds the patch recorded of what one attempt of a do
	// step changed in a git workspace (docs/agents.md, "What a step
	// changed"); zero means 16 MiB. A larger patch is not recorded: the
	// attempt keeps its stat, which says so.
	PatchLimit int
	// Plan is the compiled spec of the runs resumed, when known (Start
	// compiles its own): it gives contract fields to agents in declaration
	// order (otherwise sorted by name).
	Plan *ir.Plan
	// Event receives every event of the run in order, as the drive
	// observes it (for a progress view). Called from the drive's goroutine.
	Event func(engine.Event)
	// Notice receives the driver's own messages (consumer fanout
	// worktrees and merges), one line each, without a newline.
	Notice func(string)
	// By names what starts the agents in the audit ("stratum run", the
	// default; "stratum mcp" for background runs).
	By string
}

// ErrNoAnswer is returned by an AskGate that cannot ask anyone (its input
// ended).
var ErrNoAnswer = errors.New("no one to answer")

// Outcome is how a drive ended.
type Outcome struct {
	RunID string
	// Response is the run's last actionable state: terminal, or running
	// at its gates when the drive stopped there.
	Response *engine.Response
	// Gates lists the gates awaiting a decision when the drive stopped at
	// them; empty when the run finished.
	Gates []engine.WaitingGate
}

// Finished reports whether the run reached a terminal status.
func (o *Outcome) Finished() bool { return terminal(o.Response.Status) }

// HaltError reports a drive that stopped before the run finished for a
// reason outside the run (an agent that cannot be started, an interrupt,
// a store failure). The run is intact: Resume continues it once the cause
// is fixed.
type HaltError struct {
	RunID string
	// StepID is the step being dispatched, when the halt is about one.
	StepID string
	Err    error
}

func (e *HaltError) Error() string {
	if e.StepID != "" {
		return fmt.Sprintf("run %s: step %s: %v", e.RunID, e.StepID, e.Err)
	}
	return fmt.Sprintf("run %s: %v", e.RunID, e.Err)
}

func (e *HaltError) Unwrap() error { return e.Err }

// Driver drives runs with agent connectors. One Driver serves one engine:
// make it first, give its Dispatcher to engine.New, then Start or Resume
// runs on that engine. A Driver is safe for concurrent drives of different
// runs.
type Driver struct {
	opts     Options
	resolver *agent.Resolver
	consumer *consumerTrees
	dispatch *Dispatcher
	mu       sync.Mutex
	plans    map[string]*ir.Plan // of the runs being driven
}

// planOf is the compiled spec of a run being driven, or nil.
func (d *Driver) planOf(runID string) *ir.Plan {
	d.mu.Lock()
	defer d.mu.Unlock()
	if p := d.plans[runID]; p != nil {
		return p
	}
	return d.opts.Plan
}

// New returns a Driver.
func New(opts Options) *Driver {
	if opts.Gates == "" {
		opts.Gates = GateStop
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = DefaultConcurrency
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = DefaultPollInterval
	}
	if opts.By == "" {
		opts.By = "stratum run"
	}
	r := opts.Resolver
	if r == nil {
		r = &agent.Resolver{}
	}
	d := &Driver{opts: opts, resolver: r, consumer: newConsumerTrees(), plans: map[string]*ir.Plan{}}
	d.dispatch = NewDispatcher(r, opts.Agent).WithAgents(opts.Agents)
	return d
}

// Dispatcher is the engine.Dispatcher that runs engine-dispatched fanout
// items with the Driver's connectors, agent choice and agent setup (the
// engine isolates and merges them).
func (d *Driver) Dispatcher() engine.Dispatcher { return d.dispatch }

// Start plans a run on e and drives it.
func (d *Driver) Start(ctx context.Context, e *engine.Engine, req engine.PlanRequest) (*Outcome, error) {
	plan, ds := ir.Build(req.Spec)
	if len(ds) > 0 {
		// The engine reports the same problems with its own error.
		plan = nil
	}
	resp, err := e.Plan(ctx, req)
	if err != nil {
		return nil, err
	}
	hold, err := d.holdRun(ctx, e, resp.RunID)
	if err != nil {
		return nil, err
	}
	defer hold.Release()
	ctx, stop := heldContext(ctx, resp.RunID, hold)
	defer stop()
	if plan != nil {
		d.track(resp.RunID, plan)
		defer d.untrack(resp.RunID)
	}
	out, err := d.drive(ctx, e, resp, 0)
	return out, leaseCause(ctx, resp.RunID, err)
}

// holdRun takes the run's lease for one drive, so that two drivers never
// work on one run at once (docs/engine.md, "Leases"): a second `stratum
// run --resume` of a run another live process drives is refused, naming
// it. A lease left by a driver that died runs out within the lease's time
// to live; holdRun waits that long for it (saying so once through
// Notice) before it gives up.
func (d *Driver) holdRun(ctx context.Context, e *engine.Engine, runID string) (*engine.Hold, error) {
	scratch.Tidy() // what a killed driver left in the temporary directory
	deadline := time.Now().Add(e.LeaseTTL() + time.Second)
	told := false
	for {
		h, err := e.Hold(ctx, runID)
		if err == nil {
			return h, nil
		}
		var ee *engine.Error
		if !errors.As(err, &ee) || !errors.Is(err, engine.ErrRunLeased) || time.Now().After(deadline) {
			return nil, err
		}
		if !told && d.opts.Notice != nil {
			d.opts.Notice(fmt.Sprintf("run %s is driven by %s: waiting up to %s for its lease to run out (it does if that driver died)",
				runID, ee.Holder, e.LeaseTTL().Round(time.Millisecond)))
			told = true
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// heldContext is ctx marked as the holder's driver (engine.AsDriver),
// cancelled if the lease is lost: another process then drives the run,
// and this drive's agents must stop.
func heldContext(ctx context.Context, runID string, hold *engine.Hold) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(engine.AsDriver(ctx))
	go func() {
		select {
		case <-hold.Lost():
			cancel(lostLease(hold.LostErr()))
		case <-ctx.Done():
		}
	}()
	return ctx, func() { cancel(nil) }
}

// ErrLeaseLost ends a drive whose run's lease was lost: another process
// took it, or it ran out before this process renewed it. The drive's
// error wraps it with which of the two.
var ErrLeaseLost = errors.New("the lease was lost")

var (
	errLeaseTaken  = fmt.Errorf("%w: another process drives the run", ErrLeaseLost)
	errLeaseRanOut = fmt.Errorf("%w: it ran out before this process could renew it (the process was held up, or the store was slow), so another process may drive the run", ErrLeaseLost)
)

// lostLease is the cause a drive gives for a lost lease, from why the
// lease keeper lost it.
func lostLease(why error) error {
	if errors.Is(why, lease.ErrNotRenewed) {
		return errLeaseRanOut
	}
	return errLeaseTaken
}

// leaseCause is err with a plain cancellation replaced by the lease loss
// when the held context ctx ended because the lease was lost: whichever
// call the cancellation cut short, the drive says why it stopped.
func leaseCause(ctx context.Context, runID string, err error) error {
	cause := context.Cause(ctx)
	if err == nil || !errors.Is(cause, ErrLeaseLost) || errors.Is(err, ErrLeaseLost) || !errors.Is(err, context.Canceled) {
		return err
	}
	if he, ok := errors.AsType[*HaltError](err); ok {
		return &HaltError{RunID: he.RunID, StepID: he.StepID, Err: cause}
	}
	return &HaltError{RunID: runID, Err: cause}
}

// track records the compiled spec of a run being driven; untrack forgets it.
func (d *Driver) track(runID string, plan *ir.Plan) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.plans[runID] = plan
}

func (d *Driver) untrack(runID string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.plans, runID)
}

// Resume continues a persisted run on e (any process may resume any run)
// and drives it. A step whose agent was running when the previous drive
// stopped is handed to an agent again (delivery is at least once). A run
// that has already finished is not touched: its Outcome is its final
// state, and nothing is recorded.
func (d *Driver) Resume(ctx context.Context, e *engine.Engine, runID string) (*Outcome, error) {
	st, err := e.Status(ctx, runID)
	if err != nil {
		return nil, err
	}
	if terminal(st.Status) {
		return &Outcome{RunID: runID, Response: st}, nil
	}
	hold, err := d.holdRun(ctx, e, runID)
	if err != nil {
		return nil, err
	}
	defer hold.Release()
	ctx, stop := heldContext(ctx, runID, hold)
	defer stop()
	// Events already in the log were shown by the drive that made them;
	// a resumed drive shows what happens from now on.
	poll, err := e.Poll(ctx, runID, 0)
	if err != nil {
		return nil, leaseCause(ctx, runID, err)
	}
	resp, err := e.Resume(ctx, runID)
	if err != nil {
		return nil, leaseCause(ctx, runID, err)
	}
	if d.opts.Plan == nil {
		if plan, err := e.RunPlan(ctx, runID); err == nil {
			d.track(runID, plan)
			defer d.untrack(runID)
		}
	}
	out, err := d.drive(ctx, e, resp, poll.NextCursor)
	return out, leaseCause(ctx, runID, err)
}

func terminal(status engine.RunStatus) bool { return status.Terminal() }

// attemptDone is one finished agent attempt of a do step or consumer item.
type attemptDone struct {
	entry engine.ReadyEntry
	res   agent.Result
	// patch is a consumer worktree item's captured changes (final stage).
	patch []byte
	// changes are what a do step's attempt changed in a git workspace.
	changes *engine.Changes
	err     error
	// started is set once the attempt was handed to its agent (it was not
	// left waiting for a free slot).
	started bool
}

// run is the state of one drive.
type run struct {
	d      *Driver
	e      *engine.Engine
	id     string
	cursor int64
	resp   *engine.Response
	// workspace is the run's workspace root (agents' working directory).
	workspace string
	// changes measures what do steps change in the workspace.
	changes   *workChanges
	inflight  map[string]bool // dispatch tokens handed to agents
	asking    map[string]context.CancelFunc
	announced map[string]bool // gates told to Options.GateWaiting
	attempts  chan attemptDone
	decisions chan gateDone
	sem       chan struct{}
	wg        sync.WaitGroup
}

func (d *Driver) drive(ctx context.Context, e *engine.Engine, resp *engine.Response, cursor int64) (*Outcome, error) {
	a, err := e.Audit(ctx, resp.RunID)
	if err != nil {
		return nil, &HaltError{RunID: resp.RunID, Err: err}
	}
	ctx, cancel := context.WithCancel(ctx)
	if limit := d.opts.RunTimeout; limit > 0 {
		var stop context.CancelFunc
		ctx, stop = context.WithTimeoutCause(ctx, limit, &RunTimeLimitError{RunID: resp.RunID, Limit: limit})
		defer stop()
	}
	r := &run{d: d, e: e, id: resp.RunID, cursor: cursor, resp: resp, workspace: a.WorkspaceRoot, changes: newWorkChanges(a.WorkspaceRoot, d.opts.PatchLimit, d.notice),
		inflight: map[string]bool{}, asking: map[string]context.CancelFunc{}, announced: map[string]bool{},
		attempts: make(chan attemptDone), decisions: make(chan gateDone), sem: make(chan struct{}, d.opts.Concurrency)}
	defer func() {
		// Stop agents and questions still running (a halt or an interrupt)
		// and wait for them: every child process is reaped on return.
		cancel()
		r.drain()
	}()
	out, err := r.loop(ctx)
	if limit := limitOf(ctx); err != nil && limit != nil {
		// Whatever noticed the limit first (an engine call cut short, an
		// attempt's report), the drive ends the same way.
		err = r.stopAtLimit(ctx, limit, nil)
	}
	if err != nil {
		// Show what was recorded before the drive stopped (the attempts
		// failed at the time limit).
		_ = r.pump(context.WithoutCancel(ctx))
	}
	if out != nil && out.Finished() {
		d.consumer.discard(context.WithoutCancel(ctx), r.id, "")
	}
	return out, err
}

// drain waits for the attempt and question goroutines, discarding what
// they report.
func (r *run) drain() {
	done := make(chan struct{})
	go func() {
		r.wg.Wait()
		close(done)
	}()
	for {
		select {
		case <-r.attempts:
		case <-r.decisions:
		case <-done:
			return
		}
	}
}

func (r *run) loop(ctx context.Context) (*Outcome, error) {
	ticker := time.NewTicker(r.d.opts.PollInterval)
	defer ticker.Stop()
	for {
		if err := r.pump(ctx); err != nil {
			return nil, err
		}
		if terminal(r.resp.Status) {
			return &Outcome{RunID: r.id, Response: r.resp}, nil
		}
		for _, entry := range r.resp.Ready {
			if !r.inflight[entry.DispatchToken] {
				r.inflight[entry.DispatchToken] = true
				r.wg.Add(1)
				go r.attempt(ctx, entry)
			}
		}
		gates, engineWork := 0, false
		var stalled []string
		for _, w := range r.resp.Waiting {
			if w.Paused != "" && len(r.inflight) == 0 {
				// Engine work stopped because its agent cannot run: the
				// same as a do step's unavailable agent.
				return nil, &HaltError{RunID: r.id, StepID: w.StepID, Err: errors.New(w.Paused)}
			}
			switch w.Kind {
			case engine.WaitGate, engine.WaitInterrupted:
				// An interrupted attempt is decided like a gate: approve
				// runs it again, kill fails it.
				gates++
			case "subflow":
				// A subflow with no gate and no ready step waits on
				// nothing that can ever happen.
				stalled = append(stalled, w.StepID)
			default:
				engineWork = true
			}
		}
		if len(stalled) > 0 && gates == 0 && !engineWork && len(r.inflight) == 0 && len(r.resp.Ready) == 0 {
			return nil, &HaltError{RunID: r.id, StepID: stalled[0], Err: errors.New("the subflow can make no progress: none of its steps can run")}
		}
		if r.d.opts.Gates == GateWait {
			if err := r.announce(ctx); err != nil {
				return nil, err
			}
		}
		if gates > 0 {
			switch r.d.opts.Gates {
			case GateApprove, GateKill:
				if err := r.decideAll(ctx, engine.Decision(r.d.opts.Gates)); err != nil {
					return nil, err
				}
				continue
			case GateAsk:
				if err := r.ask(ctx); err != nil {
					return nil, err
				}
			}
		}
		if gates > 0 && len(r.inflight) == 0 && len(r.asking) == 0 && !engineWork && len(r.resp.Ready) == 0 &&
			(r.d.opts.Gates == GateStop || r.d.opts.Gates == GateAsk) {
			ws, err := r.e.ListGates(ctx, r.id)
			if err != nil {
				return nil, &HaltError{RunID: r.id, Err: err}
			}
			return &Outcome{RunID: r.id, Response: r.resp, Gates: ws}, nil
		}
		select {
		case <-ctx.Done():
			if limit := limitOf(ctx); limit != nil {
				return nil, r.stopAtLimit(ctx, limit, nil)
			}
			return nil, &HaltError{RunID: r.id, Err: context.Cause(ctx)}
		case done := <-r.attempts:
			delete(r.inflight, done.entry.DispatchToken)
			if err := r.report(ctx, done); err != nil {
				return nil, err
			}
		case g := <-r.decisions:
			if err := r.answered(ctx, g); err != nil {
				return nil, err
			}
		case <-ticker.C:
			if err := r.refresh(ctx); err != nil {
				return nil, err
			}
		}
	}
}

// pump hands the events after the cursor to Options.Event (a progress
// view; the drive does not act on them).
func (r *run) pump(ctx context.Context) error {
	if r.d.opts.Event == nil {
		return nil
	}
	p, err := r.e.Poll(ctx, r.id, r.cursor)
	if err != nil {
		return &HaltError{RunID: r.id, Err: err}
	}
	r.cursor = p.NextCursor
	for _, ev := range p.Events {
		r.d.opts.Event(ev)
	}
	return nil
}

// refresh re-reads the run's actionable state.
func (r *run) refresh(ctx context.Context) error {
	resp, err := r.e.Status(ctx, r.id)
	if err != nil {
		return &HaltError{RunID: r.id, Err: err}
	}
	r.resp = resp
	// Questions about gates decided elsewhere are withdrawn.
	if len(r.asking) > 0 {
		waiting := map[string]bool{}
		for _, w := range resp.Waiting {
			if w.Kind == engine.WaitGate || w.Kind == engine.WaitInterrupted {
				waiting[w.StepID] = true
			}
		}
		for id, cancel := range r.asking {
			if !waiting[id] {
				cancel()
			}
		}
	}
	return nil
}

// attempt runs one agent attempt of a ready entry and reports it on
// r.attempts.
func (r *run) attempt(ctx context.Context, entry engine.ReadyEntry) {
	defer r.wg.Done()
	done := attemptDone{entry: entry}
	select {
	case r.sem <- struct{}{}:
		done.started = true
		done.res, done.patch, done.changes, done.err = r.d.runEntry(ctx, r, entry)
		<-r.sem
	case <-ctx.Done():
		done.err = context.Cause(ctx)
	}
	r.attempts <- done // read by the loop, or by drain once it has returned
}

// report sends an attempt's result to the engine.
func (r *run) report(ctx context.Context, done attemptDone) error {
	if limit := limitOf(ctx); limit != nil {
		return r.stopAtLimit(ctx, limit, &done)
	}
	if done.err != nil {
		if ctx.Err() != nil {
			return &HaltError{RunID: r.id, Err: context.Cause(ctx)}
		}
		if errors.Is(done.err, agent.ErrUnavailable) || errors.Is(done.err, agent.ErrNotFound) {
			// Not an attempt: the agent never ran. Withdraw its start so
			// that a resume does not take it for an interrupted one.
			_ = r.e.ReleaseAttempt(context.WithoutCancel(ctx), r.id, done.entry.ID, done.entry.DispatchToken, done.err.Error())
		}
		return &HaltError{RunID: r.id, StepID: done.entry.ID, Err: done.err}
	}
	return r.settle(ctx, done)
}

// settle sends an attempt's result to the engine.
func (r *run) settle(ctx context.Context, done attemptDone) error {
	res := done.res
	result := engine.StepResult{Failure: res.Failure, Usage: usageOf(res.Usage), Telemetry: telemetryOf(res.Telemetry), Stderr: res.Stderr}
	if res.Failure == "" {
		out, err := outputOf(res.Output)
		if err != nil {
			result.Failure = "the agent's output cannot be encoded as JSON: " + err.Error()
		}
		result.Output = out
	}
	result.Patch, result.Changes = done.patch, done.changes
	req := engine.StepDoneRequest{RunID: r.id, StepID: done.entry.ID, DispatchToken: done.entry.DispatchToken, Result: result}
	resp, err := r.e.StepDone(ctx, req)
	if it := done.entry.FanoutItem; it != nil && it.Policy.Isolation == string(ir.IsolationWorktree) && (err != nil || !readyAgain(resp, done.entry.ID)) {
		// The item is over (or this report could not count): its changes,
		// if any, are the engine's now.
		r.d.consumer.done(context.WithoutCancel(ctx), r.id, it.Step, done.entry.Epoch, it.ItemIndex)
	}
	if err != nil {
		return r.refused(ctx, err)
	}
	r.resp = resp
	return nil
}

// readyAgain reports whether an entry id is ready again (a retry or the
// next stage of an item).
func readyAgain(resp *engine.Response, id string) bool {
	for _, en := range resp.Ready {
		if en.ID == id {
			return true
		}
	}
	return false
}

// refused handles an engine refusal of a result or decision: one made
// stale by a change elsewhere (a revise, a revert, a cancel, a decision by
// someone else) is dropped and the drive carries on from the current
// state; anything else halts the drive.
func (r *run) refused(ctx context.Context, err error) error {
	switch {
	case errors.Is(err, engine.ErrStaleToken), errors.Is(err, engine.ErrNotAwaiting),
		errors.Is(err, engine.ErrRunCancelled), errors.Is(err, engine.ErrRunTerminal):
		return r.refresh(ctx)
	}
	return &HaltError{RunID: r.id, Err: err}
}

func (d *Driver) notice(msg string) {
	if d.opts.Notice != nil {
		d.opts.Notice(msg)
	}
}
