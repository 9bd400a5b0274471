package lease

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/stratum-go/stratum/store"
)

// ErrNotRenewed is why a lease whose ttl ran out on this process's clock
// before a renewal succeeded was lost (Keeper.Err wraps it): the process
// was held up, or the store did not answer in time. Another process may
// have taken the run since, or not.
var ErrNotRenewed = errors.New("not renewed within its ttl")

// Keeper holds one run's lease in a store until Release, renewing it in
// the background. Its methods are safe for concurrent use.
type Keeper struct {
	st    store.Store
	runID string
	ttl   time.Duration

	mu  sync.Mutex
	cur store.Lease
	// deadline is when the lease runs out on this process's monotonic
	// clock: the send time of the last successful grant or renewal plus
	// the ttl.
	deadline time.Time
	err      error // why the lease was lost

	lost     chan struct{}
	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
}

// Acquire takes the run's lease for owner and keeps renewing it every
// ttl/3 until Release or until it is lost. The error is the store's: a
// *store.LeaseHeldError (errors.Is store.ErrLeaseHeld) when another owner
// holds it.
func Acquire(ctx context.Context, st store.Store, runID, owner string, ttl time.Duration) (*Keeper, error) {
	sent := time.Now()
	l, err := st.AcquireLease(ctx, runID, owner, ttl)
	if err != nil {
		return nil, err
	}
	k := &Keeper{st: st, runID: runID, ttl: ttl, cur: l, deadline: sent.Add(ttl),
		lost: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	go k.heartbeat()
	return k, nil
}

// Lease is the lease as last granted or renewed.
func (k *Keeper) Lease() store.Lease {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.cur
}

// Lost is closed when the lease is lost: a renewal was refused (the store
// gave the run to another owner) or the ttl ran out on this process's
// clock before a renewal succeeded. It is never closed by Release.
func (k *Keeper) Lost() <-chan struct{} { return k.lost }

// Err says why the lease was lost (nil while it is held).
func (k *Keeper) Err() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.err
}

// Valid reports whether the lease is still held by this process's count:
// not lost and its ttl not run out.
func (k *Keeper) Valid() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.err == nil && time.Now().Before(k.deadline)
}

// Release stops renewing and gives the lease up in the store. A lease
// already lost is not released (it is no longer this holder's).
func (k *Keeper) Release(ctx context.Context) error {
	k.stopOnce.Do(func() { close(k.stop) })
	<-k.done
	k.mu.Lock()
	lost, l := k.err != nil, k.cur
	k.mu.Unlock()
	if lost {
		return nil
	}
	err := k.st.ReleaseLease(ctx, k.runID, l)
	if errors.Is(err, store.ErrLeaseLost) {
		return nil
	}
	return err
}

// heartbeat renews the lease every ttl/3 (sooner after a failed attempt)
// until stopped, and declares it lost when a renewal is refused or the
// deadline passes.
func (k *Keeper) heartbeat() {
	defer close(k.done)
	interval := max(k.ttl/3, time.Millisecond)
	wait := interval
	for {
		k.mu.Lock()
		left := time.Until(k.deadline)
		k.mu.Unlock()
		timer := time.NewTimer(min(wait, max(left, 0)))
		select {
		case <-k.stop:
			timer.Stop()
			return
		case <-timer.C:
		}
		k.mu.Lock()
		cur, deadline := k.cur, k.deadline
		k.mu.Unlock()
		if !time.Now().Before(deadline) {
			k.lose(fmt.Errorf("run %s: %w: %w %s", k.runID, store.ErrLeaseLost, ErrNotRenewed, k.ttl))
			return
		}
		sent := time.Now()
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		l, err := k.st.RenewLease(ctx, k.runID, cur, k.ttl)
		cancel()
		switch {
		case err == nil:
			k.mu.Lock()
			k.cur, k.deadline = l, sent.Add(k.ttl)
			k.mu.Unlock()
			wait = interval
		case errors.Is(err, store.ErrLeaseLost) && !time.Now().Before(deadline):
			// Refused after this process's deadline: the store expired the
			// lease before the renewal reached it.
			k.lose(fmt.Errorf("%w %s: %w", ErrNotRenewed, k.ttl, err))
			return
		case errors.Is(err, store.ErrLeaseLost), errors.Is(err, store.ErrRunNotFound):
			k.lose(err)
			return
		default:
			// A store that failed this once (a slow disk, a dropped
			// connection): try again soon, until the deadline.
			wait = max(interval/4, time.Millisecond)
		}
	}
}

func (k *Keeper) lose(err error) {
	k.mu.Lock()
	k.err = err
	k.mu.Unlock()
	close(k.lost)
}
