package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stratum-go/stratum/internal/atomicfile"
	"github.com/stratum-go/stratum/internal/cputime"
	"github.com/stratum-go/stratum/store"
)

// linearN is a linear flow of n do steps, each reading its predecessor.
func linearN(n int) string {
	var b strings.Builder
	b.WriteString("version: 1\ncontracts:\n  V: {v: string}\nflows:\n  entry: main\n  main:\n    input: {}\n")
	fmt.Fprintf(&b, "    output: {from: \"${s%d.output}\", contract: V}\n    steps:\n", n)
	b.WriteString("      - {id: s1, do: \"step one\", out: V}\n")
	for i := 2; i <= n; i++ {
		fmt.Fprintf(&b, "      - {id: s%d, do: \"step %d after ${s%d.output.v}\", out: V, ensure: [{expr: \"len(result.v) > 0\"}]}\n", i, i, i-1)
	}
	return b.String()
}

func benchEngine(b *testing.B) (*Engine, context.Context) {
	b.Helper()
	return benchEngineWith(b, Options{})
}

func benchEngineWith(b *testing.B, opts Options) (*Engine, context.Context) {
	b.Helper()
	dir := b.TempDir()
	// STRATUM_BENCH_DIR puts the store elsewhere (a tmpfs such as
	// /dev/shm isolates the engine's CPU cost from the disk's).
	if base := os.Getenv("STRATUM_BENCH_DIR"); base != "" {
		d, err := os.MkdirTemp(base, "bench")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(d) })
		dir = d
	}
	var st store.Store = store.NewMemory()
	// STRATUM_BENCH_STORE=memory measures the engine alone.
	if os.Getenv("STRATUM_BENCH_STORE") != "memory" {
		fs, err := store.NewFileStore(filepath.Join(dir, "flows"), nil)
		if err != nil {
			b.Fatal(err)
		}
		st = fs
	}
	opts.Workspace = WorkspacePolicy{Default: dir}
	e := New(st, opts)
	b.Cleanup(e.Close)
	return e, context.Background()
}

var okOutput = StepResult{Output: json.RawMessage(`{"v":"done"}`)}

// BenchmarkStepDone is the cost of one accepted step_done (state replace
// and event append, both fsynced) in a 100-step linear run.
func BenchmarkStepDone(b *testing.B) {
	e, ctx := benchEngine(b)
	spec := []byte(linearN(100))
	var r *Response
	plan := func() {
		var err error
		if r, err = e.Plan(ctx, PlanRequest{Spec: spec, Input: js(map[string]any{})}); err != nil {
			b.Fatal(err)
		}
	}
	plan()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if r.Status != StatusReady {
			b.StopTimer()
			plan()
			b.StartTimer()
		}
		en := r.Ready[0]
		var err error
		r, err = e.StepDone(ctx, StepDoneRequest{RunID: r.RunID, StepID: en.ID, DispatchToken: en.DispatchToken, Result: okOutput})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStepDoneGrowth drives a 1000-step linear run and reports the
// cost of a step_done early in the run (steps 6-105) and late (steps
// 901-1000): the median wall time (ns/step@10, ns/step@1000), the
// process CPU time per step in each window (cpu-ns/step@10,
// cpu-ns/step@1000) and the ratios. The per-step cost must not grow with
// the run's history. GROWTH_N changes the run length.
func BenchmarkStepDoneGrowth(b *testing.B) {
	e, ctx := benchEngine(b)
	n := 1000
	if s := os.Getenv("GROWTH_N"); s != "" {
		fmt.Sscan(s, &n)
	}
	window := min(100, n/4)
	spec := []byte(linearN(n))
	var early, late []time.Duration
	var cpuEarly, cpuLate time.Duration
	for i := 0; i < b.N; i++ {
		r, err := e.Plan(ctx, PlanRequest{Spec: spec, Input: js(map[string]any{})})
		if err != nil {
			b.Fatal(err)
		}
		var cpuStart time.Duration
		for step := 1; r.Status == StatusReady; step++ {
			if step == 6 || step == n-window+1 {
				cpuStart = cpuTime(b)
			}
			en := r.Ready[0]
			start := time.Now()
			r, err = e.StepDone(ctx, StepDoneRequest{RunID: r.RunID, StepID: en.ID, DispatchToken: en.DispatchToken, Result: okOutput})
			d := time.Since(start)
			if err != nil {
				b.Fatal(err)
			}
			switch {
			case step > 5 && step <= 5+window:
				early = append(early, d)
				if step == 5+window {
					cpuEarly += cpuTime(b) - cpuStart
				}
			case step > n-window:
				late = append(late, d)
				if step == n {
					cpuLate += cpuTime(b) - cpuStart
				}
			}
		}
		if r.Status != StatusCompleted {
			b.Fatalf("run ended %s", r.Status)
		}
	}
	me, ml := median(early), median(late)
	b.ReportMetric(float64(me.Nanoseconds()), "ns/step@10")
	b.ReportMetric(float64(ml.Nanoseconds()), "ns/step@1000")
	b.ReportMetric(float64(ml)/float64(me), "wall-ratio")
	ce := float64(cpuEarly.Nanoseconds()) / float64(len(early))
	cl := float64(cpuLate.Nanoseconds()) / float64(len(late))
	b.ReportMetric(ce, "cpu-ns/step@10")
	b.ReportMetric(cl, "cpu-ns/step@1000")
	b.ReportMetric(cl/ce, "cpu-ratio")
}

// cpuTime is the process's user+system CPU time; a platform without one
// fails the benchmark rather than report a free operation.
func cpuTime(tb testing.TB) time.Duration {
	t, err := cputime.Self()
	if err != nil {
		tb.Fatal(err)
	}
	return t.Total()
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkFsyncFloor measures this machine's floor: an atomic replace of
// a 4 KiB file and a fsynced append of one 300-byte line.
func BenchmarkFsyncFloor(b *testing.B) {
	dir := b.TempDir()
	data := make([]byte, 4096)
	b.Run("replace", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if err := atomicfile.WriteFile(filepath.Join(dir, "state.json"), data, 0o600); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("append", func(b *testing.B) {
		line := []byte(strings.Repeat("x", 299))
		for i := 0; i < b.N; i++ {
			if err := atomicfile.AppendLine(filepath.Join(dir, "events.jsonl"), line, 0o600); err != nil {
				b.Fatal(err)
			}
		}
	})
	_ = os.Remove(filepath.Join(dir, "events.jsonl"))
}

// BenchmarkStoreUpdate is the store's own floor for what one step_done
// writes: a 4 KiB state document and three small events in one Update.
func BenchmarkStoreUpdate(b *testing.B) {
	dir := b.TempDir()
	if base := os.Getenv("STRATUM_BENCH_DIR"); base != "" {
		d, err := os.MkdirTemp(base, "bench")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(d) })
		dir = d
	}
	fs, err := store.NewFileStore(filepath.Join(dir, "flows"), nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	state := []byte(`{"pad":"` + strings.Repeat("x", 4096) + `"}`)
	if _, err := fs.Create(ctx, "r1", store.Change{State: state}); err != nil {
		b.Fatal(err)
	}
	ev := store.NewEvent{Type: "result", At: time.Now(), Data: json.RawMessage(`{"stepId":"s1","detail":{"attempt":1,"result":{"v":"done"}}}`)}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := fs.Update(ctx, "r1", func(*store.Snapshot) (*store.Change, error) {
			return &store.Change{State: state, Events: []store.NewEvent{ev, ev, ev}}, nil
		}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLinearRun drives whole linear runs of N steps and reports the
// cost per step (ns/step): the cost of a run must grow linearly with its
// steps, so ns/step at N=10000 stays within 1.5x of N=100. With
// STRATUM_BENCH_DIR=/dev/shm it measures the engine and the file store's
// CPU, not the disk; with STRATUM_BENCH_STORE=memory the engine alone.
func BenchmarkLinearRun(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			if n > 1000 && os.Getenv("STRATUM_BENCH_LONG") == "" {
				b.Skip("set STRATUM_BENCH_LONG=1 for the 10,000-step run")
			}
			e, ctx := benchEngine(b)
			spec := []byte(linearN(n))
			b.ResetTimer()
			cpu0 := cpuTime(b)
			for i := 0; i < b.N; i++ {
				r, err := e.Plan(ctx, PlanRequest{Spec: spec})
				if err != nil {
					b.Fatal(err)
				}
				for r.Status == StatusReady {
					en := r.Ready[0]
					if r, err = e.StepDone(ctx, StepDoneRequest{RunID: r.RunID, StepID: en.ID, DispatchToken: en.DispatchToken, Result: okOutput}); err != nil {
						b.Fatal(err)
					}
				}
				if r.Status != StatusCompleted {
					b.Fatalf("run ended %s", r.Status)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/step")
			b.ReportMetric(float64((cpuTime(b)-cpu0).Nanoseconds())/float64(b.N*n), "cpu-ns/step")
		})
	}
}

// fanoutSpec is a consumer fanout over input.items with the given
// concurrency, one stage per item.
func fanoutSpec(concurrency int) string {
	return fmt.Sprintf(`version: 1
contracts:
  V: {value: string}
flows:
  entry: main
  main:
    input: {items: "string[]"}
    output: {from: "${after.output}", contract: V}
    steps:
      - id: fan
        fanout:
          over: "${input.items}"
          concurrency: %d
          isolation: none
          require: all
          merge: sequential
          dispatch: consumer
          steps:
            - do: "Inspect ${item}"
              out: V
              attempts: 1
      - id: after
        after: [fan]
        do: "after"
        out: V
`, concurrency)
}

// benchItems is a fanout's input of n distinct strings.
func benchItems(n int) []string {
	items := make([]string, n)
	for i := range items {
		items[i] = fmt.Sprintf("item-%d", i)
	}
	return items
}

// BenchmarkConsumerFanout reports every item of a consumer fanout of N
// items, one at a time, and reports the cost per item (ns/item): the
// cost of a fanout must grow linearly with its items, so ns/item at
// N=5000 stays within 1.5x of N=100. STRATUM_BENCH_STORE and
// STRATUM_BENCH_DIR as for BenchmarkLinearRun.
func BenchmarkConsumerFanout(b *testing.B) {
	for _, n := range []int{100, 1000, 5000} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			e, ctx := benchEngine(b)
			items := benchItems(n)
			spec := []byte(fanoutSpec(4))
			out := StepResult{Output: json.RawMessage(`{"value":"ok"}`)}
			b.ResetTimer()
			cpu0 := cpuTime(b)
			for i := 0; i < b.N; i++ {
				r, err := e.Plan(ctx, PlanRequest{Spec: spec, Input: js(map[string]any{"items": items})})
				if err != nil {
					b.Fatal(err)
				}
				reported := 0
				for r.Status == StatusReady && r.Ready[0].FanoutItem != nil {
					en := r.Ready[0]
					if r, err = e.StepDone(ctx, StepDoneRequest{RunID: r.RunID, StepID: en.ID, DispatchToken: en.DispatchToken, Result: out, OnlyNew: true}); err != nil {
						b.Fatal(err)
					}
					reported++
					if len(r.Ready) == 0 && r.Status == StatusReady {
						r, err = e.Status(ctx, r.RunID)
						if err != nil {
							b.Fatal(err)
						}
					}
				}
				if reported != n {
					b.Fatalf("reported %d items of %d (status %s)", reported, n, r.Status)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/item")
			b.ReportMetric(float64((cpuTime(b)-cpu0).Nanoseconds())/float64(b.N*n), "cpu-ns/item")
		})
	}
}

// instantDispatcher answers every item at once: it measures what the
// engine itself costs per item (an agent's own time is not in it).
type instantDispatcher struct{}

func (instantDispatcher) Dispatch(ctx context.Context, req DispatchRequest) (DispatchResult, error) {
	return DispatchResult{Output: map[string]any{"value": "ok"}}, nil
}

// engineFanoutSpec is an engine-dispatched fanout over input.items.
func engineFanoutSpec(concurrency int) string {
	return strings.Replace(fanoutSpec(concurrency), "          dispatch: consumer\n", "", 1)
}

// runEngineFanout plans an engine fanout over n items and waits for it
// to reach the step after it.
func runEngineFanout(b *testing.B, e *Engine, ctx context.Context, n, concurrency int) {
	items := benchItems(n)
	r, err := e.Plan(ctx, PlanRequest{Spec: []byte(engineFanoutSpec(concurrency)), Input: js(map[string]any{"items": items})})
	if err != nil {
		b.Fatal(err)
	}
	for {
		if r.Status != StatusReady && r.Status != StatusRunning {
			b.Fatalf("run ended %s: %s", r.Status, dump(r.Failure))
		}
		if len(r.Ready) > 0 && r.Ready[0].ID == "after" {
			return
		}
		time.Sleep(10 * time.Millisecond) // as a driver polls, more often
		if r, err = e.Status(ctx, r.RunID); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEngineFanout runs engine fanouts of N items with an agent that
// answers at once, and reports the engine's cost per item (ns/item): it
// must grow linearly with the items (N=5000 within 1.5x of N=100).
func BenchmarkEngineFanout(b *testing.B) {
	for _, n := range []int{100, 1000, 5000} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			e, ctx := benchEngineWith(b, Options{Dispatcher: instantDispatcher{}})
			b.ResetTimer()
			cpu0 := cpuTime(b)
			for i := 0; i < b.N; i++ {
				runEngineFanout(b, e, ctx, n, 8)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/item")
			b.ReportMetric(float64((cpuTime(b)-cpu0).Nanoseconds())/float64(b.N*n), "cpu-ns/item")
		})
	}
}

// BenchmarkEngineFanoutConcurrency runs an engine fanout of 128 items
// whose agent is a real process that sleeps 50 ms, at concurrency 4 and
// 32: at 32 the fanout must be at least as fast as at 4 (ideally 8x).
func BenchmarkEngineFanoutConcurrency(b *testing.B) {
	for _, c := range []int{4, 32} {
		b.Run(fmt.Sprintf("concurrency=%d", c), func(b *testing.B) {
			d := &procDispatcher{script: `sleep 0.05; printf '{"value":"ok"}'`}
			e, ctx := benchEngineWith(b, Options{Dispatcher: d})
			b.ResetTimer()
			cpu0 := cpuTime(b)
			for i := 0; i < b.N; i++ {
				runEngineFanout(b, e, ctx, 128, c)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*128), "ns/item")
			b.ReportMetric(float64((cpuTime(b)-cpu0).Nanoseconds())/float64(b.N*128), "cpu-ns/item")
		})
	}
}

// BenchmarkAlternatingEngines is two processes continuing one run (two
// engines, each with its own caches, on one file store): from step 500
// of a 1000-step run, 100 step_done calls alternate between them, and
// 100 more go to one engine alone. The alternating calls must cost what
// changed since the engine last saw the run, not the run's history:
// ns/step-alternating against ns/step-pinned (the switch ratio).
// STRATUM_BENCH_DIR as for BenchmarkLinearRun.
func BenchmarkAlternatingEngines(b *testing.B) {
	dir := b.TempDir()
	if base := os.Getenv("STRATUM_BENCH_DIR"); base != "" {
		d, err := os.MkdirTemp(base, "bench")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(d) })
		dir = d
	}
	open := func() *Engine {
		fs, err := store.NewFileStore(filepath.Join(dir, "flows"), nil)
		if err != nil {
			b.Fatal(err)
		}
		e := New(fs, Options{Workspace: WorkspacePolicy{Default: dir}})
		b.Cleanup(e.Close)
		return e
	}
	engines := []*Engine{open(), open()}
	ctx := context.Background()
	spec := []byte(linearN(1000))
	var pinned, alternating time.Duration
	var calls int
	for i := 0; i < b.N; i++ {
		r, err := engines[0].Plan(ctx, PlanRequest{Spec: spec})
		if err != nil {
			b.Fatal(err)
		}
		step := func(e *Engine) time.Duration {
			en := r.Ready[0]
			start := time.Now()
			if r, err = e.StepDone(ctx, StepDoneRequest{RunID: r.RunID, StepID: en.ID, DispatchToken: en.DispatchToken, Result: okOutput}); err != nil {
				b.Fatal(err)
			}
			return time.Since(start)
		}
		for s := 1; s < 500; s++ {
			step(engines[0])
		}
		for s := 0; s < 100; s++ {
			alternating += step(engines[(s+1)%2])
		}
		for s := 0; s < 100; s++ {
			pinned += step(engines[0])
		}
		calls += 100
	}
	a := float64(alternating.Nanoseconds()) / float64(calls)
	p := float64(pinned.Nanoseconds()) / float64(calls)
	b.ReportMetric(a, "ns/step-alternating")
	b.ReportMetric(p, "ns/step-pinned")
	b.ReportMetric(a/p, "switch-ratio")
}

// BenchmarkFanoutStatus is a Status of a run inside a consumer fanout of
// N items with half of them settled, as a driver or a view polls it. It
// grows with N: a Status decodes every item (docs/engine.md, "Cost",
// gives the figures).
func BenchmarkFanoutStatus(b *testing.B) {
	for _, n := range []int{100, 1000, 5000} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			e, ctx := benchEngine(b)
			items := benchItems(n)
			r, err := e.Plan(ctx, PlanRequest{Spec: []byte(fanoutSpec(4)), Input: js(map[string]any{"items": items})})
			if err != nil {
				b.Fatal(err)
			}
			runID := r.RunID
			out := StepResult{Output: json.RawMessage(`{"value":"ok"}`)}
			for settled := 0; settled < n/2; settled++ {
				en := r.Ready[0]
				if r, err = e.StepDone(ctx, StepDoneRequest{RunID: runID, StepID: en.ID, DispatchToken: en.DispatchToken, Result: out}); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			cpu0 := cpuTime(b)
			for i := 0; i < b.N; i++ {
				if r, err = e.Status(ctx, runID); err != nil || r.Status != StatusReady || len(r.Ready) != 4 {
					b.Fatalf("%v %s %d", err, r.Status, len(r.Ready))
				}
			}
			b.ReportMetric(float64((cpuTime(b)-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/status")
		})
	}
}
