package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratum-go/stratum/internal/pgtest"
	"github.com/stratum-go/stratum/store"
)

// The benchmarks compare the PostgreSQL store (the test binary's private
// server: unix socket, fsync and synchronous_commit on, data in the
// temporary directory) with the file store on the same disk:
//
//	go test ./store/postgres -run '^$' -bench . -count 5
//
// docs/storage.md ("PostgreSQL", "Costs") reports the figures.

func benchState(size int) []byte {
	pad := max(0, size-len(`{"status":"running","pad":""}`))
	return fmt.Appendf(nil, `{"status":"running","pad":%q}`, strings.Repeat("s", pad))
}

// resultEvent is a typical step_done result event (about 300 bytes).
func resultEvent(seq int64) store.NewEvent {
	data, _ := json.Marshal(map[string]any{
		"stepId": "build", "attempt": 1, "seq": seq,
		"result": map[string]any{"summary": strings.Repeat("r", 180), "ok": true, "files": []string{"a.go", "b.go"}},
	})
	return store.NewEvent{Type: "result", At: time.Now(), Data: data}
}

// stepDone is one accepted step_done as the engine issues it: the state
// replaced, the summary updated, one result event appended.
func stepDone(state []byte) func(*store.Snapshot) (*store.Change, error) {
	return func(cur *store.Snapshot) (*store.Change, error) {
		return &store.Change{State: state, Summary: json.RawMessage(`{"status":"running","flow":"main"}`),
			Events: []store.NewEvent{resultEvent(cur.Head.Seq + 1)}}, nil
	}
}

func p50(l []time.Duration) float64 {
	slices.Sort(l)
	return float64(l[len(l)/2]) / 1e6
}

// BenchmarkStepDone interleaves one step_done on PostgreSQL and one on
// the file store per iteration, so that noise on a shared machine hits
// both alike, and reports each one's median and their ratio.
func BenchmarkStepDone(b *testing.B) {
	ctx := context.Background()
	pg := open(b, pgtest.DSN(b), 0)
	files, err := store.NewFileStore(filepath.Join(b.TempDir(), "flows"), nil)
	if err != nil {
		b.Fatal(err)
	}
	state := benchState(4 << 10)
	lanes := []struct {
		name string
		s    store.Store
		lat  []time.Duration
	}{{name: "postgres", s: pg}, {name: "files", s: files}}
	for i := range lanes {
		if _, err := lanes[i].s.Create(ctx, "b", store.Change{State: state, Events: []store.NewEvent{resultEvent(1)}}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for range b.N {
		for i := range lanes {
			start := time.Now()
			if _, err := lanes[i].s.Update(ctx, "b", stepDone(state)); err != nil {
				b.Fatal(err)
			}
			lanes[i].lat = append(lanes[i].lat, time.Since(start))
		}
	}
	b.StopTimer()
	pgMs, fileMs := p50(lanes[0].lat), p50(lanes[1].lat)
	b.ReportMetric(pgMs, "pg-p50-ms")
	b.ReportMetric(fileMs, "files-p50-ms")
	b.ReportMetric(pgMs/fileMs, "pg/files")
}

// BenchmarkList lists 10,000 runs, each with a summary: what "stratum
// query flows" and the gate listing ask the store for.
func BenchmarkList(b *testing.B) {
	ctx := context.Background()
	dsn := pgtest.DSN(b)
	// Filled quickly: the subject is List, not these commits.
	fill := open(b, pgtest.WithParam(dsn, "synchronous_commit", "off"), 0)
	const runs, workers = 10000, 8
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > runs {
					return
				}
				summary := fmt.Appendf(nil, `{"status":"running","flow":"main","waiting":[{"stepId":"review","kind":"gate"}],"n":%d}`, i)
				if _, err := fill.Create(ctx, fmt.Sprintf("run-%05d", i), store.Change{State: benchState(2 << 10), Summary: summary,
					Events: []store.NewEvent{resultEvent(1)}}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	s := open(b, dsn, 0)
	b.ResetTimer()
	for range b.N {
		got, err := s.List(ctx)
		if err != nil || len(got) != runs {
			b.Fatalf("List: %d runs, %v", len(got), err)
		}
	}
}

// BenchmarkConcurrentRuns drives 20 runs at once from 20 clients, each
// making step_dones on its own run: on PostgreSQL spread over 4 stores (4
// servers sharing the database), and on one file store for comparison. It
// reports steps per second and the run_locked answers (there should be
// none: the runs are distinct).
func BenchmarkConcurrentRuns(b *testing.B) {
	ctx := context.Background()
	const servers, clients = 4, 20
	b.Run("postgres", func(b *testing.B) {
		dsn := pgtest.DSN(b)
		var stores []store.Store
		for range servers {
			stores = append(stores, open(b, pgtest.WithParam(dsn, "pool_max_conns", "5"), 0))
		}
		concurrentRuns(ctx, b, stores, clients)
	})
	b.Run("files", func(b *testing.B) {
		files, err := store.NewFileStore(filepath.Join(b.TempDir(), "flows"), nil)
		if err != nil {
			b.Fatal(err)
		}
		concurrentRuns(ctx, b, []store.Store{files}, clients)
	})
}

func concurrentRuns(ctx context.Context, b *testing.B, stores []store.Store, clients int) {
	state := benchState(4 << 10)
	for c := range clients {
		if _, err := stores[0].Create(ctx, fmt.Sprintf("c%d", c), store.Change{State: state}); err != nil {
			b.Fatal(err)
		}
	}
	var next, locked atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for c := range clients {
		wg.Go(func() {
			s, id := stores[c%len(stores)], fmt.Sprintf("c%d", c)
			for next.Add(1) <= int64(b.N) {
				_, err := s.Update(ctx, id, stepDone(state))
				switch {
				case errors.Is(err, store.ErrLocked):
					locked.Add(1)
				case err != nil:
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "steps/s")
	b.ReportMetric(float64(locked.Load()), "run_locked")
}

// BenchmarkRead measures the reads of a run at seq 1000 with a 4 KiB
// state (one event, a poll of the last event, pages of 100, all events), and a Create with one event, on PostgreSQL.
func BenchmarkRead(b *testing.B) {
	ctx := context.Background()
	s := open(b, pgtest.DSN(b), 0)
	state := benchState(4 << 10)
	if _, err := s.Create(ctx, "r", store.Change{State: state, Events: []store.NewEvent{resultEvent(1)}}); err != nil {
		b.Fatal(err)
	}
	for range 111 {
		if _, err := s.Update(ctx, "r", func(cur *store.Snapshot) (*store.Change, error) {
			evs := make([]store.NewEvent, 9)
			for i := range evs {
				evs[i] = resultEvent(cur.Head.Seq + int64(i) + 1)
			}
			return &store.Change{Events: evs}, nil
		}); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("Load", func(b *testing.B) {
		for range b.N {
			if _, err := s.Load(ctx, "r"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Event", func(b *testing.B) {
		for i := range b.N {
			if _, err := s.Event(ctx, "r", int64(1+i%1000)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("EventsPoll", func(b *testing.B) {
		for range b.N {
			if _, err := s.Events(ctx, "r", 999, 0); err != nil {
				b.Fatal(err)
			}
		}
	})
	// A page of 100 stopping before the head costs what it returns,
	// wherever it is; reading all 1000 events costs ten pages.
	for _, p := range []struct {
		name  string
		after int64
		limit int
	}{{"EventsPageFirst", 0, 100}, {"EventsPageMiddle", 500, 100}, {"EventsAll", 0, 0}} {
		b.Run(p.name, func(b *testing.B) {
			for range b.N {
				if _, err := s.Events(ctx, "r", p.after, p.limit); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	var created atomic.Int64
	b.Run("Create", func(b *testing.B) {
		for range b.N {
			if _, err := s.Create(ctx, fmt.Sprintf("new-%d", created.Add(1)), store.Change{State: state, Events: []store.NewEvent{resultEvent(1)}}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
