package store

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"
)

// BenchmarkConcurrentUpdates drives 1, then 20 runs at once, each
// by its own goroutine doing step_done-shaped Updates (a 4 KiB state and
// one ~300-byte event) on its own run: updates/s is the store's
// throughput when several updates are ready at once (docs/storage.md,
// "Concurrent writes"). Each b.N iteration is one update of every run.
//
//	go test ./store -run '^$' -bench ConcurrentUpdates -benchtime 40x -count 5
func BenchmarkConcurrentUpdates(b *testing.B) {
	for _, runs := range []int{1, 20} {
		b.Run(fmt.Sprintf("runs=%d", runs), func(b *testing.B) {
			benchConcurrentUpdates(b, runs)
		})
	}
}

func benchConcurrentUpdates(b *testing.B, runs int) {
	ctx := context.Background()
	s := newStore(b, nil)
	if dir := os.Getenv("STRATUM_BENCH_DIR"); dir != "" {
		d, err := os.MkdirTemp(dir, "bench")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(d) })
		if s, err = NewFileStore(d, nil); err != nil {
			b.Fatal(err)
		}
	}
	state := benchState(4096)
	ids := make([]string, runs)
	for r := range ids {
		ids[r] = fmt.Sprintf("run-%d", r)
		if _, err := s.Create(ctx, ids[r], Change{State: state, Events: historyEvents(1)}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, runs)
	for _, id := range ids {
		wg.Go(func() {
			for range b.N {
				if _, err := s.Update(ctx, id, func(cur *Snapshot) (*Change, error) {
					return &Change{State: state, Events: []NewEvent{resultEvent(cur.Head.Seq + 1)}}, nil
				}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	b.ReportMetric(float64(runs*b.N)/elapsed.Seconds(), "updates/s")
}
