package postgres

import (
	"context"
	"fmt"
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

// Events implements store.Store in one statement: the head, the rows
// after afterSeq up to it (at most limit of them, LIMIT NULL being all),
// and the row of afterSeq. A page that reaches the head is checked
// backwards from the head, as the file store reads; one that stops before
// it is checked forwards from the hash the row of afterSeq records (or the
// genesis hash), as the Store contract says of a page. Either way a read
// costs what it returns, wherever in the history it is.
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
	var sqlLimit *int64
	if limit > 0 {
		n := int64(limit)
		sqlLimit = &n
	}
	var p presence
	var seqs []int64
	var lines []string
	var before *string
	err := s.pool.QueryRow(ctx, `SELECT
	ARRAY(SELECT e.seq FROM stratum_events e WHERE e.run_id = q.id AND e.seq > $2 AND e.seq <= r.seq ORDER BY e.seq LIMIT $3),
	ARRAY(SELECT e.line FROM stratum_events e WHERE e.run_id = q.id AND e.seq > $2 AND e.seq <= r.seq ORDER BY e.seq LIMIT $3),
	(SELECT e.line FROM stratum_events e WHERE e.run_id = q.id AND e.seq = $2),
	`+presenceSQL, runID, afterSeq, sqlLimit).Scan(append([]any{&seqs, &lines, &before}, p.targets()...)...)
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
	if limit > 0 && afterSeq+int64(limit) < head.Seq {
		return eventsPage(runID, afterSeq, limit, seqs, lines, before)
	}
	out := make([]store.Event, head.Seq-afterSeq)
	want, i := head.Hash, len(seqs)-1
	for seq := head.Seq; seq > afterSeq; seq-- {
		if i < 0 || seqs[i] != seq {
			return nil, missingRow(runID, seq)
		}
		ev, err := checkLine(runID, seq, []byte(lines[i]), want)
		if err != nil {
			return nil, err
		}
		out[seq-afterSeq-1] = ev
		want, i = ev.PrevHash, i-1
	}
	return out, nil
}

// eventsPage checks the limit rows after afterSeq of a page that stops
// before the head, forwards: each line decodes and hashes, the seqs follow
// on, and each prevHash is the hash before it, the first linked to the
// hash the row of afterSeq (before) records, or to the genesis hash.
func eventsPage(runID string, afterSeq int64, limit int, seqs []int64, lines []string, before *string) ([]store.Event, error) {
	prev := store.GenesisHash(runID)
	if afterSeq > 0 {
		if before == nil {
			return nil, missingRow(runID, afterSeq)
		}
		h, err := store.LineHash([]byte(*before))
		if err != nil {
			return nil, &store.CorruptError{RunID: runID, Part: store.PartEvents, Seq: afterSeq, Offset: -1, Reason: err.Error()}
		}
		prev = h
	}
	out := make([]store.Event, limit)
	for i := range out {
		seq := afterSeq + 1 + int64(i)
		if i >= len(seqs) || seqs[i] != seq {
			return nil, missingRow(runID, seq)
		}
		ev, err := checkLine(runID, seq, []byte(lines[i]), "")
		if err != nil {
			return nil, err
		}
		if ev.PrevHash != prev {
			return nil, &store.CorruptError{RunID: runID, Part: store.PartEvents, Seq: seq, Offset: -1,
				Reason: fmt.Sprintf("prevHash %s is not the previous event's hash %s: the chain is broken", ev.PrevHash, prev)}
		}
		out[i], prev = ev, ev.Hash
	}
	return out, nil
}

// missingRow is the corruption of an acknowledged event without a row.
func missingRow(runID string, seq int64) error {
	return &store.CorruptError{RunID: runID, Part: store.PartEvents, Seq: seq, Offset: -1,
		Reason: fmt.Sprintf("the events table has no row for seq %d: acknowledged events are missing", seq)}
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
