package store

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"
)

// BenchmarkConcurrentUpdates drives RUNS runs at once (1 and 20), each
// by its own goroutine doing step_done-shaped Updates (a 4 KiB state and
// one ~300-byte event) on its own run: updates/s is the store's
// throughput when several updates are ready at once (docs/storage.md,
// "Group commit"). Each b.N iteration is one update of every run.
//
//	go test ./store -run '^$' -bench ConcurrentUpdates -benchtime 50x -count 5
//
// sync=group is the store as it is (group commit where the kernel allows
// it); sync=each turns group commit off, each write fsyncing its own
// files as before it. waits/flush is how many writes' flushes one group
// flush answered on average (each write waits for two).
func BenchmarkConcurrentUpdates(b *testing.B) {
	for _, runs := range []int{1, 20} {
		for _, mode := range []string{"each", "group"} {
			b.Run(fmt.Sprintf("runs=%d/sync=%s", runs, mode), func(b *testing.B) {
				benchConcurrentUpdates(b, runs, mode == "each")
			})
		}
	}
}

func benchConcurrentUpdates(b *testing.B, runs int, each bool) {
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
	s.syncEach = each
	flushes0, waits0 := groupCounts()
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
	if flushes, waits := groupCounts(); flushes > flushes0 {
		b.ReportMetric(float64(waits-waits0)/float64(flushes-flushes0), "waits/flush")
	}
}
