package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/stratum-go/stratum/store"
)

// presenceSQL is the part of a read that tells a missing run from a
// removed one: the state row's head and the head record.
const presenceSQL = `r.seq, r.head, h.rev, h.seq, h.hash, h.saved_at
FROM (SELECT $1::text AS id) q
LEFT JOIN stratum_runs r ON r.run_id = q.id
LEFT JOIN stratum_heads h ON h.run_id = q.id`

// presence is what presenceSQL read.
type presence struct {
	seq        *int64
	head       *string
	hRev, hSeq *int64
	hHash      *string
	hSaved     *time.Time
}

func (p *presence) targets() []any {
	return []any{&p.seq, &p.head, &p.hRev, &p.hSeq, &p.hHash, &p.hSaved}
}

// missing is the error for a run without a state row: removed when its
// head record remains, else not found.
func (p *presence) missing(id string) error {
	if p.hRev != nil {
		return store.RemovedRunError(store.HeadRecord{RunID: id, Rev: *p.hRev, Head: store.Head{Seq: *p.hSeq, Hash: *p.hHash}, SavedAt: p.hSaved.UTC()})
	}
	return notFound(id)
}

// Events implements store.Store: one statement reads the head and the
// rows after afterSeq up to it; the chain is checked backwards from the
// head, as the file store reads, so polls cost what they return.
func (s *Store) Events(ctx context.Context, runID string, afterSeq int64, limit int) ([]store.Event, error) {
	if err := store.ValidateRunID(runID); err != nil {
		return nil, err
	}
	if limit < 0 {
		return nil, fmt.Errorf("run %s: %w: negative limit %d", runID, store.ErrInvalidInput, limit)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var p presence
	var seqs []int64
	var lines []string
	err := s.pool.QueryRow(ctx, `SELECT
	ARRAY(SELECT e.seq FROM stratum_events e WHERE e.run_id = q.id AND e.seq > $2 AND e.seq <= r.seq ORDER BY e.seq),
	ARRAY(SELECT e.line FROM stratum_events e WHERE e.run_id = q.id AND e.seq > $2 AND e.seq <= r.seq ORDER BY e.seq),
	`+presenceSQL, runID, afterSeq).Scan(append([]any{&seqs, &lines}, p.targets()...)...)
	if err != nil {
		return nil, dbError(ctx, runID, "read events", err)
	}
	if p.seq == nil {
		return nil, p.missing(runID)
	}
	head := store.Head{Seq: *p.seq, Hash: *p.head}
	if afterSeq < 0 || afterSeq > head.Seq {
		return nil, fmt.Errorf("run %s: %w: after seq %d, head is %d", runID, store.ErrSeqOutOfRange, afterSeq, head.Seq)
	}
	out := make([]store.Event, head.Seq-afterSeq)
	want, i := head.Hash, len(seqs)-1
	for seq := head.Seq; seq > afterSeq; seq-- {
		if i < 0 || seqs[i] != seq {
			return nil, &store.CorruptError{RunID: runID, Part: store.PartEvents, Seq: seq, Offset: -1,
				Reason: fmt.Sprintf("the events table has no row for seq %d: acknowledged events are missing", seq)}
		}
		ev, err := checkLine(runID, seq, []byte(lines[i]), want)
		if err != nil {
			return nil, err
		}
		out[seq-afterSeq-1] = ev
		want, i = ev.PrevHash, i-1
	}
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// Event implements store.Store: one statement reads the head and the row
// of seq through the primary key.
func (s *Store) Event(ctx context.Context, runID string, seq int64) (store.Event, error) {
	if err := store.ValidateRunID(runID); err != nil {
		return store.Event{}, err
	}
	if err := ctx.Err(); err != nil {
		return store.Event{}, err
	}
	var p presence
	var line *string
	err := s.pool.QueryRow(ctx, `SELECT
	(SELECT e.line FROM stratum_events e WHERE e.run_id = q.id AND e.seq = $2),
	`+presenceSQL, runID, seq).Scan(append([]any{&line}, p.targets()...)...)
	if err != nil {
		return store.Event{}, dbError(ctx, runID, "read an event", err)
	}
	if p.seq == nil {
		return store.Event{}, p.missing(runID)
	}
	if seq < 1 || seq > *p.seq {
		return store.Event{}, fmt.Errorf("run %s: %w: seq %d, head is %d", runID, store.ErrSeqOutOfRange, seq, *p.seq)
	}
	if line == nil {
		return store.Event{}, &store.CorruptError{RunID: runID, Part: store.PartEvents, Seq: seq, Offset: -1,
			Reason: fmt.Sprintf("the events table has no row for seq %d: an acknowledged event is missing", seq)}
	}
	want := ""
	if seq == *p.seq {
		want = *p.head
	}
	return checkLine(runID, seq, []byte(*line), want)
}

// List implements store.Store from the head records (and, for a run
// without one, its state row's head): one statement, no state document
// or event read.
func (s *Store) List(ctx context.Context) ([]store.RunInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `
SELECT h.run_id, h.saved_at, h.seq, h.hash, h.summary FROM stratum_heads h
UNION ALL
SELECT r.run_id, r.saved_at, r.seq, r.head, NULL FROM stratum_runs r
WHERE NOT EXISTS (SELECT 1 FROM stratum_heads h WHERE h.run_id = r.run_id)`)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	defer rows.Close()
	var out []store.RunInfo
	for rows.Next() {
		var ri store.RunInfo
		var summary *string
		if err := rows.Scan(&ri.ID, &ri.UpdatedAt, &ri.Head.Seq, &ri.Head.Hash, &summary); err != nil {
			return nil, fmt.Errorf("list runs: %w", err)
		}
		ri.UpdatedAt = ri.UpdatedAt.UTC()
		ri.Summary = textBytes(summary)
		out = append(out, ri)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	slices.SortFunc(out, func(a, b store.RunInfo) int { return strings.Compare(a.ID, b.ID) })
	if out == nil {
		out = []store.RunInfo{}
	}
	return out, nil
}
