package postgres_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stratum-go/stratum/internal/pgtest"
	"github.com/stratum-go/stratum/store"
)

// TestListMatchesRows: List, which decodes its rows from the wire by
// hand, returns what pgx's own scanning of the same rows gives, sorted by
// id, and ScanRuns the same rows in the server's order: for runs with large summaries (more than one of List's buffers),
// an empty summary, none, times far from now, a run without its head
// record, a removed run, and ids shorter and longer than the 8 bytes
// List sorts by first, sharing them.
func TestListMatchesRows(t *testing.T) {
	ctx := context.Background()
	s := newTamperable(t, pgtest.DSN(t))
	for i := range 300 {
		id := fmt.Sprintf("run-%03d", (i*7)%300) // created out of order
		sum := fmt.Sprintf(`{"i":%d,"pad":"%s"}`, i, strings.Repeat("x", i*27))
		if _, err := s.Create(ctx, id, store.Change{State: []byte(`{}`), Events: evs(1, 1), Summary: []byte(sum)}); err != nil {
			t.Fatal(err)
		}
	}
	extra := []string{"r", "run-", "run-0", "run-00", "run-0010a", "run-00100", "run-0010-a", "run-0010-B", "Run-0010", "run-0019z", "run-01x", "run-1000000000"}
	for _, id := range extra[1:] { // r: a run without its head record
		if _, err := s.Create(ctx, id, store.Change{State: []byte(`{}`), Events: evs(1, 1), Summary: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Create(ctx, "r", store.Change{State: []byte(`{}`), Events: evs(1, 1)}); err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{
		`DELETE FROM stratum_heads WHERE run_id = 'r'`,
		`UPDATE stratum_heads SET summary = '' WHERE run_id = 'run-001'`,
		`UPDATE stratum_heads SET summary = NULL WHERE run_id = 'run-002'`,
		`UPDATE stratum_heads SET saved_at = '1900-02-03 04:05:06.789012+00' WHERE run_id = 'run-003'`,
		`UPDATE stratum_heads SET saved_at = '2999-12-31 23:59:59.999999+00' WHERE run_id = 'run-004'`,
		`DELETE FROM stratum_heads WHERE run_id = 'run-005'`,
		`DELETE FROM stratum_runs WHERE run_id = 'run-006'`,
	} {
		if err := s.exec(sql); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := s.db.Query(ctx, `
SELECT h.run_id, h.saved_at, h.seq, h.hash, h.summary FROM stratum_heads h
UNION ALL
SELECT r.run_id, r.saved_at, r.seq, r.head, NULL FROM stratum_runs r
WHERE NOT EXISTS (SELECT 1 FROM stratum_heads h WHERE h.run_id = r.run_id)
ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var want []store.RunInfo
	for rows.Next() {
		var ri store.RunInfo
		var sum []byte
		if err := rows.Scan(&ri.ID, &ri.UpdatedAt, &ri.Head.Seq, &ri.Head.Hash, &sum); err != nil {
			t.Fatal(err)
		}
		ri.UpdatedAt, ri.Summary = ri.UpdatedAt.UTC(), sum
		want = append(want, ri)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n := 300 + len(extra); len(got) != len(want) || len(got) != n {
		t.Fatalf("List: %d runs, the tables %d, want %d", len(got), len(want), n)
	}
	var scanned []store.RunInfo
	if err := s.ScanRuns(ctx, func(info store.RunInfo) error {
		if info.Summary != nil {
			info.Summary = slices.Clone(info.Summary)
		}
		scanned = append(scanned, info)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(scanned, func(a, b store.RunInfo) int { return strings.Compare(a.ID, b.ID) })
	if len(scanned) != len(want) {
		t.Fatalf("ScanRuns: %d runs, want %d", len(scanned), len(want))
	}
	check := func(name string, got []store.RunInfo, i int) {
		g, w := got[i], want[i]
		if g.ID != w.ID || g.UpdatedAt != w.UpdatedAt || g.Head != w.Head || !bytes.Equal(g.Summary, w.Summary) || (g.Summary == nil) != (w.Summary == nil) {
			t.Errorf("%s[%d] = %s %s %+v %.40q (nil %v)\nwant     %s %s %+v %.40q (nil %v)", name, i,
				g.ID, g.UpdatedAt, g.Head, g.Summary, g.Summary == nil, w.ID, w.UpdatedAt, w.Head, w.Summary, w.Summary == nil)
		}
	}
	for i := range want {
		check("List", got, i)
		check("ScanRuns", scanned, i)
	}
	if err := s.exec(`UPDATE stratum_heads SET saved_at = 'infinity' WHERE run_id = 'run-007'`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.List(ctx); err == nil || !strings.Contains(err.Error(), "run-007") {
		t.Errorf("List with an infinite time: %v, want an error naming run-007", err)
	}
}
