package cli

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/stratum-go/stratum/store"
	"github.com/stratum-go/stratum/store/postgres"
)

// EnvStore names the run store of every command: a postgres:// DSN (runs
// shared by a team, docs/storage.md "PostgreSQL") or a directory (a file
// store's state root). Unset, runs are files under the default state root
// (store.DefaultRoot: STRATUM_STATE_ROOT, STRATUM_HOME/flows,
// ~/.stratum/flows).
const EnvStore = "STRATUM_STORE"

// storeOpenTimeout bounds connecting to a database and migrating its
// schema when a command starts.
const storeOpenTimeout = 30 * time.Second

// openedStore is a run store and how to name it and let it go.
type openedStore struct {
	store store.Store
	// where names it in messages: the state root, or the DSN without its
	// password.
	where string
	close func()
}

// openStore opens the store the environment names (EnvStore, else the
// default state root).
func openStore(env *Env, log *slog.Logger) (openedStore, error) {
	spec := env.getenv(EnvStore)
	if spec == "" {
		root, err := store.DefaultRoot(env.getenv)
		if err != nil {
			return openedStore{}, fmt.Errorf("locate the run store: %w", err)
		}
		spec = root
	}
	return openStoreAt(spec, log)
}

// openStoreAt opens the store spec names: a postgres:// DSN or a
// directory.
func openStoreAt(spec string, log *slog.Logger) (openedStore, error) {
	onRepair := func(runID string, removed store.Tail) {
		log.Warn("repaired an interrupted write", "run", runID, "removed", fmt.Sprintf("%+v", removed))
	}
	if postgres.IsDSN(spec) {
		ctx, cancel := context.WithTimeout(context.Background(), storeOpenTimeout)
		defer cancel()
		pg, err := postgres.Open(ctx, spec, &postgres.Options{OnRepair: onRepair})
		if err != nil {
			return openedStore{}, err // names the store, never its password
		}
		return openedStore{store: pg, where: pg.String(), close: pg.Close}, nil
	}
	root, err := filepath.Abs(spec)
	if err != nil {
		return openedStore{}, fmt.Errorf("the run store %s: %w", spec, err)
	}
	fs, err := store.NewFileStore(root, &store.Options{OnRepair: onRepair})
	if err != nil {
		return openedStore{}, fmt.Errorf("open the run store %s: %w", root, err)
	}
	return openedStore{store: fs, where: root, close: func() {}}, nil
}

// wakeups is what "stratum watch" waits on between reads of runID: the
// store's notifications when it gives them (store.Notifier, the
// PostgreSQL store's LISTEN/NOTIFY: a read only when the run was
// written), else, or once they stop, a tick every interval. stop ends
// them and waits (a little) for the store to let its follower go.
func (s *system) wakeups(ctx context.Context, runID string, interval time.Duration) (wake <-chan struct{}, stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	out := make(chan struct{}, 1)
	var notes <-chan struct{}
	if n, ok := s.store.(store.Notifier); ok {
		if ch, err := n.Watch(ctx, runID); err == nil {
			notes = ch
		} else {
			s.log.Warn("cannot follow the run's writes; reading it every interval instead", "run", runID, "interval", interval, "err", err)
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			var tick <-chan time.Time
			if notes == nil {
				tick = t.C
			}
			select {
			case <-ctx.Done():
				for notes != nil { // until the store let the follower go
					if _, ok := <-notes; !ok {
						notes = nil
					}
				}
				return
			case _, ok := <-notes:
				if !ok {
					notes = nil
					continue
				}
			case <-tick:
			}
			select {
			case out <- struct{}{}:
			default: // one wake-up pending is enough
			}
		}
	}()
	return out, func() {
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
		}
	}
}
