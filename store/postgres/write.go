package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stratum-go/stratum/store"
)

const (
	insertEventsSQL = `INSERT INTO stratum_events (run_id, seq, line)
SELECT $1, t.seq, t.line FROM unnest($2::bigint[], $3::text[]) AS t(seq, line)`
	insertStateSQL = `INSERT INTO stratum_runs (run_id, rev, seq, head, summary, saved_at, state, state_check)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`
	updateStateSQL = `UPDATE stratum_runs SET rev = $2, seq = $3, head = $4, summary = $5, saved_at = $6,
	state = coalesce($7, state), state_check = $8 WHERE run_id = $1`
	insertHeadSQL = `INSERT INTO stratum_heads (run_id, rev, seq, hash, state_check, summary, saved_at)
VALUES ($1, $2, $3, $4, $5, $6, $7)`
	upsertHeadSQL = insertHeadSQL + `
ON CONFLICT (run_id) DO UPDATE SET rev = excluded.rev, seq = excluded.seq, hash = excluded.hash,
	state_check = excluded.state_check, summary = excluded.summary, saved_at = excluded.saved_at`
	insertLeaseSQL = `INSERT INTO stratum_leases (run_id, owner, epoch, expires) VALUES ($1, '', 0, 'epoch')
ON CONFLICT (run_id) DO NOTHING`
	insertKeptSQL = `INSERT INTO stratum_kept (run_id, name, data) VALUES ($1, $2, $3)`
	// notifySQL wakes the followers of a run (Watch), if it has any: a
	// NOTIFY serialises the commits of every notifying transaction of the
	// database, a price only watched runs pay.
	notifySQL = `SELECT pg_notify('` + notifyChannel + `', $1) FROM stratum_watchers WHERE run_id = $1 LIMIT 1`
)

// queueEvents queues the insertion of a write's events.
func queueEvents(b *pgx.Batch, runID string, enc []store.EncodedEvent) {
	if len(enc) == 0 {
		return
	}
	seqs := make([]int64, len(enc))
	lines := make([]string, len(enc))
	for i, e := range enc {
		seqs[i], lines[i] = e.Event.Seq, string(e.Line)
	}
	b.Queue(insertEventsSQL, runID, seqs, lines)
}

func headArgs(rec store.HeadRecord) []any {
	return []any{rec.RunID, rec.Rev, rec.Head.Seq, rec.Head.Hash, rec.State, bytesText(rec.Summary), rec.SavedAt}
}

// clock reads the database's clock: the store's clock.
func (s *Store) clock(ctx context.Context) (time.Time, error) {
	var now time.Time
	err := s.pool.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&now)
	return now.UTC(), err
}

// Create implements store.Store: the head record, the state row, the
// events and the lease row are inserted in one transaction (one batch), so
// the run appears whole or not at all, and the primary keys make two
// Creates of one id exclusive.
func (s *Store) Create(ctx context.Context, runID string, c store.Change) (store.Head, error) {
	if err := store.ValidateRunID(runID); err != nil {
		return store.Head{}, err
	}
	if err := ctx.Err(); err != nil {
		return store.Head{}, err
	}
	if c.State == nil {
		return store.Head{}, fmt.Errorf("run %s: %w: Create needs a state document", runID, store.ErrInvalidInput)
	}
	p, err := store.PrepareChange(runID, &c)
	if err != nil {
		return store.Head{}, err
	}
	enc, err := store.EncodeWrite(runID, store.Head{Hash: store.GenesisHash(runID)}, p.Events)
	if err != nil {
		return store.Head{}, err
	}
	now, err := s.clock(ctx)
	if err != nil {
		return store.Head{}, dbError(ctx, runID, "create", err)
	}
	st := store.StateRecord{RunID: runID, Rev: 1, Head: headOf(runID, enc), Summary: p.Summary, SavedAt: now, State: p.State}
	if err := s.insertRun(ctx, st, enc, nil); err != nil {
		return store.Head{}, err
	}
	return st.Head, nil
}

// headOf is the head a write leaves on a new run.
func headOf(runID string, enc []store.EncodedEvent) store.Head {
	if len(enc) == 0 {
		return store.Head{Hash: store.GenesisHash(runID)}
	}
	last := enc[len(enc)-1].Event
	return store.Head{Seq: last.Seq, Hash: last.Hash}
}

// insertRun stores a new run in one implicit transaction.
func (s *Store) insertRun(ctx context.Context, st store.StateRecord, enc []store.EncodedEvent, kept []store.KeptData) error {
	id := st.RunID
	check := st.Check()
	b := &pgx.Batch{}
	b.Queue(insertHeadSQL, headArgs(store.RecordOf(st, check))...)
	b.Queue(insertStateSQL, id, st.Rev, st.Head.Seq, st.Head.Hash, bytesText(st.Summary), st.SavedAt, st.State, check)
	queueEvents(b, id, enc)
	for _, k := range kept {
		b.Queue(insertKeptSQL, id, k.Name, k.Data)
	}
	b.Queue(insertLeaseSQL, id)
	err := s.pool.SendBatch(ctx, b).Close()
	if pgCode(err) == codeUniqueViolation {
		var live bool
		if s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM stratum_runs WHERE run_id = $1)`, id).Scan(&live) == nil && !live {
			return fmt.Errorf("run %s: %w: its data was removed but its head record remains", id, store.ErrRunExists)
		}
		return fmt.Errorf("run %s: %w", id, store.ErrRunExists)
	}
	if err != nil {
		return dbError(ctx, id, "create", err)
	}
	return nil
}

// Load implements store.Store: one statement, no lock. A head record one
// write behind the state (which only an edit of the tables leaves here)
// is completed when the run's row lock is free at once.
func (s *Store) Load(ctx context.Context, runID string) (*store.Snapshot, error) {
	if err := store.ValidateRunID(runID); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	row, err := readRun(ctx, s.pool, runID)
	if err != nil {
		return nil, dbError(ctx, runID, "load", err)
	}
	v, err := inspect(row)
	if err != nil {
		return nil, err
	}
	if v.recState == store.HeadRecordBehind {
		s.completeRecord(ctx, runID)
	}
	return v.snapshot(), nil
}

// completeRecord writes the head record of a run whose record is one write
// behind, if its row lock is free at once.
func (s *Store) completeRecord(ctx context.Context, runID string) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, `SELECT 1 FROM stratum_runs WHERE run_id = $1 FOR UPDATE NOWAIT`, runID); err != nil {
		return
	}
	row, err := readRun(ctx, tx, runID)
	if err != nil {
		return
	}
	if v, err := inspect(row); err != nil || v.recState != store.HeadRecordBehind {
		return
	}
	if _, err := tx.Exec(ctx, upsertHeadSQL, headArgs(store.RecordOf(row.st, row.check))...); err != nil {
		return
	}
	tx.Commit(ctx)
}

// Update implements store.Store as one transaction on one connection, in
// two round trips around fn: BEGIN, the run's row lock (FOR UPDATE, under
// lock_timeout) and the read of the run; then the new events, the state
// row, the head record and the followers' notification, and COMMIT. The
// row lock is the run's lock: it excludes other writers, never readers,
// and dies with the connection of a process that dies.
func (s *Store) Update(ctx context.Context, runID string, fn func(cur *store.Snapshot) (*store.Change, error)) (store.Head, error) {
	if err := store.ValidateRunID(runID); err != nil {
		return store.Head{}, err
	}
	if err := ctx.Err(); err != nil {
		return store.Head{}, err
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return store.Head{}, dbError(ctx, runID, "connect", err)
	}
	defer conn.Release()
	tx := &rawTx{conn: conn}
	defer tx.rollback()
	row, err := s.lockAndRead(ctx, tx, runID)
	if err != nil {
		return store.Head{}, err
	}
	v, err := inspect(row)
	if err != nil {
		return store.Head{}, err
	}
	cur := v.head()
	snap := v.snapshot()
	snap.State, snap.Summary = clone(snap.State), clone(snap.Summary) // fn may scribble on them
	var pre []store.NewEvent
	var kept store.KeptTail
	if v.tail.Bytes > 0 {
		ev, k := store.RepairTail(runID, cur, v.tailData, v.tail, row.now)
		enc, err := store.EncodeWrite(runID, cur, []store.NewEvent{ev})
		if err != nil {
			return store.Head{}, fmt.Errorf("run %s: repair event: %w", runID, err)
		}
		pre, kept = []store.NewEvent{ev}, k
		snap.Head = store.Head{Seq: cur.Seq + 1, Hash: enc[0].Event.Hash}
	}
	change, err := fn(snap)
	if err != nil {
		return store.Head{}, err
	}
	b := &pgx.Batch{}
	if change == nil || (change.State == nil && change.Summary == nil && len(change.Events) == 0) {
		if v.recState != store.HeadRecordBehind {
			return cur, nil
		}
		b.Queue(upsertHeadSQL, headArgs(store.RecordOf(row.st, row.check))...)
		return cur, tx.commit(ctx, runID, b)
	}
	p, err := store.PrepareChange(runID, change)
	if err != nil {
		return store.Head{}, err
	}
	enc, err := store.EncodeWrite(runID, cur, append(pre, p.Events...))
	if err != nil {
		return store.Head{}, err
	}
	next := row.st
	next.Rev++
	next.SavedAt = row.now
	if len(enc) > 0 {
		last := enc[len(enc)-1].Event
		next.Head = store.Head{Seq: last.Seq, Hash: last.Hash}
	}
	if p.State != nil {
		next.State = p.State
	}
	if p.Summary != nil {
		next.Summary = p.Summary
	}
	check := next.Check()
	if len(pre) > 0 {
		b.Queue(insertKeptSQL, runID, kept.Name, v.tailData)
		b.Queue(`DELETE FROM stratum_events WHERE run_id = $1 AND seq > $2`, runID, cur.Seq)
	}
	queueEvents(b, runID, enc)
	b.Queue(updateStateSQL, runID, next.Rev, next.Head.Seq, next.Head.Hash, bytesText(next.Summary), next.SavedAt, p.State, check)
	b.Queue(upsertHeadSQL, headArgs(store.RecordOf(next, check))...)
	b.Queue(notifySQL, runID)
	if err := tx.commit(ctx, runID, b); err != nil {
		return store.Head{}, err
	}
	if len(pre) > 0 && s.onRepair != nil {
		t := v.tail
		t.KeptAs = kept.Name
		s.onRepair(runID, t)
	}
	return next.Head, nil
}

// lockAndRead begins tx, takes the run's row lock within the lock timeout
// and reads the run, in one round trip. The read is its own statement
// after the lock: in READ COMMITTED it sees what the previous holder
// committed.
func (s *Store) lockAndRead(ctx context.Context, tx *rawTx, runID string) (runRow, error) {
	start := time.Now()
	b := &pgx.Batch{}
	b.Queue(`BEGIN`)
	b.Queue(`SELECT set_config('lock_timeout', $1, true)`, s.lockSetting)
	b.Queue(`SELECT 1 FROM stratum_runs WHERE run_id = $1 FOR UPDATE`, runID)
	b.Queue(readRunSQL, runID, maxTailRows+1)
	br := tx.conn.SendBatch(ctx, b)
	_, err := br.Exec()
	if err == nil {
		tx.open = true
		_, err = br.Exec()
	}
	if err == nil {
		_, err = br.Exec()
	}
	var row runRow
	if err == nil {
		row, err = scanRun(runID, br.QueryRow())
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	switch {
	case err == nil:
		return row, nil
	case pgCode(err) == codeLockNotAvail:
		return runRow{}, &store.LockedError{RunID: runID, Waited: time.Since(start)}
	}
	return runRow{}, dbError(ctx, runID, "lock and read", err)
}

// rawTx is a transaction begun and ended by statements in batches, so that
// BEGIN and COMMIT share round trips with the work.
type rawTx struct {
	conn *pgxpool.Conn
	open bool
}

// commit runs b and COMMIT as one round trip.
func (t *rawTx) commit(ctx context.Context, runID string, b *pgx.Batch) error {
	b.Queue(`COMMIT`)
	br := t.conn.SendBatch(ctx, b)
	var err error
	for range b.Len() {
		if _, err = br.Exec(); err != nil {
			break
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return dbError(ctx, runID, "write", err)
	}
	t.open = false
	return nil
}

// rollback ends an open transaction; a connection left in one is
// destroyed by the pool on release.
func (t *rawTx) rollback() {
	if !t.open {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	t.conn.Exec(ctx, `ROLLBACK`)
}

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte(nil), b...)
}
