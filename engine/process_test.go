package engine

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stratum-go/stratum/store"
)

// The test binary doubles as the child process of the crash and
// contention tests: with STRATUM_ENGINE_CHILD set it runs that role
// instead of the tests.
func TestMain(m *testing.M) {
	switch os.Getenv("STRATUM_ENGINE_CHILD") {
	case "":
		os.Exit(m.Run())
	case "crash":
		os.Exit(crashChild(os.Args[len(os.Args)-2], os.Args[len(os.Args)-1]))
	case "fanout-merge":
		a := os.Args[len(os.Args)-4:]
		os.Exit(mergeCrashChild(a[0], a[1], a[2], a[3]))
	case "contend":
		os.Exit(contendChild(os.Args[len(os.Args)-3], os.Args[len(os.Args)-2], os.Args[len(os.Args)-1]))
	}
	os.Exit(2)
}

const linearSpec = `
version: 1
contracts:
  V: {v: string}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${s5.output}", contract: V}
    steps:
      - {id: s1, do: one, out: V}
      - {id: s2, do: "two ${s1.output.v}", out: V}
      - {id: s3, do: "three ${s2.output.v}", out: V, ensure: [{expr: "result.v != 'retry'"}]}
      - {id: s4, do: "four ${s3.output.v}", out: V}
      - {id: s5, do: "five ${s4.output.v}", out: V}
`

// crashChild drives runs forever: it continues every running run of the
// store, then plans a new one. After each acknowledged step_done it
// appends "runID stepID" to the ack file.
func crashChild(root, ackPath string) int {
	ctx := context.Background()
	fs, err := store.NewFileStore(root, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	e := New(fs, Options{Workspace: WorkspacePolicy{Default: root}})
	ack, err := os.OpenFile(ackPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	n := 0
	for {
		runs, err := e.ListRuns(ctx)
		if err != nil {
			fmt.Fprintln(os.Stderr, "list:", err)
			return 1
		}
		for _, rs := range runs {
			if rs.Status != StatusRunning {
				continue
			}
			r, err := e.Resume(ctx, rs.RunID)
			if err != nil {
				fmt.Fprintln(os.Stderr, "resume:", err)
				return 1
			}
			for r.Status == StatusReady {
				en := r.Ready[0]
				out := `{"v":"ok"}`
				n++
				if en.ID == "s3" && n%3 == 0 {
					out = `{"v":"retry"}` // a failed attempt now and then
				}
				r, err = e.StepDone(ctx, StepDoneRequest{RunID: r.RunID, StepID: en.ID, DispatchToken: en.DispatchToken,
					Result: StepResult{Output: json.RawMessage(out)}})
				if err != nil {
					fmt.Fprintln(os.Stderr, "step done:", err)
					return 1
				}
				if out != `{"v":"retry"}` {
					if _, err := ack.WriteString(rs.RunID + " " + en.ID + "\n"); err != nil {
						return 1
					}
				}
			}
		}
		if _, err := e.Plan(ctx, PlanRequest{Spec: []byte(linearSpec), Input: js(map[string]any{})}); err != nil {
			fmt.Fprintln(os.Stderr, "plan:", err)
			return 1
		}
	}
}

func childCmd(t *testing.T, role string, args ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, append([]string{"-test.run=^$"}, args...)...)
	cmd.Env = append(os.Environ(), "STRATUM_ENGINE_CHILD="+role)
	return cmd
}

// TestCrashSafety kills a child that drives runs with SIGKILL at random
// moments. Afterwards every run loads and verifies, every step the child
// saw acknowledged is present, and the unfinished runs can be continued.
func TestCrashSafety(t *testing.T) {
	if testing.Short() {
		t.Skip("crash loop: runs child processes for a few seconds")
	}
	dir := t.TempDir()
	root := filepath.Join(dir, "flows")
	ackPath := filepath.Join(dir, "acks")
	rng := rand.New(rand.NewPCG(1, uint64(time.Now().UnixNano())))
	iterations := 25
	for i := 0; i < iterations; i++ {
		cmd := childCmd(t, "crash", root, ackPath)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(30+rng.IntN(150)) * time.Millisecond)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		err := cmd.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("iteration %d: child ended by itself (%v): %s", i, err, stderr.String())
		}
	}
	fs, err := store.NewFileStore(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := New(fs, Options{})
	defer e.Close()
	ctx := context.Background()
	acked := map[string][]string{}
	f, err := os.Open(ackPath)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(f)
	total := 0
	for sc.Scan() {
		if run, step, ok := strings.Cut(sc.Text(), " "); ok {
			acked[run] = append(acked[run], step)
			total++
		}
	}
	f.Close()
	runs, err := e.ListRuns(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if total < iterations || len(runs) < 2 {
		t.Fatalf("the child made too little progress to test anything: %d acks, %d runs", total, len(runs))
	}
	for _, rs := range runs {
		if rs.Error != "" {
			t.Fatalf("run %s does not load: %s", rs.RunID, rs.Error)
		}
		if _, err := fs.Verify(ctx, rs.RunID, store.VerifyOptions{}); err != nil {
			t.Fatalf("run %s: chain does not verify: %v", rs.RunID, err)
		}
		a, err := e.Audit(ctx, rs.RunID)
		if err != nil {
			t.Fatal(err)
		}
		for _, step := range acked[rs.RunID] {
			if st := a.Steps[step]; st == nil || st.Status != StepSucceeded {
				t.Fatalf("run %s: step %s was acknowledged but is %s", rs.RunID, step, dump(st))
			}
		}
		delete(acked, rs.RunID)
		// Every run can be continued to completion in this process.
		if rs.Status == StatusRunning {
			r, err := e.Resume(ctx, rs.RunID)
			if err != nil {
				t.Fatal(err)
			}
			for r.Status == StatusReady {
				en := r.Ready[0]
				r, err = e.StepDone(ctx, StepDoneRequest{RunID: r.RunID, StepID: en.ID, DispatchToken: en.DispatchToken,
					Result: StepResult{Output: json.RawMessage(`{"v":"ok"}`)}})
				if err != nil {
					t.Fatal(err)
				}
			}
			if r.Status != StatusCompleted {
				t.Fatalf("run %s: %s", rs.RunID, dump(r))
			}
		}
	}
	if len(acked) > 0 {
		t.Fatalf("acknowledged steps of runs that do not exist: %v", acked)
	}
	t.Logf("%d kills, %d runs, %d acknowledged steps verified", iterations, len(runs), total)
}

// contendChild waits for the start signal, then reports the step once and
// prints the outcome: "accepted" or the error code.
func contendChild(root, runID, token string) int {
	fs, err := store.NewFileStore(root, &store.Options{LockTimeout: 30 * time.Second})
	if err != nil {
		return 1
	}
	e := New(fs, Options{})
	in := bufio.NewReader(os.Stdin)
	if _, err := in.ReadString('\n'); err != nil {
		return 1
	}
	_, err = e.StepDone(context.Background(), StepDoneRequest{RunID: runID, StepID: "s1", DispatchToken: token,
		Result: StepResult{Output: json.RawMessage(`{"v":"ok"}`)}})
	if err != nil {
		fmt.Println(CodeOf(err))
		return 0
	}
	fmt.Println("accepted")
	return 0
}

// TestContention: two processes report the same step with the same token
// at the same moment; exactly one is accepted, the other is refused as
// stale, and the state is consistent.
func TestContention(t *testing.T) {
	h := newFileHarness(t, Options{})
	for round := 0; round < 5; round++ {
		r := h.plan(linearSpec, map[string]any{})
		tok := entry(t, r, "s1").DispatchToken
		var cmds []*exec.Cmd
		var outs []*strings.Builder
		var starts []*os.File
		for i := 0; i < 2; i++ {
			cmd := childCmd(t, "contend", h.files.Root(), r.RunID, tok)
			pr, pw, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stdin = pr
			var out strings.Builder
			cmd.Stdout = &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			pr.Close()
			cmds, outs, starts = append(cmds, cmd), append(outs, &out), append(starts, pw)
		}
		time.Sleep(150 * time.Millisecond) // both children are up and waiting
		var wg sync.WaitGroup
		for _, w := range starts {
			wg.Add(1)
			go func() { defer wg.Done(); _, _ = w.WriteString("go\n"); w.Close() }()
		}
		wg.Wait()
		for _, c := range cmds {
			if err := c.Wait(); err != nil {
				t.Fatal(err)
			}
		}
		got := []string{strings.TrimSpace(outs[0].String()), strings.TrimSpace(outs[1].String())}
		if !(got[0] == "accepted" && got[1] == CodeStaleToken) && !(got[1] == "accepted" && got[0] == CodeStaleToken) {
			t.Fatalf("round %d: outcomes %v, want one accepted and one %s", round, got, CodeStaleToken)
		}
		a := h.audit(r.RunID)
		if s1 := a.Steps["s1"]; s1.Status != StepSucceeded || len(s1.Attempts) != 1 || h.persisted(r.RunID).Steps["s1"].AcceptedDispatchToken != tok {
			t.Fatalf("s1 %s", dump(s1))
		}
		if countPrefix(h.eventTypes(r.RunID), "result(s1)") != 1 {
			t.Fatalf("events %v", h.eventTypes(r.RunID))
		}
		if _, err := h.store.Verify(h.ctx, r.RunID, store.VerifyOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}
