package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stratum-go/stratum/store"
)

const hour = time.Hour

func (s suite) lease(t *testing.T) {
	ctx := context.Background()
	st := s.newStore(t)
	h := mustCreate(t, st, "r", `{}`, 1)

	a, err := st.AcquireLease(ctx, "r", "server-a", hour)
	if err != nil || a.Owner != "server-a" || a.Epoch < 1 || a.Expires.Before(time.Now().Add(hour-time.Minute)) {
		t.Fatalf("AcquireLease = %+v, %v", a, err)
	}
	snap := mustLoad(t, st, "r")
	if snap.Lease == nil || *snap.Lease != a {
		t.Errorf("Load shows lease %+v, want %+v", snap.Lease, a)
	}
	_, err = st.AcquireLease(ctx, "r", "server-b", hour)
	var held *store.LeaseHeldError
	if !errors.As(err, &held) || !errors.Is(err, store.ErrLeaseHeld) || held.Holder != "server-a" || !held.Expires.Equal(a.Expires) {
		t.Errorf("a second owner: %v, want a *store.LeaseHeldError naming server-a until %s", err, a.Expires)
	}
	// The same owner acquiring again renews: same epoch, later expiry.
	time.Sleep(2 * time.Millisecond)
	a2, err := st.AcquireLease(ctx, "r", "server-a", hour)
	if err != nil || a2.Epoch != a.Epoch || !a2.Expires.After(a.Expires) {
		t.Errorf("re-acquire by the holder: %+v, %v; want epoch %d and a later expiry", a2, err, a.Epoch)
	}
	a3, err := st.RenewLease(ctx, "r", a2, 2*hour)
	if err != nil || a3.Epoch != a.Epoch || !a3.Expires.After(a2.Expires) {
		t.Errorf("RenewLease: %+v, %v", a3, err)
	}
	// Leases are not events and leave the run as it was.
	if snap := mustLoad(t, st, "r"); snap.Head != h || *snap.Lease != a3 {
		t.Errorf("after lease operations: %+v", snap)
	}
	if rep := mustVerify(t, st, "r"); rep.Events != 1 {
		t.Errorf("lease operations wrote events: %+v", rep)
	}
	// Update is not fenced by the store: the engine decides; the snapshot
	// shows the lease.
	var seen *store.Lease
	mustUpdate(t, st, "r", func(cur *store.Snapshot) (*store.Change, error) {
		seen = cur.Lease
		return &store.Change{Events: events("x", 2, 1)}, nil
	})
	if seen == nil || *seen != a3 {
		t.Errorf("Update's snapshot shows lease %+v, want %+v", seen, a3)
	}
	// A stale lease value is lost; release gives the lease up.
	if _, err := st.RenewLease(ctx, "r", store.Lease{Owner: "server-a", Epoch: a.Epoch + 7}, hour); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("renewing a lease with another epoch: %v, want ErrLeaseLost", err)
	}
	if err := st.ReleaseLease(ctx, "r", store.Lease{Owner: "server-b", Epoch: a.Epoch}); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("releasing someone else's lease: %v, want ErrLeaseLost", err)
	}
	if err := st.ReleaseLease(ctx, "r", a3); err != nil {
		t.Fatalf("ReleaseLease: %v", err)
	}
	if snap := mustLoad(t, st, "r"); snap.Lease != nil {
		t.Errorf("a released lease still shows: %+v", snap.Lease)
	}
	if _, err := st.RenewLease(ctx, "r", a3, hour); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("renewing a released lease: %v, want ErrLeaseLost", err)
	}
	b, err := st.AcquireLease(ctx, "r", "server-b", hour)
	if err != nil || b.Epoch <= a.Epoch {
		t.Errorf("a new owner after release: %+v, %v; want an epoch above %d", b, err, a.Epoch)
	}
	for name, call := range map[string]func() error{
		"empty owner": func() error { _, err := st.AcquireLease(ctx, "r", "", hour); return err },
		"zero ttl":    func() error { _, err := st.AcquireLease(ctx, "r", "o", 0); return err },
		"renew, ttl":  func() error { _, err := st.RenewLease(ctx, "r", b, -time.Second); return err },
	} {
		if err := call(); !errors.Is(err, store.ErrInvalidInput) {
			t.Errorf("%s: %v, want ErrInvalidInput", name, err)
		}
	}
}

func (s suite) leaseExpiry(t *testing.T) {
	ctx := context.Background()
	st := s.newStore(t)
	mustCreate(t, st, "r", `{}`, 0)
	ttl := 20 * time.Millisecond
	a, err := st.AcquireLease(ctx, "r", "dies", ttl)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * ttl) // the holder stops renewing
	if snap := mustLoad(t, st, "r"); snap.Lease != nil {
		t.Errorf("an expired lease shows in the snapshot: %+v", snap.Lease)
	}
	if _, err := st.RenewLease(ctx, "r", a, hour); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("renewing an expired lease: %v, want ErrLeaseLost", err)
	}
	b, err := st.AcquireLease(ctx, "r", "takes-over", hour)
	if err != nil || b.Epoch != a.Epoch+1 {
		t.Fatalf("take-over after expiry: %+v, %v; want epoch %d", b, err, a.Epoch+1)
	}
	if _, err := st.RenewLease(ctx, "r", a, hour); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("the old holder renewing after a take-over: %v, want ErrLeaseLost", err)
	}
	if _, err := st.AcquireLease(ctx, "r", "dies", hour); !errors.Is(err, store.ErrLeaseHeld) {
		t.Errorf("the old holder re-acquiring during the new lease: %v, want ErrLeaseHeld", err)
	}
	if err := st.ReleaseLease(ctx, "r", a); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("the old holder releasing: %v, want ErrLeaseLost", err)
	}
}

func (s suite) leaseRace(t *testing.T) {
	ctx := context.Background()
	st := s.newStore(t)
	mustCreate(t, st, "r", `{}`, 0)
	const owners = 16
	start := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var won []store.Lease
	holders := map[string]int{}
	for i := range owners {
		wg.Go(func() {
			<-start
			l, err := st.AcquireLease(ctx, "r", fmt.Sprintf("owner-%d", i), hour)
			mu.Lock()
			defer mu.Unlock()
			var held *store.LeaseHeldError
			switch {
			case err == nil:
				won = append(won, l)
			case errors.As(err, &held):
				holders[held.Holder]++
			default:
				t.Error(err)
			}
		})
	}
	close(start)
	wg.Wait()
	if len(won) != 1 {
		t.Fatalf("%d owners were granted the lease at once: %+v", len(won), won)
	}
	if holders[won[0].Owner] != owners-1 || len(holders) != 1 {
		t.Errorf("the refused owners were told the holder is %v, want %s", holders, won[0].Owner)
	}
	if snap := mustLoad(t, st, "r"); snap.Lease == nil || *snap.Lease != won[0] {
		t.Errorf("Load shows %+v, want the winner %+v", snap.Lease, won[0])
	}
}

func (s suite) leaseNotBlocking(t *testing.T) {
	ctx := context.Background()
	st := s.newStore(t)
	mustCreate(t, st, "r", `{}`, 0)
	holding, done, finished := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		st.Update(ctx, "r", func(*store.Snapshot) (*store.Change, error) {
			close(holding)
			<-done
			return &store.Change{Events: events("x", 1, 1)}, nil
		})
	}()
	<-holding
	l, err := st.AcquireLease(ctx, "r", "o", hour)
	if err == nil {
		l, err = st.RenewLease(ctx, "r", l, hour)
	}
	close(done)
	<-finished
	if err != nil {
		t.Errorf("a lease operation while an Update holds the run's lock: %v", err)
	}
	if snap := mustLoad(t, st, "r"); snap.Head.Seq != 1 || snap.Lease == nil || *snap.Lease != l {
		t.Errorf("after both: %+v", snap)
	}
}
