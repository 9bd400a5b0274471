package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/internal/pgtest"
	"github.com/stratum-go/stratum/store"
	"github.com/stratum-go/stratum/store/postgres"
)

// BenchmarkQueryFlows is `stratum query flows` over a store of 10,000 runs
// (QUERY_RUNS changes the count), a third each at the first step, at a
// gate and cancelled. Creating the runs takes a while on a real disk; TMPDIR=/dev/shm
// makes the set-up quick (the listing reads the same files either way).
// QUERY_HOME=DIR keeps the runs in DIR and reuses them when DIR/flows
// exists, for profiling the listing alone.
func BenchmarkQueryFlows(b *testing.B) {
	home := os.Getenv("QUERY_HOME")
	reuse := false
	if home == "" {
		home = b.TempDir()
	} else if _, err := os.Stat(filepath.Join(home, "flows")); err == nil {
		reuse = true
	}
	fs, err := store.NewFileStore(filepath.Join(home, "flows"), nil)
	if err != nil {
		b.Fatal(err)
	}
	benchQueryFlows(b, fs, reuse, func(k string) string {
		if k == "STRATUM_HOME" {
			return home
		}
		return ""
	})
}

// BenchmarkQueryFlowsPostgres is BenchmarkQueryFlows on the test
// binary's private PostgreSQL server (STRATUM_STORE is its DSN); the runs
// are made with synchronous_commit off, the listing reads with the
// defaults. QUERY_STORE=DSN lists the store DSN names instead, filling it
// only when it holds no run, for profiling the listing alone.
func BenchmarkQueryFlowsPostgres(b *testing.B) {
	dsn, reuse := os.Getenv("QUERY_STORE"), false
	if dsn == "" {
		dsn = pgtest.DSN(b)
	}
	ctx := context.Background()
	fill, err := postgres.Open(ctx, pgtest.WithParam(dsn, "synchronous_commit", "off"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer fill.Close()
	if runs, err := fill.List(ctx); err != nil {
		b.Fatal(err)
	} else if len(runs) > 0 {
		reuse = true
	}
	home := b.TempDir()
	benchQueryFlows(b, fill, reuse, func(k string) string {
		switch k {
		case "STRATUM_HOME":
			return home
		case "STRATUM_STORE":
			return dsn
		}
		return ""
	})
}

// benchQueryFlows fills st with the runs (unless reuse) and times
// `stratum query flows` with getenv.
func benchQueryFlows(b *testing.B, st store.Store, reuse bool, getenv func(string) string) {
	n := 10000
	if s := os.Getenv("QUERY_RUNS"); s != "" {
		fmt.Sscan(s, &n)
	}
	if reuse {
		n = 0
	}
	ctx := context.Background()
	e := engine.New(st, engine.Options{Workspace: engine.WorkspacePolicy{Default: b.TempDir()}})
	for i := 0; i < n; i++ {
		r, err := e.Plan(ctx, engine.PlanRequest{Spec: []byte(querySpec), Input: json.RawMessage(`{}`)})
		if err != nil {
			b.Fatal(err)
		}
		if i%3 == 0 {
			continue
		}
		en := r.Ready[0]
		if r, err = e.StepDone(ctx, engine.StepDoneRequest{RunID: r.RunID, StepID: en.ID, DispatchToken: en.DispatchToken,
			Result: engine.StepResult{Output: json.RawMessage(`{"v":"x"}`)}}); err != nil {
			b.Fatal(err)
		}
		if i%3 == 1 {
			continue
		}
		if _, err := e.Cancel(ctx, r.RunID, "bench"); err != nil {
			b.Fatal(err)
		}
	}
	e.Close()
	b.Run("in-process", func(b *testing.B) {
		env := &Env{Stdout: io.Discard, Stderr: io.Discard, Getenv: getenv}
		for i := 0; i < b.N; i++ {
			// Each command starts on a collected heap, as a new process
			// would, not collecting the previous one's garbage.
			b.StopTimer()
			runtime.GC()
			b.StartTimer()
			if code := run(ctx, env, []string{"query", "flows"}); code != 0 {
				b.Fatalf("exit %d", code)
			}
		}
	})
	// What a person running the command waits for: a new process (this
	// test binary runs the stratum command when named so), its start-up,
	// the listing and the JSON on a pipe.
	b.Run("process", func(b *testing.B) {
		env := os.Environ()
		for _, k := range []string{"STRATUM_HOME", "STRATUM_STORE", "STRATUM_STATE_ROOT"} {
			env = append(env, k+"="+getenv(k))
		}
		var cpu time.Duration
		for i := 0; i < b.N; i++ {
			cmd := exec.Command(os.Args[0], "query", "flows")
			cmd.Args[0] = "stratum" // testscript.Main runs the stratum command
			cmd.Env = env
			out, err := cmd.StdoutPipe()
			if err != nil {
				b.Fatal(err)
			}
			var errb strings.Builder
			cmd.Stderr = &errb
			if err := cmd.Start(); err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, out)
			if err := cmd.Wait(); err != nil {
				b.Fatalf("query flows: %v: %s", err, errb.String())
			}
			cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		}
		// The command's own CPU, less sensitive than ns/op to a busy
		// machine.
		b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
	})
}

// childPeak follows the resident high-water mark (VmHWM, KiB) of process
// pid until it ends, every 10 ms (a mark only rises; reading more often
// slowed the command timed), and sends the last one read. Not the child's
// rusage: a child started by vfork, as os/exec starts it, has the
// parent's high-water mark in its ru_maxrss, and this process has just
// made a 10,000-step run.
func childPeak(pid int) <-chan int64 {
	out := make(chan int64, 1)
	go func() {
		var last int64
		path := fmt.Sprintf("/proc/%d/status", pid)
		for {
			b, err := os.ReadFile(path)
			if err != nil || bytes.Contains(b, []byte("State:\tZ")) {
				out <- last
				return
			}
			if _, rest, ok := bytes.Cut(b, []byte("VmHWM:")); ok {
				fmt.Sscan(string(rest), &last)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	return out
}

// BenchmarkAuditLongRun is `stratum audit RUN` (text, and --json) of a
// finished 10,000-step run (AUDIT_STEPS changes it), run as a child
// process: ns/op is its wall time and peak-rss-MiB its peak resident
// memory. TMPDIR=/dev/shm makes the set-up quick. AUDIT_HOME=DIR keeps
// the run in DIR and reuses it; AUDIT_INPROCESS=1 runs the command in
// this process, to profile it.
func BenchmarkAuditLongRun(b *testing.B) {
	n := 10000
	if s := os.Getenv("AUDIT_STEPS"); s != "" {
		fmt.Sscan(s, &n)
	}
	ctx := context.Background()
	home := os.Getenv("AUDIT_HOME")
	if home == "" {
		home = b.TempDir()
	} else if id, err := os.ReadFile(filepath.Join(home, "run-id")); err == nil {
		benchAudit(b, home, string(id))
		return
	}
	fs, err := store.NewFileStore(filepath.Join(home, "flows"), nil)
	if err != nil {
		b.Fatal(err)
	}
	e := engine.New(fs, engine.Options{Workspace: engine.WorkspacePolicy{Default: b.TempDir()}})
	var spec strings.Builder
	spec.WriteString("version: 1\ncontracts:\n  V: {v: string}\nflows:\n  entry: main\n  main:\n    input: {}\n")
	fmt.Fprintf(&spec, "    output: {from: \"${s%d.output}\", contract: V}\n    steps:\n", n)
	spec.WriteString("      - id: s1\n        do: \"step one\"\n        out: V\n")
	for i := 2; i <= n; i++ {
		fmt.Fprintf(&spec, "      - id: s%d\n        do: \"step %d after ${s%d.output.v}\"\n        out: V\n", i, i, i-1)
	}
	r, err := e.Plan(ctx, engine.PlanRequest{Spec: []byte(spec.String()), Input: json.RawMessage(`{}`)})
	if err != nil {
		b.Fatal(err)
	}
	for r.Status == engine.StatusReady {
		en := r.Ready[0]
		if r, err = e.StepDone(ctx, engine.StepDoneRequest{RunID: r.RunID, StepID: en.ID, DispatchToken: en.DispatchToken,
			Result: engine.StepResult{Output: json.RawMessage(`{"v":"a result of some length for ` + en.ID + `"}`)}}); err != nil {
			b.Fatal(err)
		}
	}
	e.Close()
	if os.Getenv("AUDIT_HOME") != "" {
		if err := os.WriteFile(filepath.Join(home, "run-id"), []byte(r.RunID), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	benchAudit(b, home, r.RunID)
}

// benchAudit times `stratum audit` of runID in home: as a child process,
// or in this process with AUDIT_INPROCESS=1 (for -cpuprofile and
// -memprofile).
func benchAudit(b *testing.B, home, runID string) {
	// The run was just made in this process: collect its garbage and give
	// its memory back now, so that neither this process's collector nor
	// the kernel reclaiming its pages runs beside the command timed.
	debug.FreeOSMemory()
	for name, args := range map[string][]string{"text": {"audit", runID}, "json": {"audit", runID, "--json"}} {
		if os.Getenv("AUDIT_INPROCESS") != "" {
			b.Run(name, func(b *testing.B) {
				env := &Env{Stdout: io.Discard, Stderr: io.Discard, Getenv: func(k string) string {
					if k == "STRATUM_HOME" {
						return home
					}
					return ""
				}}
				for i := 0; i < b.N; i++ {
					if code := run(context.Background(), env, args); code != 0 {
						b.Fatalf("exit %d", code)
					}
				}
			})
			continue
		}
		b.Run(name, func(b *testing.B) {
			var peak int64
			for i := 0; i < b.N; i++ {
				cmd := exec.Command(os.Args[0], args...)
				cmd.Args[0] = "stratum" // testscript.Main runs the stratum command
				cmd.Env = append(os.Environ(), "STRATUM_HOME="+home, "STRATUM_STATE_ROOT=")
				cmd.Stdout = io.Discard
				var errb strings.Builder
				cmd.Stderr = &errb
				if err := cmd.Start(); err != nil {
					b.Fatal(err)
				}
				hwm := childPeak(cmd.Process.Pid)
				if err := cmd.Wait(); err != nil {
					b.Fatalf("%v: %v: %s", args, err, errb.String())
				}
				peak = max(peak, <-hwm)
			}
			b.ReportMetric(float64(peak)/1024, "peak-rss-MiB")
		})
	}
}
