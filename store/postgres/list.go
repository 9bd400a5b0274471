package postgres

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unsafe"

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
	var l listing
	if err := s.scanRows(ctx, &l.text, l.add); err != nil {
		return nil, err
	}
	return l.infos(), nil
}

// ScanRuns implements store.Scanner: List's rows as they come off the
// connection, each summary the connection's own bytes (no copy), so that
// the caller decodes one run while the server sends the next.
func (s *Store) ScanRuns(ctx context.Context, fn func(store.RunInfo) error) error {
	var text []byte
	return s.scanRows(ctx, &text, func(r listRow) error {
		return fn(store.RunInfo{ID: r.id, UpdatedAt: r.updatedAt(), Head: store.Head{Seq: r.seq, Hash: r.hash}, Summary: r.summary})
	})
}

// scanRows runs listSQL and calls row with each row, its id and hash
// copied into text (see textOf), its summary the connection's bytes,
// valid until row returns (capacity cut to its length: an append copies
// it). An error from row is returned as it is.
func (s *Store) scanRows(ctx context.Context, text *[]byte, row func(listRow) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("list runs: %w", err)
	}
	defer conn.Release()
	rr := conn.Conn().PgConn().ExecParams(ctx, listSQL, nil, nil, nil, []int16{pgx.BinaryFormatCode})
	first := true
	for rr.NextRow() {
		var err error
		if first { // its columns are known now
			err, first = checkListColumns(rr.FieldDescriptions()), false
		}
		var r listRow
		if err == nil {
			r, err = parseRow(rr.Values(), text)
		}
		if err != nil {
			rr.Close()
			return fmt.Errorf("list runs: %w", err)
		}
		if err := row(r); err != nil {
			rr.Close()
			return err
		}
	}
	if _, err := rr.Close(); err != nil {
		return fmt.Errorf("list runs: %w", dbErr(ctx, err))
	}
	return nil
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

// listing collects List's rows in chunks that are filled and never
// moved: rows of rowChunk, text (the ids and hashes) and summaries of
// textChunk bytes. A listing of 10,000 runs grew one slice of each by
// appending, copying everything at every growth (five times over, at the
// quarter more a long slice grows by) and then once more into strings
// (docs/storage.md, "Costs on PostgreSQL").
type listing struct {
	rows      [][]listRow
	n         int
	text      []byte // the current chunk of ids and hashes
	summaries []byte // the current chunk of summaries
}

// listRow is a row; id and hash are strings over a text chunk (see
// textOf).
type listRow struct {
	id, hash string
	summary  []byte
	savedAt  int64 // microseconds since 2000-01-01 UTC, PostgreSQL's epoch
	seq      int64
}

const (
	rowChunk  = 1024
	textChunk = 1 << 20
)

// pgEpochMicros is where PostgreSQL's binary timestamps count from
// (2000-01-01 UTC), in microseconds since 1970.
const pgEpochMicros = 946684800 * 1000000

// parseRow reads a row of listSQL, copying its id and hash into text.
func parseRow(vals [][]byte, text *[]byte) (listRow, error) {
	if len(vals) != len(listColumns) {
		return listRow{}, fmt.Errorf("a row of %d columns, want %d", len(vals), len(listColumns))
	}
	if vals[0] == nil || vals[1] == nil || vals[2] == nil || vals[3] == nil {
		return listRow{}, fmt.Errorf("a row with a NULL id, time, seq or hash")
	}
	if len(vals[1]) != 8 || len(vals[2]) != 8 {
		return listRow{}, fmt.Errorf("run %s: a time of %d bytes or a seq of %d bytes, want 8", vals[0], len(vals[1]), len(vals[2]))
	}
	r := listRow{savedAt: int64(binary.BigEndian.Uint64(vals[1])), seq: int64(binary.BigEndian.Uint64(vals[2]))}
	// ±infinity (which no write stores) and the times that would overflow
	// when counted from 1970.
	if r.savedAt > math.MaxInt64-pgEpochMicros || r.savedAt < math.MinInt64+pgEpochMicros {
		return listRow{}, fmt.Errorf("run %s: saved_at is infinite or out of range", vals[0])
	}
	r.id, r.hash = textOf(text, vals[0]), textOf(text, vals[3])
	if sum := vals[4]; len(sum) == 0 && sum != nil {
		r.summary = []byte{}
	} else if sum != nil {
		r.summary = sum[:len(sum):len(sum)]
	}
	return r, nil
}

func (r *listRow) updatedAt() time.Time { return time.UnixMicro(pgEpochMicros + r.savedAt).UTC() }

// add keeps r, with a copy of its summary.
func (l *listing) add(r listRow) error {
	if len(r.summary) > 0 {
		c := appendChunk(&l.summaries, r.summary)
		r.summary = c[:len(c):len(c)] // an append by the caller copies
	}
	if l.n%rowChunk == 0 {
		l.rows = append(l.rows, make([]listRow, 0, rowChunk))
	}
	last := &l.rows[len(l.rows)-1]
	*last = append(*last, r)
	l.n++
	return nil
}

// textOf copies b into the text chunks (*text the current one) and
// returns it as a string over the copy, without a second copy. That is
// safe because a text chunk is only ever appended to within its
// capacity, never written where a string was made, and never handed out
// as bytes.
func textOf(text *[]byte, b []byte) string {
	if len(b) == 0 {
		return ""
	}
	c := appendChunk(text, b)
	return unsafe.String(&c[0], len(c))
}

// appendChunk copies b to the end of *chunk, first starting a new chunk
// (of textChunk bytes, or b's length when longer) when it has no room,
// and returns the copy.
func appendChunk(chunk *[]byte, b []byte) []byte {
	if cap(*chunk)-len(*chunk) < len(b) {
		*chunk = make([]byte, 0, max(textChunk, len(b)))
	}
	n := len(*chunk)
	*chunk = append(*chunk, b...)
	return (*chunk)[n:]
}

// idKey orders the rows by id: the id's first 8 bytes, big-endian (0
// past its end), decide most comparisons without reading the id.
type idKey struct {
	prefix uint64
	row    int32
}

func prefixOf(id string) uint64 {
	var b [8]byte
	copy(b[:], id)
	return binary.BigEndian.Uint64(b[:])
}

// infos are the rows as RunInfos, sorted by id. Ids contain no NUL
// (text cannot), so a prefix's zero padding sorts as the end of the
// id does, and equal prefixes fall back to comparing the ids.
func (l *listing) infos() []store.RunInfo {
	row := func(i int32) *listRow { return &l.rows[i/rowChunk][i%rowChunk] }
	keys := make([]idKey, l.n)
	for i := range keys {
		keys[i] = idKey{prefixOf(row(int32(i)).id), int32(i)}
	}
	slices.SortFunc(keys, func(a, b idKey) int {
		if c := cmp.Compare(a.prefix, b.prefix); c != 0 {
			return c
		}
		return strings.Compare(row(a.row).id, row(b.row).id)
	})
	out := make([]store.RunInfo, l.n)
	for k, key := range keys {
		r := row(key.row)
		out[k] = store.RunInfo{ID: r.id, UpdatedAt: r.updatedAt(), Head: store.Head{Seq: r.seq, Hash: r.hash}, Summary: r.summary}
	}
	return out
}
