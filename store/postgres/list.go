package postgres

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/stratum-go/stratum/store"
)

// listSQL reads every head record, and the state row of each run without
// one (only tampering leaves such a run: Create writes both in one
// transaction). Those runs are found by an anti-join of the two primary
// keys alone, which PostgreSQL merges from the two indexes (index-only
// once vacuumed); asking for the state rows' columns in the anti-join
// made it scan the whole state table and hash the head records again.
const listSQL = `
SELECT h.run_id, h.saved_at, h.seq, h.hash, h.summary FROM stratum_heads h
UNION ALL
SELECT r.run_id, r.saved_at, r.seq, r.head, NULL FROM stratum_runs r
WHERE r.run_id IN (SELECT m.run_id FROM stratum_runs m
	WHERE NOT EXISTS (SELECT 1 FROM stratum_heads x WHERE x.run_id = m.run_id))`

// listColumns are the types of listSQL's columns, as PostgreSQL sends
// them in binary.
var listColumns = [...]uint32{pgtype.TextOID, pgtype.TimestamptzOID, pgtype.Int8OID, pgtype.TextOID, pgtype.TextOID}

// List implements store.Store from the head records (and, for a run
// without one, its state row's head): one statement, no state document
// or event read. It is what `stratum query flows` waits for
// (docs/storage.md, "Costs on PostgreSQL"), so it is sent in one round
// trip (described with its rows, not prepared first), its rows come in
// binary, and they are decoded straight from the wire into a few large
// buffers rather than a string or slice per value.
func (s *Store) List(ctx context.Context) ([]store.RunInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	defer conn.Release()
	rr := conn.Conn().PgConn().ExecParams(ctx, listSQL, nil, nil, nil, []int16{pgx.BinaryFormatCode})
	var l listing
	for rr.NextRow() {
		var err error
		if len(l.rows) == 0 { // the first row: its columns are known now
			err = checkListColumns(rr.FieldDescriptions())
		}
		if err == nil {
			err = l.add(rr.Values())
		}
		if err != nil {
			rr.Close()
			return nil, fmt.Errorf("list runs: %w", err)
		}
	}
	if _, err := rr.Close(); err != nil {
		return nil, fmt.Errorf("list runs: %w", dbErr(ctx, err))
	}
	return l.infos(), nil
}

// dbErr is ctx's error once it is done, else err.
func dbErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

func checkListColumns(fields []pgconn.FieldDescription) error {
	if len(fields) != len(listColumns) {
		return fmt.Errorf("%d columns, want %d", len(fields), len(listColumns))
	}
	for i, f := range fields {
		if f.DataTypeOID != listColumns[i] || f.Format != pgx.BinaryFormatCode {
			return fmt.Errorf("column %s has type %d in format %d, want type %d in binary", f.Name, f.DataTypeOID, f.Format, listColumns[i])
		}
	}
	return nil
}

// listing collects List's rows: the ids and hashes appended to one
// buffer each (made strings at the end, with one copy), the summaries to
// chunks of summaryChunk bytes.
type listing struct {
	rows      []listRow
	ids       []byte
	hashes    []byte
	summaries []byte // the current chunk
}

type listRow struct {
	id, hash span
	summary  []byte
	savedAt  int64 // microseconds since 2000-01-01 UTC, PostgreSQL's epoch
	seq      int64
}

type span struct{ from, to int }

const summaryChunk = 1 << 20

// pgEpochMicros is where PostgreSQL's binary timestamps count from
// (2000-01-01 UTC), in microseconds since 1970.
const pgEpochMicros = 946684800 * 1000000

func (l *listing) add(vals [][]byte) error {
	if len(vals) != len(listColumns) {
		return fmt.Errorf("a row of %d columns, want %d", len(vals), len(listColumns))
	}
	if vals[0] == nil || vals[1] == nil || vals[2] == nil || vals[3] == nil {
		return fmt.Errorf("a row with a NULL id, time, seq or hash")
	}
	if len(vals[1]) != 8 || len(vals[2]) != 8 {
		return fmt.Errorf("run %s: a time of %d bytes or a seq of %d bytes, want 8", vals[0], len(vals[1]), len(vals[2]))
	}
	r := listRow{savedAt: int64(binary.BigEndian.Uint64(vals[1])), seq: int64(binary.BigEndian.Uint64(vals[2]))}
	// ±infinity (which no write stores) and the times that would overflow
	// when counted from 1970.
	if r.savedAt > math.MaxInt64-pgEpochMicros || r.savedAt < math.MinInt64+pgEpochMicros {
		return fmt.Errorf("run %s: saved_at is infinite or out of range", vals[0])
	}
	r.id = span{len(l.ids), len(l.ids) + len(vals[0])}
	l.ids = append(l.ids, vals[0]...)
	r.hash = span{len(l.hashes), len(l.hashes) + len(vals[3])}
	l.hashes = append(l.hashes, vals[3]...)
	if sum := vals[4]; len(sum) == 0 && sum != nil {
		r.summary = []byte{}
	} else if sum != nil {
		if cap(l.summaries)-len(l.summaries) < len(sum) {
			l.summaries = make([]byte, 0, max(summaryChunk, len(sum)))
		}
		n := len(l.summaries)
		l.summaries = append(l.summaries, sum...)
		r.summary = l.summaries[n:len(l.summaries):len(l.summaries)]
	}
	l.rows = append(l.rows, r)
	return nil
}

// infos are the rows as RunInfos, sorted by id (an order of indices is
// sorted: moving a RunInfo costs more than comparing two ids).
func (l *listing) infos() []store.RunInfo {
	ids, hashes := string(l.ids), string(l.hashes)
	order := make([]int32, len(l.rows))
	for i := range order {
		order[i] = int32(i)
	}
	id := func(i int32) string { sp := l.rows[i].id; return ids[sp.from:sp.to] }
	slices.SortFunc(order, func(a, b int32) int { return strings.Compare(id(a), id(b)) })
	out := make([]store.RunInfo, len(l.rows))
	for k, i := range order {
		r := &l.rows[i]
		out[k] = store.RunInfo{ID: id(i), UpdatedAt: time.UnixMicro(pgEpochMicros + r.savedAt).UTC(),
			Head: store.Head{Seq: r.seq, Hash: hashes[r.hash.from:r.hash.to]}}
		if r.summary != nil {
			out[k].Summary = r.summary
		}
	}
	return out
}
