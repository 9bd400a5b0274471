package postgres_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/internal/pgtest"
	"github.com/stratum-go/stratum/store"
	"github.com/stratum-go/stratum/store/postgres"
)

// The process tests run engines in child processes (this test binary
// again, with STRATUM_POSTGRES_CHILD naming the role), each with a
// STRATUM_HOME of its own, sharing one database: machines of a team.

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

// envChild names the role of a child process of a process test.
const envChild = "STRATUM_POSTGRES_CHILD"

func runChild(role string) int {
	args := os.Args[len(os.Args)-2:]
	var err error
	switch role {
	case "contend":
		err = contendChild(args[1])
	case "crash":
		err = crashChild(args[0], args[1])
	case "drive":
		err = driveChild(args[1])
	default:
		err = fmt.Errorf("unknown child role %q", role)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// childEngine is an engine over the database, in a STRATUM_HOME of the
// child's own.
func childEngine(dsn string) (*engine.Engine, *postgres.Store, error) {
	s, err := postgres.Open(context.Background(), dsn, &postgres.Options{LockTimeout: 30 * time.Second})
	if err != nil {
		return nil, nil, err
	}
	home := os.Getenv("STRATUM_HOME")
	return engine.New(s, engine.Options{Workspace: engine.WorkspacePolicy{Default: home}}), s, nil
}

func childCmd(t *testing.T, role string, args ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, append([]string{"-test.run=^$"}, args...)...)
	cmd.Env = append(os.Environ(), envChild+"="+role, "STRATUM_HOME="+t.TempDir())
	return cmd
}

// contendChild reports "RUN TOKEN" lines read from stdin as step s1's
// result, printing "accepted" or the engine's error code for each.
func contendChild(dsn string) error {
	e, s, err := childEngine(dsn)
	if err != nil {
		return err
	}
	defer s.Close()
	defer e.Close()
	fmt.Println("ready")
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		run, tok, _ := strings.Cut(in.Text(), " ")
		_, err := e.StepDone(context.Background(), engine.StepDoneRequest{RunID: run, StepID: "s1", DispatchToken: tok,
			Result: engine.StepResult{Output: json.RawMessage(`{"v":"ok"}`)}})
		if err != nil {
			fmt.Println(engine.CodeOf(err))
		} else {
			fmt.Println("accepted")
		}
	}
	return in.Err()
}

// TestContentionAcrossProcesses: eight processes, each with its own
// STRATUM_HOME, report the same step with the same dispatch token at the
// same moment, for 32 rounds: each time exactly one is accepted, the
// others are refused as stale, and the run holds one result.
func TestContentionAcrossProcesses(t *testing.T) {
	const procs, rounds = 8, 32
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	s := open(t, dsn, 30*time.Second)
	e := engine.New(s, engine.Options{Workspace: engine.WorkspacePolicy{Default: t.TempDir()}})
	defer e.Close()
	type child struct {
		cmd *exec.Cmd
		in  io.WriteCloser
		out *bufio.Scanner
	}
	var children []child
	for range procs {
		cmd := childCmd(t, "contend", "-", dsn)
		in, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		c := child{cmd: cmd, in: in, out: bufio.NewScanner(out)}
		if !c.out.Scan() || c.out.Text() != "ready" {
			t.Fatalf("a child did not start: %q", c.out.Text())
		}
		children = append(children, c)
	}
	defer func() {
		for _, c := range children {
			c.in.Close()
			c.cmd.Wait()
		}
	}()
	for round := range rounds {
		r, err := e.Plan(ctx, engine.PlanRequest{Spec: []byte(linearSpec)})
		if err != nil {
			t.Fatal(err)
		}
		var tok string
		for _, en := range r.Ready {
			if en.ID == "s1" {
				tok = en.DispatchToken
			}
		}
		line := []byte(r.RunID + " " + tok + "\n")
		for _, c := range children {
			go c.in.Write(line) // all at once
		}
		outcomes := map[string]int{}
		for _, c := range children {
			if !c.out.Scan() {
				t.Fatalf("round %d: a child stopped", round)
			}
			outcomes[c.out.Text()]++
		}
		if outcomes["accepted"] != 1 || outcomes[engine.CodeStaleToken] != procs-1 {
			t.Fatalf("round %d: outcomes %v, want 1 accepted and %d %s", round, outcomes, procs-1, engine.CodeStaleToken)
		}
		a, err := e.Audit(ctx, r.RunID)
		if err != nil {
			t.Fatal(err)
		}
		if s1 := a.Steps["s1"]; s1 == nil || s1.Status != engine.StepSucceeded || len(s1.Attempts) != 1 {
			t.Fatalf("round %d: s1 is %+v", round, s1)
		}
		results := 0
		for _, ev := range a.Events {
			if ev.Type == "result" && ev.StepID == "s1" {
				results++
			}
		}
		if results != 1 {
			t.Fatalf("round %d: %d results of s1 recorded", round, results)
		}
		if _, err := s.Verify(ctx, r.RunID, store.VerifyOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// crashChild drives runs forever: it continues every running run of the
// database, then plans a new one. After each acknowledged step_done it
// appends "RUN STEP" to the ack file (the page cache keeps what a killed
// process wrote).
func crashChild(dsn, ackPath string) error {
	ctx := context.Background()
	e, _, err := childEngine(dsn)
	if err != nil {
		return err
	}
	ack, err := os.OpenFile(ackPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	n := 0
	for {
		runs, err := e.ListRuns(ctx)
		if err != nil {
			return fmt.Errorf("list: %w", err)
		}
		for _, rs := range runs {
			if rs.Status != engine.StatusRunning {
				continue
			}
			r, err := e.Resume(ctx, rs.RunID)
			if err != nil {
				return fmt.Errorf("resume: %w", err)
			}
			for r.Status == engine.StatusReady {
				en := r.Ready[0]
				out := `{"v":"ok"}`
				n++
				if en.ID == "s3" && n%3 == 0 {
					out = `{"v":"retry"}` // a failed attempt now and then
				}
				r, err = e.StepDone(ctx, engine.StepDoneRequest{RunID: r.RunID, StepID: en.ID, DispatchToken: en.DispatchToken,
					Result: engine.StepResult{Output: json.RawMessage(out)}})
				if err != nil {
					return fmt.Errorf("step done: %w", err)
				}
				if out != `{"v":"retry"}` {
					if _, err := ack.WriteString(rs.RunID + " " + en.ID + "\n"); err != nil {
						return err
					}
				}
			}
		}
		if _, err := e.Plan(ctx, engine.PlanRequest{Spec: []byte(linearSpec)}); err != nil {
			return fmt.Errorf("plan: %w", err)
		}
	}
}

// TestCrashAcrossProcesses kills a child that drives runs on the database
// with SIGKILL at random moments, 25 times. Afterwards every run loads and
// verifies, every step the child saw acknowledged is present, and every
// unfinished run can be continued to its end by another process. The
// database's own durability does the work: an acknowledged Update is a
// committed transaction.
func TestCrashAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("crash loop: runs child processes for a few seconds")
	}
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	ackPath := filepath.Join(t.TempDir(), "acks")
	rng := rand.New(rand.NewPCG(1, uint64(time.Now().UnixNano())))
	const kills = 25
	for i := range kills {
		cmd := childCmd(t, "crash", dsn, ackPath)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(80+rng.IntN(200)) * time.Millisecond)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		err := cmd.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("kill %d: the child ended by itself (%v): %s", i, err, stderr.String())
		}
	}
	s := open(t, dsn, 30*time.Second)
	e := engine.New(s, engine.Options{Workspace: engine.WorkspacePolicy{Default: t.TempDir()}})
	defer e.Close()
	acked := map[string][]string{}
	data, err := os.ReadFile(ackPath)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if run, step, ok := strings.Cut(l, " "); ok {
			acked[run] = append(acked[run], step)
			total++
		}
	}
	runs, err := e.ListRuns(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if total < kills || len(runs) < 2 {
		t.Fatalf("the child made too little progress to test anything: %d acks, %d runs", total, len(runs))
	}
	for _, rs := range runs {
		if rs.Error != "" {
			t.Fatalf("run %s does not load: %s", rs.RunID, rs.Error)
		}
		if _, err := s.Verify(ctx, rs.RunID, store.VerifyOptions{}); err != nil {
			t.Fatalf("run %s does not verify: %v", rs.RunID, err)
		}
		a, err := e.Audit(ctx, rs.RunID)
		if err != nil {
			t.Fatal(err)
		}
		for _, step := range acked[rs.RunID] {
			if st := a.Steps[step]; st == nil || st.Status != engine.StepSucceeded {
				t.Fatalf("run %s: step %s was acknowledged but is %+v", rs.RunID, step, st)
			}
		}
		delete(acked, rs.RunID)
		if rs.Status != engine.StatusRunning {
			continue
		}
		r, err := e.Resume(ctx, rs.RunID)
		if err != nil {
			t.Fatal(err)
		}
		for r.Status == engine.StatusReady {
			en := r.Ready[0]
			if r, err = e.StepDone(ctx, engine.StepDoneRequest{RunID: r.RunID, StepID: en.ID, DispatchToken: en.DispatchToken,
				Result: engine.StepResult{Output: json.RawMessage(`{"v":"ok"}`)}}); err != nil {
				t.Fatal(err)
			}
		}
		if r.Status != engine.StatusCompleted {
			t.Fatalf("run %s ends %s", rs.RunID, r.Status)
		}
	}
	if len(acked) > 0 {
		t.Fatalf("acknowledged steps of runs that do not exist: %v", acked)
	}
	t.Logf("%d kills, %d runs, %d acknowledged steps verified", kills, len(runs), total)
}
