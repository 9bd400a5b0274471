package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stratum-go/stratum/store"
)

// notifyChannel is the LISTEN channel of every store of a database; the
// payload is the run's id.
const notifyChannel = "stratum_runs"

// Watch implements store.Notifier with LISTEN/NOTIFY on a connection of
// its own. The follower registers in stratum_watchers, so that writes of
// runs nobody follows send no NOTIFY (docs/storage.md, "PostgreSQL"). It
// registers while holding the run's row lock shared: a write in progress
// (which may have looked for followers before the registration) finishes
// first, and every later write sees the registration, so no write after
// Watch returns goes unnoticed.
func (s *Store) Watch(ctx context.Context, runID string) (<-chan struct{}, error) {
	if err := store.ValidateRunID(runID); err != nil {
		return nil, err
	}
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return nil, dbError(ctx, runID, "watch", scrub(err, s.pool.Config().ConnConfig.Password))
	}
	pid := conn.PgConn().PID()
	register := func() error {
		if _, err := conn.Exec(ctx, `LISTEN `+notifyChannel); err != nil {
			return err
		}
		return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SELECT 1 FROM stratum_runs WHERE run_id = $1 FOR SHARE`, runID); err != nil {
				return err
			}
			// Registrations of followers that died without leaving.
			if _, err := tx.Exec(ctx, `DELETE FROM stratum_watchers w WHERE w.run_id = $1
AND NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = w.backend_pid)`, runID); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO stratum_watchers (run_id, backend_pid) VALUES ($1, $2) ON CONFLICT DO NOTHING`, runID, pid)
			return err
		})
	}
	if err := register(); err != nil {
		conn.Close(context.Background())
		return nil, dbError(ctx, runID, "watch", err)
	}
	ch := make(chan struct{}, 1)
	go func() {
		defer close(ch)
		defer func() {
			conn.Close(context.Background())
			cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			s.pool.Exec(cctx, `DELETE FROM stratum_watchers WHERE run_id = $1 AND backend_pid = $2`, runID, pid)
		}()
		for {
			n, err := conn.WaitForNotification(ctx)
			if err != nil {
				return
			}
			if n.Payload != runID {
				continue
			}
			select {
			case ch <- struct{}{}:
			default: // a wake-up is pending already
			}
		}
	}()
	return ch, nil
}
