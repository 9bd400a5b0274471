package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/stratum-go/stratum/store"
)

// Verify implements store.Store. It reads in one repeatable-read,
// read-only transaction (one snapshot: it neither waits for writers nor
// delays them): the checks of Load, then every row of the chain from seq 1
// to the head, in order, each line checked and linked, with no seq
// missing, and the data every repair kept aside.
func (s *Store) Verify(ctx context.Context, runID string, opts store.VerifyOptions) (*store.VerifyReport, error) {
	if err := store.ValidateRunID(runID); err != nil {
		return nil, err
	}
	if err := store.CheckAnchor(runID, opts.Head); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rep, _, err := s.verify(ctx, runID, opts.Head, false)
	return rep, err
}

// verify is Verify, and with collect the read of a run for ExportRun.
func (s *Store) verify(ctx context.Context, runID, anchor string, collect bool) (*store.VerifyReport, *store.RunCopy, error) {
	var rep *store.VerifyReport
	var c *store.RunCopy
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		row, err := readRun(ctx, tx, runID)
		if err != nil {
			return dbError(ctx, runID, "verify", err)
		}
		v, err := inspect(row)
		if errors.Is(err, store.ErrRunNotFound) && anchor != "" {
			return store.AnchoredMissingError(runID, anchor)
		}
		if err != nil {
			return err
		}
		rep = &store.VerifyReport{RunID: runID, StateBytes: len(row.st.State), HeadRecord: v.recState, Tail: v.tail}
		kept, err := readKept(ctx, tx, runID)
		if err != nil {
			return dbError(ctx, runID, "verify", err)
		}
		if collect {
			c = &store.RunCopy{RunID: runID, State: row.st.State, Summary: row.st.Summary}
		}
		if err := walk(ctx, tx, v, anchor, kept, rep, c); err != nil {
			return err
		}
		if anchor != "" && rep.Anchor == nil {
			return store.AnchorMissingError(runID, anchor, rep.Head)
		}
		rep.Checks = store.VerifyChecks(rep, anchor)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return rep, c, nil
}

func readKept(ctx context.Context, tx pgx.Tx, runID string) (map[string][]byte, error) {
	rows, err := tx.Query(ctx, `SELECT name, data FROM stratum_kept WHERE run_id = $1`, runID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	kept := map[string][]byte{}
	for rows.Next() {
		var name string
		var data []byte
		if err := rows.Scan(&name, &data); err != nil {
			return nil, err
		}
		kept[name] = data
	}
	return kept, rows.Err()
}

// walk checks every acknowledged row from seq 1 to the head and fills in
// the report (and c's lines and kept data, when c is set).
func walk(ctx context.Context, tx pgx.Tx, v view, anchor string, kept map[string][]byte, rep *store.VerifyReport, c *store.RunCopy) error {
	id, head := v.row.id, v.head()
	prev := store.GenesisHash(id)
	if anchor == prev {
		rep.Anchor = &store.Head{Seq: 0, Hash: prev}
	}
	rows, err := tx.Query(ctx, `SELECT seq, line FROM stratum_events WHERE run_id = $1 AND seq <= $2 ORDER BY seq`, id, head.Seq)
	if err != nil {
		return dbError(ctx, id, "verify", err)
	}
	defer rows.Close()
	bad := func(seq int64, format string, args ...any) error {
		return &store.CorruptError{RunID: id, Part: store.PartEvents, Seq: seq, Offset: -1, Reason: fmt.Sprintf(format, args...)}
	}
	seq := int64(0)
	for rows.Next() {
		var rowSeq int64
		var line string
		if err := rows.Scan(&rowSeq, &line); err != nil {
			return dbError(ctx, id, "verify", err)
		}
		if rowSeq != seq+1 {
			return bad(seq+1, "the events table has no row for seq %d: an acknowledged event was deleted", seq+1)
		}
		seq = rowSeq
		ev, err := store.DecodeEvent([]byte(line))
		switch {
		case err != nil:
			return bad(seq, "%v", err)
		case ev.Seq != seq:
			return bad(seq, "the row of seq %d holds the event of seq %d", seq, ev.Seq)
		case ev.PrevHash != prev:
			return bad(seq, "prevHash %s is not the previous event's hash %s: the chain is broken", ev.PrevHash, prev)
		}
		if ev.Begin {
			rep.Writes++
		}
		if ev.Type == store.EventRepair {
			rp, err := store.CheckRepairData(ev, func(name string) ([]byte, bool, error) {
				d, ok := kept[name]
				return d, ok, nil
			})
			if err != nil {
				return bad(seq, "%v", err)
			}
			rep.Repairs = append(rep.Repairs, rp)
			if c != nil {
				for _, k := range rp.Kept {
					c.Kept = append(c.Kept, store.KeptData{Name: k.Name, Data: kept[k.Name]})
				}
			}
		}
		if anchor != "" && ev.Hash == anchor {
			rep.Anchor = &store.Head{Seq: seq, Hash: ev.Hash}
		}
		if c != nil {
			c.Lines = append(c.Lines, []byte(line))
		}
		prev = ev.Hash
	}
	if err := rows.Err(); err != nil {
		return dbError(ctx, id, "verify", err)
	}
	if seq != head.Seq || prev != head.Hash {
		return bad(max(seq, 1), "the events table's acknowledged part ends at seq %d with hash %s, which is not the head (seq %d, hash %s) recorded in the state",
			seq, prev, head.Seq, head.Hash)
	}
	rep.Head, rep.Events = head, head.Seq
	return nil
}

// ExportRun implements store.Copier: Verify's read, keeping the lines.
func (s *Store) ExportRun(ctx context.Context, runID string) (*store.RunCopy, error) {
	if err := store.ValidateRunID(runID); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	_, c, err := s.verify(ctx, runID, "", true)
	return c, err
}

// ImportRun implements store.Copier: the run is inserted as Create inserts
// one, with the copy's lines as they are.
func (s *Store) ImportRun(ctx context.Context, c *store.RunCopy) (store.Head, error) {
	head, err := store.CheckCopy(c)
	if err != nil {
		return store.Head{}, err
	}
	var summary []byte
	if c.Summary != nil {
		if summary, err = store.NormalizeSummary(c.RunID, c.Summary); err != nil {
			return store.Head{}, err
		}
	}
	now, err := s.clock(ctx)
	if err != nil {
		return store.Head{}, dbError(ctx, c.RunID, "import", err)
	}
	enc := make([]store.EncodedEvent, len(c.Lines))
	for i, l := range c.Lines {
		enc[i] = store.EncodedEvent{Line: l, Event: store.Event{Seq: int64(i + 1)}}
	}
	st := store.StateRecord{RunID: c.RunID, Rev: 1, Head: head, Summary: summary, SavedAt: now, State: c.State}
	if err := s.insertRun(ctx, st, enc, c.Kept); err != nil {
		return store.Head{}, err
	}
	return head, nil
}
