package postgres_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stratum-go/stratum/store"
	"github.com/stratum-go/stratum/store/postgres"
	"github.com/stratum-go/stratum/store/storetest"
)

// tamperable is a Store whose tables a test edits directly, as someone
// with write access to the database could: storetest.Tamperer in SQL.
type tamperable struct {
	*postgres.Store
	dsn string
	db  *pgxpool.Pool
}

var _ storetest.Tamperer = (*tamperable)(nil)

func newTamperable(t testing.TB, dsn string) *tamperable {
	t.Helper()
	s := open(t, dsn, 200*time.Millisecond)
	db, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return &tamperable{Store: s, dsn: dsn, db: db}
}

func (s *tamperable) exec(sql string, args ...any) error {
	_, err := s.db.Exec(context.Background(), sql, args...)
	return err
}

// TamperEvent edits the line of an event row. A nil result deletes the
// row and moves every later row down one seq, as deleting a line of the
// file store's log moves the later lines: the row the state names as its
// head is then missing. (A DELETE that leaves a gap is the case of
// TestTamperRows.)
func (s *tamperable) TamperEvent(runID string, seq int64, edit func(stored []byte) []byte) error {
	ctx := context.Background()
	var line string
	if err := s.db.QueryRow(ctx, `SELECT line FROM stratum_events WHERE run_id = $1 AND seq = $2`, runID, seq).Scan(&line); err != nil {
		return fmt.Errorf("tamper: run %s seq %d: %w", runID, seq, err)
	}
	out := edit([]byte(line))
	if out != nil {
		return s.exec(`UPDATE stratum_events SET line = $3 WHERE run_id = $1 AND seq = $2`, runID, seq, string(out))
	}
	return pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		for _, sql := range []string{
			`DELETE FROM stratum_events WHERE run_id = $1 AND seq = $2`,
			`UPDATE stratum_events SET seq = -(seq - 1) WHERE run_id = $1 AND seq > $2`,
			`UPDATE stratum_events SET seq = -seq WHERE run_id = $1 AND seq < 0 AND $2::bigint > 0`,
		} {
			if _, err := tx.Exec(ctx, sql, runID, seq); err != nil {
				return err
			}
		}
		return nil
	})
}

// AppendLog inserts a row after the last for each complete line of data.
// A row cannot hold a torn line (no transaction leaves one), so data must
// end with a newline.
func (s *tamperable) AppendLog(runID string, data []byte) error {
	if len(data) > 0 && data[len(data)-1] != '\n' {
		return errors.New("tamper: a database row cannot hold a torn line")
	}
	for _, line := range bytes.SplitAfter(data, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		if err := s.exec(`INSERT INTO stratum_events (run_id, seq, line)
SELECT $1, coalesce(max(seq), 0) + 1, $2 FROM stratum_events WHERE run_id = $1`, runID, string(line[:len(line)-1])); err != nil {
			return err
		}
	}
	return nil
}

// tablesOf are the tables holding each part of a run.
var tablesOf = map[string][]string{
	store.PartState:  {"stratum_runs"},
	store.PartEvents: {"stratum_events", "stratum_kept"},
	store.PartHead:   {"stratum_heads"},
}

// SaveParts keeps the rows of the named parts (as JSON) and puts exactly
// those back on restore.
func (s *tamperable) SaveParts(runID string, parts ...string) (func() error, error) {
	ctx := context.Background()
	saved := map[string][]string{}
	for _, p := range parts {
		tables, ok := tablesOf[p]
		if !ok {
			return nil, fmt.Errorf("tamper: unknown part %q", p)
		}
		for _, table := range tables {
			rows, err := s.db.Query(ctx, `SELECT to_jsonb(t)::text FROM `+table+` t WHERE run_id = $1`, runID)
			if err != nil {
				return nil, err
			}
			recs, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				return nil, err
			}
			saved[table] = recs
		}
	}
	return func() error {
		return pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
			for table, recs := range saved {
				if _, err := tx.Exec(ctx, `DELETE FROM `+table+` WHERE run_id = $1`, runID); err != nil {
					return err
				}
				for _, r := range recs {
					if _, err := tx.Exec(ctx, `INSERT INTO `+table+` SELECT * FROM jsonb_populate_record(NULL::`+table+`, $1::jsonb)`, r); err != nil {
						return err
					}
				}
			}
			return nil
		})
	}, nil
}

// RemoveRun deletes the run's rows, and with headRecordToo its head
// record.
func (s *tamperable) RemoveRun(runID string, headRecordToo bool) error {
	tables := []string{"stratum_runs", "stratum_events", "stratum_kept", "stratum_leases"}
	if headRecordToo {
		tables = append(tables, "stratum_heads")
	}
	for _, table := range tables {
		if err := s.exec(`DELETE FROM `+table+` WHERE run_id = $1`, runID); err != nil {
			return err
		}
	}
	return nil
}
