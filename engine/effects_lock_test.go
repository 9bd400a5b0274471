//go:build unix

package engine

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stratum-go/stratum/internal/proctest"
	"github.com/stratum-go/stratum/judge"
	"github.com/stratum-go/stratum/store"
)

// A spec with an evaluate command in parallel with a do step: while the
// command runs, the do step is ready and can be reported.
func parallelEvaluateSpec(command string) string {
	return `
version: 1
contracts:
  V: {status: string, children: array, reason: string}
  R: {v: string}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${work.output}", contract: R}
    steps:
      - id: check
        evaluate:
          command: ` + strconv.Quote(command) + `
          timeout_ms: 120000
        out: V
      - id: work
        do: "work"
        out: R
`
}

// planInBackground plans spec in a goroutine (Plan runs the evaluate
// command before it returns) and returns the run id once the command has
// started, and a channel with Plan's outcome.
func planInBackground(t *testing.T, h *harness, spec, pidFile string) (string, <-chan error) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := h.e.Plan(h.ctx, PlanRequest{Spec: []byte(spec)})
		done <- err
	}()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if b, err := os.ReadFile(pidFile); err == nil && strings.HasSuffix(string(b), "\n") {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("plan returned before the command started: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the evaluate command never started")
		}
		time.Sleep(5 * time.Millisecond)
	}
	infos, err := h.store.List(h.ctx)
	if err != nil || len(infos) != 1 {
		t.Fatalf("runs %v %v", infos, err)
	}
	return infos[0].ID, done
}

func readPID(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// gone waits (boundedly) for a process to disappear; a zombie waiting to
// be reaped by whoever adopted it counts as gone.
func gone(pid int) bool { return proctest.WaitGone(pid, 4*time.Second) }

// An evaluate command runs without the run's lock: while it sleeps, the
// parallel do step is reported (no run_locked), and a cancel takes effect
// at once, killing the command's process group.
func TestEvaluateRunsOutsideTheLock(t *testing.T) {
	for _, from := range []string{"this process", "another process"} {
		t.Run(from, func(t *testing.T) {
			h := newHarness(t, Options{})
			pidFile := filepath.Join(h.ws, "pid")
			// The command records its pid and a grandchild's, then sleeps.
			cmd := `sleep 60 & echo $! > grandchild; echo $$ > pid; wait`
			runID, planned := planInBackground(t, h, parallelEvaluateSpec(cmd), pidFile)
			pid, grandchild := readPID(t, pidFile), readPID(t, filepath.Join(h.ws, "grandchild"))

			other := h.e
			if from == "another process" {
				other = h.reopen(Options{})
			}
			st, err := other.Status(h.ctx, runID)
			if err != nil {
				t.Fatal(err)
			}
			if !hasWaiting(st, "check", WaitEvaluate) {
				t.Fatalf("while the command runs the run should wait on it: %s", dump(st))
			}
			// Lock-free: the parallel step is accepted while the command runs.
			if _, err := other.StepDone(h.ctx, StepDoneRequest{RunID: runID, StepID: "work", DispatchToken: entry(t, st, "work").DispatchToken,
				Result: StepResult{Output: json.RawMessage(`{"v":"x"}`)}}); err != nil {
				t.Fatalf("step_done while the command runs: %v", err)
			}
			began := time.Now()
			if _, err := other.Cancel(h.ctx, runID, "stop"); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-planned:
				if err != nil {
					t.Fatalf("plan: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("plan still waits for the cancelled command")
			}
			t.Logf("cancel from %s: plan returned %v after the cancel", from, time.Since(began).Round(time.Millisecond))
			if !gone(pid) || !gone(grandchild) {
				t.Fatalf("the command's process group outlived the cancel (pid %d, grandchild %d)", pid, grandchild)
			}
			if st, _ := h.e.Status(h.ctx, runID); st.Status != StatusCancelled {
				t.Fatalf("status %s", st.Status)
			}
			if n := countPrefix(h.eventTypes(runID), "result(check)"); n != 0 {
				t.Fatalf("the cancelled command's outcome was recorded: %v", h.eventTypes(runID))
			}
		})
	}
}

// A process that dies while its command runs leaves the reservation;
// Resume in a fresh engine records it interrupted and runs the command
// again, and the run completes.
func TestResumeTakesOverAnInterruptedEvaluate(t *testing.T) {
	h := newHarness(t, Options{})
	cmd := `echo x >> runs; echo '{"status":"closed","children":[],"reason":"ok"}'`
	spec := evaluateSpec(cmd, 5000)
	// Reserve the command in a transition but never run it: the state a
	// process killed after the reservation leaves.
	c, err := h.e.compileSource([]byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	st := &runState{Format: stateFormat, ID: "run-interrupted", FlowName: c.plan.EntryFlow().Name, RevisionDigest: c.digest,
		WorkspaceRoot: h.ws, CreatedAt: now, UpdatedAt: now, Status: StatusRunning, Steps: map[string]*stepState{},
		Input: Some(mustModel(t, `{"n":1}`)), Spec: c.specJSON, SpecSeq: 1}
	tx := newTxn(h.ctx, h.e, st, c)
	tx.fullSweep = true
	tx.emit(evSpec, "", map[string]any{"json": string(c.specJSON), "revisionDigest": c.digest})
	tx.advance()
	if len(tx.effects) != 1 {
		t.Fatalf("effects %v", tx.effects)
	}
	doc, err := tx.encode()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.store.Create(h.ctx, st.ID, store.Change{State: doc, Events: tx.events}); err != nil {
		t.Fatal(err)
	}
	r, err := h.reopen(Options{}).Resume(h.ctx, st.ID)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, r, StatusCompleted)
	types := h.eventTypes(st.ID)
	if countPrefix(types, "effect_interrupted(check)") != 1 || countPrefix(types, "result(check)") != 1 {
		t.Fatalf("events %v", types)
	}
	if b, _ := os.ReadFile(filepath.Join(h.ws, "runs")); string(b) != "x\n" {
		t.Fatalf("the command ran %q times", b)
	}
}

func mustModel(t *testing.T, s string) any {
	t.Helper()
	v, err := toModel(json.RawMessage(s))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// A judge is asked outside the run's lock: while a slow judge decides
// one step's ensure, another step of the run is reported and accepted.
func TestJudgeRunsOutsideTheLock(t *testing.T) {
	dir := t.TempDir()
	gate := filepath.Join(dir, "release")
	started := filepath.Join(dir, "started")
	script := filepath.Join(dir, "judge.sh")
	body := "#!/bin/sh\ncat >/dev/null\ntouch " + started + "\nwhile [ ! -f " + gate + " ]; do sleep 0.01; done\n" +
		`echo '{"holds": true, "reason": "fine", "model": "slow"}'` + "\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	j, err := judge.FromEnv(func(k string) string {
		if k == judge.EnvCommand {
			return script
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.NewFileStore(filepath.Join(t.TempDir(), "flows"), &store.Options{LockTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, Options{})
	h.store = st
	h.e = New(st, withExecutors(Options{Judge: j, Workspace: WorkspacePolicy{Default: h.ws}}, t.TempDir()))
	t.Cleanup(h.e.Close)
	spec := `
version: 1
contracts:
  R: {v: string}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${b.output}", contract: R}
    steps:
      - id: a
        do: "a"
        out: R
        ensure:
          - judged: {statement: "a is good", stakes: cheap}
      - id: b
        do: "b"
        out: R
`
	r := h.plan(spec, map[string]any{})
	judged := make(chan error, 1)
	go func() {
		_, err := h.e.StepDone(h.ctx, StepDoneRequest{RunID: r.RunID, StepID: "a", DispatchToken: entry(t, r, "a").DispatchToken,
			Result: StepResult{Output: json.RawMessage(`{"v":"x"}`)}})
		judged <- err
	}()
	for deadline := time.Now().Add(20 * time.Second); ; {
		if _, err := os.Stat(started); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the judge never started")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// The judge holds no lock: b is accepted within the store's 200 ms
	// lock timeout while the judge still decides a.
	if _, err := h.e.StepDone(h.ctx, StepDoneRequest{RunID: r.RunID, StepID: "b", DispatchToken: entry(t, r, "b").DispatchToken,
		Result: StepResult{Output: json.RawMessage(`{"v":"y"}`)}}); err != nil {
		t.Fatalf("step_done of b while the judge decides a: %v", err)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-judged:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the judged report never returned")
	}
	final, err := h.e.Status(context.Background(), r.RunID)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, final, StatusCompleted)
	if n := countPrefix(h.eventTypes(r.RunID), "judged(a)"); n != 1 {
		t.Fatalf("judged events %v", h.eventTypes(r.RunID))
	}
}

// The ensures of one report share one work budget: many expensive
// ensures stop at the budget with a resource_limit reason instead of
// costing each its own limit.
func TestEnsuresShareOneBudget(t *testing.T) {
	h := newHarness(t, Options{EnsureBudget: 2_000_000})
	var b strings.Builder
	b.WriteString(`
version: 1
contracts:
  R: {s: string}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${a.output}", contract: R}
    steps:
      - id: a
        do: "a"
        out: R
        attempts: 1
        ensure:
`)
	for i := 0; i < 200; i++ {
		b.WriteString("          - expr: '!matches(result.s, \"[ab]+c" + strconv.Itoa(i) + "\")'\n")
	}
	r := h.plan(b.String(), map[string]any{})
	r = h.ok(r, "a", `{"s":"`+strings.Repeat("ab", 2000)+`"}`)
	wantFailure(t, r, StatusFailed, "resource_limit")
}
