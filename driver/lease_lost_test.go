package driver

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/store"
)

// A drive whose lease another process took while its agent ran (here:
// released behind its back and granted to another owner) stops its agents
// and says why: the lease was lost (or, when a report reaches the engine
// first, that another process holds it), never a bare "context canceled",
// whichever call the cancellation cut short.
func TestDriveSaysTheLeaseWasLost(t *testing.T) {
	f := newFixture(t)
	started := filepath.Join(t.TempDir(), "started")
	d := New(Options{Agent: script(t, "touch "+started+"\nsleep 30\necho '{}'\n"), PollInterval: 10 * time.Millisecond})
	e := engine.New(f.store, engine.Options{Dispatcher: d.Dispatcher(), Workspace: engine.WorkspacePolicy{Default: f.ws},
		Evaluator: Shell{}, LeaseTTL: 300 * time.Millisecond})
	t.Cleanup(e.Close)
	ctx := context.Background()
	done := make(chan error, 1)
	go func() {
		_, err := d.Start(ctx, e, engine.PlanRequest{Spec: []byte(twoStepSpec), Input: []byte(`{}`)})
		done <- err
	}()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if time.Now().After(deadline) {
			t.Fatal("the drive never took its lease")
		}
		select {
		case err := <-done:
			t.Fatalf("the drive ended before its lease was taken: %v", err)
		default:
		}
		runs, err := f.store.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(started); err == nil && len(runs) == 1 {
			snap, err := f.store.Load(ctx, runs[0].ID)
			if err != nil {
				t.Fatal(err)
			}
			if snap.Lease != nil {
				if err := f.store.ReleaseLease(ctx, runs[0].ID, *snap.Lease); err != nil {
					t.Fatal(err)
				}
				if _, err := f.store.AcquireLease(ctx, runs[0].ID, "another process", time.Hour); err != nil {
					t.Fatal(err)
				}
				break
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "the lease was lost: another process drives the run") && !strings.Contains(err.Error(), "another process, which holds its lease") {
			t.Fatalf("Start: %v, want it to say the lease was lost", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the drive did not stop when its lease was lost")
	}
}

// unansweredRenewals is a store whose lease renewals never answer before
// their context ends: the process renewing is held up, or the store is.
type unansweredRenewals struct{ store.Store }

func (unansweredRenewals) RenewLease(ctx context.Context, _ string, _ store.Lease, _ time.Duration) (store.Lease, error) {
	<-ctx.Done()
	return store.Lease{}, ctx.Err()
}

// A drive whose lease runs out because it could not be renewed in time
// (nobody took it) stops its agents and says so, not that another
// process drives the run.
func TestDriveSaysTheLeaseRanOut(t *testing.T) {
	f := newFixture(t)
	d := New(Options{Agent: script(t, "sleep 30\necho '{}'\n"), PollInterval: 10 * time.Millisecond})
	e := engine.New(unansweredRenewals{f.store}, engine.Options{Dispatcher: d.Dispatcher(), Workspace: engine.WorkspacePolicy{Default: f.ws},
		Evaluator: Shell{}, LeaseTTL: 300 * time.Millisecond})
	t.Cleanup(e.Close)
	done := make(chan error, 1)
	go func() {
		_, err := d.Start(context.Background(), e, engine.PlanRequest{Spec: []byte(twoStepSpec), Input: []byte(`{}`)})
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "the lease was lost: it ran out before this process could renew it") {
			t.Fatalf("Start: %v, want it to say the lease ran out", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the drive did not stop when its lease ran out")
	}
}
