package driver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/stratum-go/stratum/engine"
)

// Background drives the background runs of a store (docs/mcp.md,
// "Background flows"): the runs started with Start, and every other
// background run it finds in the store whose lease no live process
// holds (a server that died, or this one restarted). Each is driven by
// the Driver's one loop under the run's lease (engine.Hold), so that two
// servers sharing a store never drive one run: the one holding the lease
// drives; the others take the run over once its lease runs out.
//
// A run that waits only for a person's decision is paused: its drive
// ends, its lease is kept, and it is driven again as soon as its log
// moves (a decision made over MCP, with stratum gate, or by another
// server). A drive that halts for a reason outside the run (an agent that
// cannot run) is recorded (driver_halted) and tried again after
// BackgroundOptions.Retry.
type Background struct {
	d    *Driver
	e    *engine.Engine
	opts BackgroundOptions

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	kick   chan struct{}

	mu   sync.Mutex
	runs map[string]*bgRun
	// settled are runs that need no driver: started in the foreground,
	// or finished (both for good).
	settled map[string]bool
	closed  bool
}

// BackgroundOptions configure a Background.
type BackgroundOptions struct {
	// Scan is how often the store is scanned for background runs to take
	// over, and paused runs whose gates were decided elsewhere; zero means
	// a quarter of the engine's lease ttl, at most 2 seconds.
	Scan time.Duration
	// Retry is how long a halted run waits before it is driven again;
	// zero means 30 seconds.
	Retry time.Duration
	// Log receives what the supervisor does (runs taken over, halted);
	// nil discards it.
	Log *slog.Logger
}

// bgRun is a background run this process knows of.
type bgRun struct {
	id string
	// hold is this process's lease on the run, nil when another process
	// (or none) holds it.
	hold    *engine.Hold
	driving bool
	// done is closed when the current drive ends.
	done chan struct{}
	// pausedAt is the head seq the run was paused at (waiting for gates),
	// 0 when it is not paused; haltedUntil is when a halted run is
	// driven again.
	pausedAt    int64
	haltedUntil time.Time
	// stop ends the current drive; stopping says it was ended on purpose
	// (StopDriving).
	stop     context.CancelFunc
	stopping bool
}

// NewBackground returns a Background driving with d over e. Call Start
// to begin supervising and Close to stop.
func NewBackground(d *Driver, e *engine.Engine, opts BackgroundOptions) *Background {
	if opts.Scan <= 0 {
		opts.Scan = min(e.LeaseTTL()/4, 2*time.Second)
	}
	if opts.Retry <= 0 {
		opts.Retry = 30 * time.Second
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Background{d: d, e: e, opts: opts, ctx: ctx, cancel: cancel, kick: make(chan struct{}, 1),
		runs: map[string]*bgRun{}, settled: map[string]bool{}}
}

// Supervise starts scanning the store: background runs found without a
// live driver are taken over, in this process and from now on. It
// returns at once.
func (b *Background) Supervise() {
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		t := time.NewTicker(b.opts.Scan)
		defer t.Stop()
		for {
			b.scan()
			select {
			case <-b.ctx.Done():
				return
			case <-t.C:
			case <-b.kick:
			}
		}
	}()
}

// Close stops every drive (their agents are stopped and reaped), gives
// the leases up so that another server can take the runs over at once,
// and waits.
func (b *Background) Close() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.cancel()
	b.wg.Wait()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, r := range b.runs {
		if r.hold != nil {
			r.hold.Release()
			r.hold = nil
		}
	}
}

// Kick makes the supervisor look at the store now (after a gate decision
// made through this process, say).
func (b *Background) Kick() {
	select {
	case b.kick <- struct{}{}:
	default:
	}
}

// Start plans a background run (req.Background is set) and drives it
// from this process. The answer is the run's background poll without
// events: status running (or terminal when the plan finished the run).
func (b *Background) Start(ctx context.Context, req engine.PlanRequest) (*engine.BackgroundPoll, error) {
	req.Background = true
	resp, err := b.e.Plan(ctx, req)
	if err != nil {
		return nil, err
	}
	b.takeOver(resp.RunID)
	return b.status(ctx, resp.RunID)
}

// status is a background poll without events.
func (b *Background) status(ctx context.Context, runID string) (*engine.BackgroundPoll, error) {
	info, err := b.e.BackgroundInfo(ctx, runID)
	if err != nil {
		return nil, err
	}
	return b.e.PollBackground(ctx, runID, info.Head)
}

// Cancel cancels a background run (engine.CancelBackground: every
// outstanding issuance is burnt) and waits, up to wait, for its driver,
// in this process or another one, to stop its agents and give the lease
// up. The answer is the run's background poll without events.
func (b *Background) Cancel(ctx context.Context, runID string, wait time.Duration) (*engine.BackgroundPoll, error) {
	if _, err := b.e.CancelBackground(ctx, runID, "cancelled with stratum_flow_cancel_bg"); err != nil {
		return nil, err
	}
	b.StopDriving(runID)
	_ = awaitRelease(ctx, b.e, runID, wait)
	return b.status(ctx, runID)
}

// StopDriving ends this process's drive of a run now (its agents are
// stopped and reaped) and gives its lease up: for a run that was just
// cancelled or finished.
func (b *Background) StopDriving(runID string) {
	b.mu.Lock()
	r := b.runs[runID]
	var done chan struct{}
	if r != nil && r.driving {
		r.stopping = true
		r.stop()
		done = r.done
	}
	b.mu.Unlock()
	if done != nil {
		<-done
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if r := b.runs[runID]; r != nil && !r.driving && r.hold != nil {
		r.hold.Release()
		r.hold = nil
	}
}

// scan looks at every run of the store once.
func (b *Background) scan() {
	heads, err := b.e.RunHeads(b.ctx)
	if err != nil {
		if b.ctx.Err() == nil {
			b.opts.Log.Warn("background runs: cannot list the store", "err", err)
		}
		return
	}
	now := time.Now()
	for id, rh := range heads {
		if b.ctx.Err() != nil {
			return
		}
		head := rh.Seq
		b.mu.Lock()
		settled, r := b.settled[id], b.runs[id]
		b.mu.Unlock()
		if rh.Settled && !settled && (r == nil || !r.driving) {
			b.settle(id)
			continue
		}
		if settled || r != nil && r.driving {
			continue
		}
		if r == nil {
			info, err := b.e.BackgroundInfo(b.ctx, id)
			if err != nil {
				continue // unreadable now (being created, corrupt): looked at again next time
			}
			if !info.Background || info.Done {
				b.settle(id)
				continue
			}
			if info.Unclaimed && now.Sub(info.Since) < b.e.LeaseTTL() {
				continue // just started: its own server takes it (looked at again next scan)
			}
			r = b.known(id)
		}
		b.mu.Lock()
		hold := r.hold
		if hold != nil && !hold.Valid() {
			hold.Release()
			r.hold, hold = nil, nil
		}
		relaunch := hold != nil && (r.pausedAt != 0 && head != r.pausedAt || !r.haltedUntil.IsZero() && now.After(r.haltedUntil))
		b.mu.Unlock()
		switch {
		case relaunch:
			b.launch(r)
		case hold == nil:
			b.takeOver(id)
		}
	}
	// Runs removed from the store are forgotten.
	b.mu.Lock()
	defer b.mu.Unlock()
	for id, r := range b.runs {
		if _, ok := heads[id]; !ok && !r.driving {
			if r.hold != nil {
				r.hold.Release()
			}
			delete(b.runs, id)
		}
	}
}

// known returns the entry of a background run, adding it.
func (b *Background) known(id string) *bgRun {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.runs[id]
	if r == nil {
		r = &bgRun{id: id}
		b.runs[id] = r
	}
	return r
}

// settle records a run that needs no driver any more, releasing this
// process's lease on it.
func (b *Background) settle(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.settled[id] = true
	if r := b.runs[id]; r != nil && !r.driving {
		if r.hold != nil {
			r.hold.Release()
		}
		delete(b.runs, id)
	}
}

// takeOver tries to take the run's lease and, if it gets it, drives the
// run. A run another process holds is left to it.
func (b *Background) takeOver(id string) {
	r := b.known(id)
	b.mu.Lock()
	if r.driving || r.hold != nil || b.closed {
		b.mu.Unlock()
		return
	}
	b.mu.Unlock()
	hold, err := b.e.Hold(b.ctx, id)
	if err != nil {
		b.opts.Log.Debug("background run not taken over", "run", id, "err", err)
		return // held elsewhere (or gone): looked at again next scan
	}
	b.opts.Log.Info("background run: driving", "run", id, "epoch", hold.Lease().Epoch)
	b.mu.Lock()
	if r.hold != nil || r.driving || b.closed {
		b.mu.Unlock()
		hold.Release()
		return
	}
	r.hold = hold
	b.mu.Unlock()
	b.launch(r)
}

// launch starts a drive of a run whose lease this process holds.
func (b *Background) launch(r *bgRun) {
	b.mu.Lock()
	if r.driving || r.hold == nil || b.closed {
		b.mu.Unlock()
		return
	}
	ctx, stop := context.WithCancel(b.ctx)
	r.driving, r.stop, r.done, r.stopping = true, stop, make(chan struct{}), false
	r.pausedAt, r.haltedUntil = 0, time.Time{}
	hold := r.hold
	b.wg.Add(1)
	b.mu.Unlock()
	go func() {
		defer b.wg.Done()
		defer stop()
		out, err := b.d.driveHeld(ctx, b.e, r.id, hold)
		b.ended(r, hold, out, err)
	}()
}

// ended decides what follows a drive.
func (b *Background) ended(r *bgRun, hold *engine.Hold, out *Outcome, err error) {
	next := func(paused int64, halted time.Time, keep bool) {
		b.mu.Lock()
		defer b.mu.Unlock()
		r.driving = false
		r.pausedAt, r.haltedUntil = paused, halted
		if !keep && r.hold == hold {
			hold.Release()
			r.hold = nil
		}
		close(r.done)
	}
	ctx := context.WithoutCancel(b.ctx)
	switch {
	case err == nil && out.Finished():
		next(0, time.Time{}, false)
		b.settle(r.id)
	case err == nil:
		// Stopped at its gates: paused, the lease kept. The log's head
		// is read after the drive ended, so a decision made meanwhile
		// shows as a head that moved or a run no longer paused.
		info, ierr := b.e.BackgroundInfo(ctx, r.id)
		switch {
		case ierr != nil:
			next(0, time.Time{}, false)
		case info.View.Status != engine.BgPausedGate:
			next(0, time.Time{}, true)
			b.launch(r)
		default:
			next(info.Head, time.Time{}, true)
		}
	case b.ctx.Err() != nil || !hold.Valid():
		// Shutting down, or the lease was lost: another process drives.
		next(0, time.Time{}, false)
	case errors.Is(err, engine.ErrRunCancelled), errors.Is(err, engine.ErrRunTerminal), errors.Is(err, engine.ErrNotBackground):
		next(0, time.Time{}, false)
		b.settle(r.id)
	case errors.Is(err, engine.ErrRunLeased), errors.Is(err, engine.ErrRunNotFound):
		next(0, time.Time{}, false)
	case r.wasStopped(b):
		next(0, time.Time{}, false)
	case errors.Is(err, engine.ErrEffectNotAllowed):
		// This server's policy does not allow what the run needs: another
		// server (started with more allowed) may drive it.
		b.opts.Log.Warn("background run not driven here", "run", r.id, "reason", err.Error())
		_ = b.e.DriverHalted(ctx, r.id, "not driven by "+b.e.Owner()+": "+err.Error())
		next(0, time.Time{}, false)
		b.settle(r.id)
	default:
		reason := err.Error()
		b.opts.Log.Warn("background run halted", "run", r.id, "reason", reason, "retry", b.opts.Retry)
		_ = b.e.DriverHalted(ctx, r.id, fmt.Sprintf("%s (tried again in %s)", reason, b.opts.Retry))
		next(0, time.Now().Add(b.opts.Retry), true)
	}
}

// wasStopped reports whether the run's drive was ended on purpose
// (StopDriving).
func (r *bgRun) wasStopped(b *Background) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return r.stopping
}

// driveHeld drives a background run under hold: it takes the run over
// (engine.TakeOver), then runs the one loop until the run finishes, waits
// only for gates, or the drive halts. Losing the lease ends the drive
// (its agents are stopped).
func (d *Driver) driveHeld(ctx context.Context, e *engine.Engine, runID string, hold *engine.Hold) (*Outcome, error) {
	ctx, stop := heldContext(ctx, runID, hold)
	defer stop()
	resp, err := e.TakeOver(ctx, runID)
	if err != nil {
		return nil, leaseCause(ctx, runID, err)
	}
	if d.opts.Plan == nil {
		if plan, err := e.RunPlan(ctx, runID); err == nil {
			d.track(runID, plan)
			defer d.untrack(runID)
		}
	}
	out, err := d.drive(ctx, e, resp, 0)
	return out, leaseCause(ctx, runID, err)
}
