package lease

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stratum-go/stratum/store"
)

func newRun(t *testing.T) (store.Store, string) {
	t.Helper()
	st := store.NewMemory()
	if _, err := st.Create(context.Background(), "run-1", store.Change{State: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	return st, "run-1"
}

// TestKeeperRenews: a kept lease outlives many ttls, nobody else gets it,
// and Release gives it up at once.
func TestKeeperRenews(t *testing.T) {
	st, run := newRun(t)
	ctx := context.Background()
	ttl := 30 * time.Millisecond
	k, err := Acquire(ctx, st, run, "a", ttl)
	if err != nil {
		t.Fatal(err)
	}
	first := k.Lease()
	for range 3 {
		// Wait for at least one renewal beyond the current expiry.
		exp := k.Lease().Expires
		for !k.Lease().Expires.After(exp) {
			time.Sleep(time.Millisecond)
		}
		if _, err := st.AcquireLease(ctx, run, "b", ttl); !errors.Is(err, store.ErrLeaseHeld) {
			t.Fatalf("another owner got a kept lease: %v", err)
		}
	}
	if !k.Valid() || k.Lease().Epoch != first.Epoch {
		t.Fatalf("renewals changed the lease: %+v then %+v", first, k.Lease())
	}
	if err := k.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := st.AcquireLease(ctx, run, "b", ttl); err != nil {
		t.Fatalf("after release: %v", err)
	}
	select {
	case <-k.Lost():
		t.Error("Release closed Lost")
	default:
	}
}

// TestKeeperLost: a renewal the store refuses (the lease is another
// owner's) closes Lost, and Release then leaves the other's lease alone.
func TestKeeperLost(t *testing.T) {
	st, run := newRun(t)
	ctx := context.Background()
	k, err := Acquire(ctx, st, run, "a", 30*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.ReleaseLease(ctx, run, k.Lease()); err != nil {
		t.Fatal(err)
	}
	if _, err := st.AcquireLease(ctx, run, "b", time.Hour); err != nil {
		t.Fatal(err)
	}
	<-k.Lost()
	if k.Valid() || !errors.Is(k.Err(), store.ErrLeaseLost) || errors.Is(k.Err(), ErrNotRenewed) {
		t.Errorf("lost lease: valid %v, err %v", k.Valid(), k.Err())
	}
	if err := k.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if snap, _ := st.Load(ctx, run); snap.Lease == nil || snap.Lease.Owner != "b" {
		t.Errorf("b's lease after a's release: %+v", snap.Lease)
	}
	if _, err := Acquire(ctx, st, run, "c", time.Second); !errors.Is(err, store.ErrLeaseHeld) {
		t.Errorf("acquire of a held lease: %v", err)
	}
}

// stalledRenewals is a store whose renewals do not answer until release
// is closed (a process held up, a store that does not answer), then
// answer as the store does; unless late, a renewal gives up when its
// context ends, as a store does.
type stalledRenewals struct {
	store.Store
	release chan struct{}
	late    bool
}

func (s stalledRenewals) RenewLease(ctx context.Context, runID string, l store.Lease, ttl time.Duration) (store.Lease, error) {
	if s.late {
		<-s.release
		return s.Store.RenewLease(context.Background(), runID, l, ttl)
	}
	select {
	case <-s.release:
	case <-ctx.Done():
		return store.Lease{}, ctx.Err()
	}
	return s.Store.RenewLease(ctx, runID, l, ttl)
}

// TestKeeperRanOut: a lease whose renewals do not answer within its ttl
// is lost, and says it ran out rather than that another owner took it,
// whether this process's deadline passes first or the store's late
// answer refuses the expired lease.
func TestKeeperRanOut(t *testing.T) {
	for _, late := range []bool{false, true} {
		st, run := newRun(t)
		stalled := stalledRenewals{Store: st, release: make(chan struct{}), late: late}
		ttl := 30 * time.Millisecond
		k, err := Acquire(context.Background(), stalled, run, "a", ttl)
		if err != nil {
			t.Fatal(err)
		}
		if late {
			// The renewal in flight answers after the store's expiry.
			time.AfterFunc(3*ttl, func() { close(stalled.release) })
		} else {
			defer close(stalled.release)
		}
		select {
		case <-k.Lost():
		case <-time.After(10 * time.Second):
			t.Fatalf("late answer %v: the lease was never lost", late)
		}
		if !errors.Is(k.Err(), ErrNotRenewed) || !errors.Is(k.Err(), store.ErrLeaseLost) {
			t.Errorf("late answer %v: %v, want it to say the lease was not renewed within its ttl", late, k.Err())
		}
	}
}
