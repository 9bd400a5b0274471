package postgres_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stratum-go/stratum/internal/pgtest"
	"github.com/stratum-go/stratum/store"
)

// The tamper matrix of the PostgreSQL store: what someone with write
// access to the tables can do to a run, in SQL, and how it is caught.
// docs/storage.md ("PostgreSQL", "Tamper evidence") shows the same table
// (TestPostgresTamperMatrixDocumented keeps the two equal).
const (
	caughtLocal    = "detected locally: Load, Update and Verify refuse the run"
	caughtVerify   = "detected locally by Verify (and reads that cross it)"
	caughtRepair   = "detected by Verify (at the repair event)"
	caughtTail     = "detected locally: reported by Verify, kept aside with a store.repair event by the next write"
	caughtAnchor   = "detected only against an anchor (Verify --head)"
	caughtReported = "reported by Verify (head record missing); the next write records a new one"
)

// matrixRun is run "t" after a Create and ten updates, with the rows of
// its state and head record after each write.
type matrixRun struct {
	s      *tamperable
	heads  []store.Head
	states []string // stratum_runs row (JSON) after each write
	recs   []string // stratum_heads row (JSON) after each write
}

func rowJSON(t *testing.T, s *tamperable, table string) string {
	t.Helper()
	var j string
	if err := s.db.QueryRow(context.Background(), `SELECT to_jsonb(t)::text FROM `+table+` t WHERE run_id = 't'`).Scan(&j); err != nil {
		t.Fatal(err)
	}
	return j
}

func buildMatrixRun(t *testing.T, s *tamperable) *matrixRun {
	t.Helper()
	ctx := context.Background()
	r := &matrixRun{s: s}
	record := func(h store.Head) {
		r.heads = append(r.heads, h)
		r.states = append(r.states, rowJSON(t, s, "stratum_runs"))
		r.recs = append(r.recs, rowJSON(t, s, "stratum_heads"))
	}
	h, err := s.Create(ctx, "t", store.Change{State: []byte(`{"w":0}`), Events: evs(1, 2)})
	if err != nil {
		t.Fatal(err)
	}
	record(h)
	for i := 1; i <= 10; i++ {
		h, err := s.Update(ctx, "t", func(cur *store.Snapshot) (*store.Change, error) {
			return &store.Change{State: fmt.Appendf(nil, `{"w":%d}`, i), Summary: fmt.Appendf(nil, `{"w":%d}`, i), Events: evs(int(cur.Head.Seq)+1, 1+i%2)}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		record(h)
	}
	return r
}

func evs(from, n int) []store.NewEvent {
	var out []store.NewEvent
	for i := range n {
		out = append(out, store.NewEvent{Type: "result", At: time.Date(2026, 3, 1, 12, 0, from+i, 0, time.UTC), Data: fmt.Appendf(nil, `{"i":%d}`, from+i)})
	}
	return out
}

func (r *matrixRun) last() store.Head { return r.heads[len(r.heads)-1] }

// restoreRow puts a saved row back into table.
func (r *matrixRun) restoreRow(table, row string) error {
	if err := r.s.exec(`DELETE FROM ` + table + ` WHERE run_id = 't'`); err != nil {
		return err
	}
	return r.s.exec(`INSERT INTO `+table+` SELECT * FROM jsonb_populate_record(NULL::`+table+`, $1::jsonb)`, row)
}

// rehashed is the line of event seq with its data changed and its hash
// recomputed, as docs/storage.md defines it: valid on its own.
func (r *matrixRun) rehashed(t *testing.T, seq int64) string {
	var line string
	if err := r.s.db.QueryRow(context.Background(), `SELECT line FROM stratum_events WHERE run_id = 't' AND seq = $1`, seq).Scan(&line); err != nil {
		t.Fatal(err)
	}
	i := strings.Index(line, `,"hash":"`)
	old := line[i : i+len(`,"hash":"`)+64+1]
	body := strings.Replace(strings.Replace(line, old, "", 1), `"i":`, `"i":1`, 1)
	sum := sha256.Sum256([]byte(body))
	return strings.Replace(body, `,"prevHash":`, `,"hash":"`+hex.EncodeToString(sum[:])+`","prevHash":`, 1)
}

var pgTamperMatrix = []struct {
	name    string
	outcome string
	tamper  func(t *testing.T, r *matrixRun) error
}{
	{"UPDATE an interior event row's line", caughtVerify, func(t *testing.T, r *matrixRun) error {
		return r.s.exec(`UPDATE stratum_events SET line = replace(line, '"i":', '"i":1') WHERE run_id = 't' AND seq = 4`)
	}},
	{"UPDATE an interior event row with a line re-hashed on its own", caughtVerify, func(t *testing.T, r *matrixRun) error {
		return r.s.exec(`UPDATE stratum_events SET line = $1 WHERE run_id = 't' AND seq = 4`, r.rehashed(t, 4))
	}},
	{"UPDATE the head event row's line", caughtLocal, func(t *testing.T, r *matrixRun) error {
		return r.s.exec(`UPDATE stratum_events SET line = replace(line, '"i":', '"i":1') WHERE run_id = 't' AND seq = $1`, r.last().Seq)
	}},
	{"DELETE an interior event row", caughtVerify, func(t *testing.T, r *matrixRun) error {
		return r.s.exec(`DELETE FROM stratum_events WHERE run_id = 't' AND seq = 4`)
	}},
	{"DELETE the head event row", caughtLocal, func(t *testing.T, r *matrixRun) error {
		return r.s.exec(`DELETE FROM stratum_events WHERE run_id = 't' AND seq = $1`, r.last().Seq)
	}},
	{"DELETE every event row of the run", caughtLocal, func(t *testing.T, r *matrixRun) error {
		return r.s.exec(`DELETE FROM stratum_events WHERE run_id = 't'`)
	}},
	{"UPDATE the state row's document", caughtLocal, func(t *testing.T, r *matrixRun) error {
		return r.s.exec(`UPDATE stratum_runs SET state = '{"w":99}' WHERE run_id = 't'`)
	}},
	{"UPDATE the state row's document and recompute its check", caughtLocal, func(t *testing.T, r *matrixRun) error {
		snap, err := r.s.Load(context.Background(), "t")
		if err != nil {
			return err
		}
		var rev int64
		var saved time.Time
		if err := r.s.db.QueryRow(context.Background(), `SELECT rev, saved_at FROM stratum_runs WHERE run_id = 't'`).Scan(&rev, &saved); err != nil {
			return err
		}
		st := store.StateRecord{RunID: "t", Rev: rev, Head: snap.Head, Summary: snap.Summary, SavedAt: saved.UTC(), State: []byte(`{"w":99}`)}
		return r.s.exec(`UPDATE stratum_runs SET state = $1, state_check = $2 WHERE run_id = 't'`, st.State, st.Check())
	}},
	{"roll back the state row by one write", caughtLocal, func(t *testing.T, r *matrixRun) error {
		return r.restoreRow("stratum_runs", r.states[len(r.states)-2])
	}},
	{"roll back the state row by many writes", caughtLocal, func(t *testing.T, r *matrixRun) error {
		return r.restoreRow("stratum_runs", r.states[3])
	}},
	{"roll back the state row and DELETE the later event rows", caughtLocal, func(t *testing.T, r *matrixRun) error {
		if err := r.restoreRow("stratum_runs", r.states[3]); err != nil {
			return err
		}
		return r.s.exec(`DELETE FROM stratum_events WHERE run_id = 't' AND seq > $1`, r.heads[3].Seq)
	}},
	{"roll back the state row, the event rows and the head record", caughtAnchor, func(t *testing.T, r *matrixRun) error {
		if err := r.restoreRow("stratum_runs", r.states[3]); err != nil {
			return err
		}
		if err := r.restoreRow("stratum_heads", r.recs[3]); err != nil {
			return err
		}
		return r.s.exec(`DELETE FROM stratum_events WHERE run_id = 't' AND seq > $1`, r.heads[3].Seq)
	}},
	{"roll back the head record by many writes", caughtLocal, func(t *testing.T, r *matrixRun) error {
		return r.restoreRow("stratum_heads", r.recs[3])
	}},
	{"UPDATE the head record's hash", caughtLocal, func(t *testing.T, r *matrixRun) error {
		return r.s.exec(`UPDATE stratum_heads SET hash = $1 WHERE run_id = 't'`, strings.Repeat("ab", 32))
	}},
	{"DELETE the head record", caughtReported, func(t *testing.T, r *matrixRun) error {
		return r.s.exec(`DELETE FROM stratum_heads WHERE run_id = 't'`)
	}},
	{"DELETE the run's rows, not its head record", caughtLocal, func(t *testing.T, r *matrixRun) error {
		return r.s.RemoveRun("t", false)
	}},
	{"DELETE the run's rows and its head record", caughtAnchor, func(t *testing.T, r *matrixRun) error {
		return r.s.RemoveRun("t", true)
	}},
	{"INSERT an event row after the head that continues the chain", caughtTail, func(t *testing.T, r *matrixRun) error {
		enc, err := store.EncodeWrite("t", r.last(), evs(100, 1))
		if err != nil {
			return err
		}
		return r.s.exec(`INSERT INTO stratum_events VALUES ('t', $1, $2)`, enc[0].Event.Seq, string(enc[0].Line))
	}},
	{"INSERT a row of garbage after the head", caughtLocal, func(t *testing.T, r *matrixRun) error {
		return r.s.exec(`INSERT INTO stratum_events VALUES ('t', $1, 'garbage')`, r.last().Seq+1)
	}},
	{"DELETE the data a repair kept aside", caughtRepair, func(t *testing.T, r *matrixRun) error {
		enc, err := store.EncodeWrite("t", r.last(), evs(100, 1))
		if err != nil {
			return err
		}
		if err := r.s.exec(`INSERT INTO stratum_events VALUES ('t', $1, $2)`, enc[0].Event.Seq, string(enc[0].Line)); err != nil {
			return err
		}
		h, err := r.s.Update(context.Background(), "t", func(cur *store.Snapshot) (*store.Change, error) {
			return &store.Change{Events: evs(int(cur.Head.Seq)+1, 1)}, nil
		})
		if err != nil {
			return err
		}
		r.heads = append(r.heads, h)
		return r.s.exec(`DELETE FROM stratum_kept WHERE run_id = 't'`)
	}},
}

// TestTamperRows runs the matrix: each case on a fresh run.
func TestTamperRows(t *testing.T) {
	ctx := context.Background()
	for _, tc := range pgTamperMatrix {
		t.Run(tc.name, func(t *testing.T) {
			s := newTamperable(t, pgtest.DSN(t))
			r := buildMatrixRun(t, s)
			if err := tc.tamper(t, r); err != nil {
				t.Fatal(err)
			}
			_, errL := s.Load(ctx, "t")
			rep, errV := s.Verify(ctx, "t", store.VerifyOptions{})
			switch tc.outcome {
			case caughtLocal:
				removed := strings.Contains(tc.name, "DELETE the run's rows")
				before := ""
				if !removed {
					before = rowJSON(t, s, "stratum_runs")
				}
				_, errU := s.Update(ctx, "t", func(*store.Snapshot) (*store.Change, error) {
					return &store.Change{State: []byte(`{"x":1}`), Events: evs(200, 1)}, nil
				})
				for op, err := range map[string]error{"Load": errL, "Update": errU, "Verify": errV} {
					if !errors.Is(err, store.ErrCorrupt) {
						t.Errorf("%s: %v, want ErrCorrupt", op, err)
					}
				}
				if removed {
					break
				}
				if after := rowJSON(t, s, "stratum_runs"); after != before {
					t.Errorf("the refused Update wrote the state row")
				}
			case caughtVerify:
				if errL != nil {
					t.Errorf("Load: %v (it checks only the head, which is intact)", errL)
				}
				var ce *store.CorruptError
				// At the event changed, or (re-hashed) at the next, whose
				// prevHash no longer matches.
				if !errors.As(errV, &ce) || (ce.Seq != 4 && ce.Seq != 5) {
					t.Errorf("Verify: %v, want ErrCorrupt at seq 4 or 5", errV)
				}
				if _, err := s.Events(ctx, "t", 0, 0); !errors.Is(err, store.ErrCorrupt) {
					t.Errorf("Events across the damage: %v, want ErrCorrupt", err)
				}
				if _, err := s.Events(ctx, "t", 4, 0); err != nil {
					t.Errorf("Events after the damage: %v", err)
				}
			case caughtRepair:
				if errL != nil || !errors.Is(errV, store.ErrCorrupt) || !strings.Contains(errV.Error(), "repair kept aside") {
					t.Errorf("Load: %v; Verify: %v, want the repair's kept data missing", errL, errV)
				}
			case caughtTail:
				if errL != nil || errV != nil || !rep.Tail.Chained || rep.Tail.Events != 1 {
					t.Fatalf("Load: %v; Verify: %+v, %v; want a chained tail of one event", errL, rep, errV)
				}
				if _, err := s.Update(ctx, "t", func(*store.Snapshot) (*store.Change, error) {
					return &store.Change{Events: evs(200, 1)}, nil
				}); err != nil {
					t.Fatal(err)
				}
				if rep, err := s.Verify(ctx, "t", store.VerifyOptions{}); err != nil || len(rep.Repairs) != 1 {
					t.Errorf("after the repair: %+v, %v", rep, err)
				}
			case caughtAnchor:
				if strings.Contains(tc.name, "head record") && strings.Contains(tc.name, "DELETE") {
					if !errors.Is(errL, store.ErrRunNotFound) {
						t.Errorf("Load: %v, want ErrRunNotFound", errL)
					}
				} else if errL != nil || errV != nil {
					t.Errorf("a consistent rollback: Load %v, Verify %v; want both to pass", errL, errV)
				}
				if _, err := s.Verify(ctx, "t", store.VerifyOptions{Head: r.last().Hash}); !errors.Is(err, store.ErrCorrupt) {
					t.Errorf("Verify against the last head: %v, want ErrCorrupt", err)
				}
			case caughtReported:
				if errL != nil || errV != nil || rep.HeadRecord != store.HeadRecordMissing {
					t.Fatalf("Load %v; Verify %+v, %v; want the head record reported missing", errL, rep, errV)
				}
				// Still listed: from its state row, without a summary.
				if runs, err := s.List(ctx); err != nil || len(runs) != 1 || runs[0].ID != "t" || runs[0].Head != r.last() || runs[0].Summary != nil {
					t.Errorf("List without the head record: %+v, %v; want t at %+v without a summary", runs, err, r.last())
				}
				if _, err := s.Update(ctx, "t", func(*store.Snapshot) (*store.Change, error) {
					return &store.Change{Events: evs(200, 1)}, nil
				}); err != nil {
					t.Fatal(err)
				}
				if rep, err := s.Verify(ctx, "t", store.VerifyOptions{}); err != nil || rep.HeadRecord != store.HeadRecordMatch {
					t.Errorf("after a write: %+v, %v; want the record written again", rep, err)
				}
			default:
				t.Fatalf("unknown outcome %q", tc.outcome)
			}
		})
	}
}

// TestPostgresTamperMatrixDocumented keeps docs/storage.md's PostgreSQL
// tamper table equal to the matrix the tests run.
func TestPostgresTamperMatrixDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "storage.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, line := range strings.Split(string(doc), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) == 4 && strings.HasPrefix(line, "| ") {
			rows[strings.TrimSpace(cells[1])] = strings.TrimSpace(cells[2])
		}
	}
	for _, tc := range pgTamperMatrix {
		if got, ok := rows[tc.name]; !ok || got != tc.outcome {
			t.Errorf("docs/storage.md: row %q says %q, want %q", tc.name, got, tc.outcome)
		}
	}
}
