package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stratum-go/stratum/store"
)

// AcquireLease implements store.Store.
func (s *Store) AcquireLease(ctx context.Context, runID, owner string, ttl time.Duration) (store.Lease, error) {
	if err := store.CheckLeaseArgs(runID, owner, ttl); err != nil {
		return store.Lease{}, err
	}
	return s.leaseOp(ctx, runID, func(cur store.LeaseRecord, now time.Time) (store.LeaseRecord, error) {
		return store.GrantLease(runID, cur, owner, now, ttl)
	})
}

// RenewLease implements store.Store.
func (s *Store) RenewLease(ctx context.Context, runID string, l store.Lease, ttl time.Duration) (store.Lease, error) {
	if err := store.CheckLeaseArgs(runID, l.Owner, ttl); err != nil {
		return store.Lease{}, err
	}
	return s.leaseOp(ctx, runID, func(cur store.LeaseRecord, now time.Time) (store.LeaseRecord, error) {
		return store.RenewLeaseRecord(runID, cur, l, now, ttl)
	})
}

// ReleaseLease implements store.Store.
func (s *Store) ReleaseLease(ctx context.Context, runID string, l store.Lease) error {
	_, err := s.leaseOp(ctx, runID, func(cur store.LeaseRecord, _ time.Time) (store.LeaseRecord, error) {
		return store.ReleaseLeaseRecord(runID, cur, l)
	})
	return err
}

// leaseOp applies decide to a run's lease row in one transaction holding
// that row's lock (never the run's: leases neither wait for nor delay an
// Update), with the database's clock read after the lock is taken. The
// decisions are package store's (store/lease.go); expiries are kept to
// the microsecond, the database's precision.
func (s *Store) leaseOp(ctx context.Context, runID string, decide func(store.LeaseRecord, time.Time) (store.LeaseRecord, error)) (store.Lease, error) {
	if err := store.ValidateRunID(runID); err != nil {
		return store.Lease{}, err
	}
	if err := ctx.Err(); err != nil {
		return store.Lease{}, err
	}
	var out store.Lease
	start := time.Now()
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		b.Queue(`SELECT set_config('lock_timeout', $1, true)`, s.lockSetting)
		b.Queue(`INSERT INTO stratum_leases (run_id, owner, epoch, expires)
SELECT $1, '', 0, 'epoch' WHERE EXISTS (SELECT 1 FROM stratum_runs WHERE run_id = $1)
ON CONFLICT (run_id) DO NOTHING`, runID)
		b.Queue(`SELECT l.owner, l.epoch, l.expires, clock_timestamp(), EXISTS (SELECT 1 FROM stratum_runs WHERE run_id = $1)
FROM stratum_leases l WHERE l.run_id = $1 FOR UPDATE`, runID)
		br := tx.SendBatch(ctx, b)
		_, err := br.Exec()
		if err == nil {
			_, err = br.Exec()
		}
		var cur store.LeaseRecord
		var now time.Time
		live := false
		if err == nil {
			err = br.QueryRow().Scan(&cur.Owner, &cur.Epoch, &cur.Expires, &now, &live)
		}
		if cerr := br.Close(); err == nil {
			err = cerr
		}
		if err == pgx.ErrNoRows || (err == nil && !live) {
			return s.missingRun(ctx, tx, runID)
		}
		if err != nil {
			return err
		}
		cur.Expires, now = cur.Expires.UTC(), now.UTC()
		next, err := decide(cur, now)
		if err != nil {
			return err
		}
		next.Expires = next.Expires.Truncate(time.Microsecond)
		if _, err := tx.Exec(ctx, `UPDATE stratum_leases SET owner = $2, epoch = $3, expires = $4 WHERE run_id = $1`,
			runID, next.Owner, next.Epoch, next.Expires); err != nil {
			return err
		}
		out = store.Lease{Owner: next.Owner, Epoch: next.Epoch, Expires: next.Expires}
		return nil
	})
	switch {
	case err == nil:
		return out, nil
	case pgCode(err) == codeLockNotAvail:
		return store.Lease{}, &store.LockedError{RunID: runID, Waited: time.Since(start)}
	case pgCode(err) != "":
		return store.Lease{}, dbError(ctx, runID, "lease", err)
	}
	return store.Lease{}, err
}

// missingRun is the error for a run without a state row.
func (s *Store) missingRun(ctx context.Context, q queryRower, runID string) error {
	var p presence
	if err := q.QueryRow(ctx, `SELECT `+presenceSQL, runID).Scan(p.targets()...); err != nil {
		return dbError(ctx, runID, "read", err)
	}
	return p.missing(runID)
}
