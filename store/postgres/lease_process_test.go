package postgres_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/internal/pgtest"
	"github.com/stratum-go/stratum/store"
)

// driveTTL is the lease a driving child takes and renews before each step.
const driveTTL = 2 * time.Second

// driveChild stands in for a server that drives runs in the background:
// for each "RUN MODE" line read from stdin it races for the run's lease
// and, when granted, drives the run to its end holding it, renewing it
// before each step and releasing it after the last. It prints "lease
// EPOCH" when granted, "step ID" after each accepted step_done, and
// "done" when the run has ended. In MODE stepwise it reads one line from
// stdin before each step, so a test can kill it between two steps. The
// owner is the child engine's, one per process, as two machines' servers
// would have.
func driveChild(dsn string) error {
	ctx := context.Background()
	e, s, err := childEngine(dsn)
	if err != nil {
		return err
	}
	defer s.Close()
	defer e.Close()
	// The engine's own owner, and its driver's context: the engine lets
	// only the holder's driver report a leased run's steps.
	owner := e.Owner()
	ctx = engine.AsDriver(ctx)
	in := bufio.NewScanner(os.Stdin)
	fmt.Println("ready")
	for in.Scan() {
		run, mode, _ := strings.Cut(in.Text(), " ")
		l, err := awaitLease(ctx, e, s, run, owner)
		if err != nil {
			return err
		}
		if l == nil { // another server drove the run to its end
			fmt.Println("done")
			continue
		}
		fmt.Println("lease", l.Epoch)
		for {
			r, err := e.Status(ctx, run)
			if err != nil {
				return fmt.Errorf("status: %w", err)
			}
			if r.Status != engine.StatusReady {
				break
			}
			if mode == "stepwise" && !in.Scan() {
				return in.Err()
			}
			if *l, err = s.RenewLease(ctx, run, *l, driveTTL); err != nil {
				return fmt.Errorf("renew: %w", err)
			}
			en := r.Ready[0]
			if _, err := e.StepDone(ctx, engine.StepDoneRequest{RunID: run, StepID: en.ID, DispatchToken: en.DispatchToken,
				Result: engine.StepResult{Output: json.RawMessage(`{"v":"ok"}`)}}); err != nil {
				return fmt.Errorf("step done: %w", err)
			}
			fmt.Println("step", en.ID)
		}
		if err := s.ReleaseLease(ctx, run, *l); err != nil {
			return fmt.Errorf("release: %w", err)
		}
		fmt.Println("done")
	}
	return in.Err()
}

// awaitLease returns the run's lease once granted to owner, or nil when
// the run ended while another owner held it.
func awaitLease(ctx context.Context, e *engine.Engine, s store.Store, run, owner string) (*store.Lease, error) {
	for {
		l, err := s.AcquireLease(ctx, run, owner, driveTTL)
		if err == nil {
			return &l, nil
		}
		if !errors.Is(err, store.ErrLeaseHeld) {
			return nil, fmt.Errorf("acquire: %w", err)
		}
		r, err := e.Status(ctx, run)
		if err != nil {
			return nil, fmt.Errorf("status: %w", err)
		}
		if r.Status != engine.StatusReady {
			return nil, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// driver is a driveChild process.
type driver struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
}

func startDriver(t *testing.T, dsn string) *driver {
	t.Helper()
	cmd := childCmd(t, "drive", "-", dsn)
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
	d := &driver{cmd: cmd, in: in, out: bufio.NewScanner(out)}
	t.Cleanup(func() {
		d.in.Close()
		_ = d.cmd.Process.Kill()
		_ = d.cmd.Wait()
	})
	if d.line(t) != "ready" {
		t.Fatal("a driver did not start")
	}
	return d
}

func (d *driver) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(d.in, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

func (d *driver) line(t *testing.T) string {
	t.Helper()
	if !d.out.Scan() {
		t.Fatalf("a driver stopped: %v", d.out.Err())
	}
	return d.out.Text()
}

// untilDone reads a driver's lines for one run: the epoch of its lease (0
// when it had none) and the steps it drove.
func (d *driver) untilDone(t *testing.T) (epoch int64, steps []string) {
	t.Helper()
	for {
		l := d.line(t)
		switch {
		case l == "done":
			return epoch, steps
		case strings.HasPrefix(l, "lease "):
			n, err := strconv.ParseInt(strings.TrimPrefix(l, "lease "), 10, 64)
			if err != nil {
				t.Fatalf("driver said %q", l)
			}
			epoch = n
		case strings.HasPrefix(l, "step "):
			steps = append(steps, strings.TrimPrefix(l, "step "))
		default:
			t.Fatalf("driver said %q", l)
		}
	}
}

// checkDrivenOnce checks that the run completed with each step succeeded
// in one attempt, recorded once, and that it verifies.
func checkDrivenOnce(t *testing.T, e *engine.Engine, s store.Store, run string) {
	t.Helper()
	ctx := context.Background()
	a, err := e.Audit(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	if a.Status != engine.StatusCompleted {
		t.Fatalf("run %s is %s, want completed", run, a.Status)
	}
	results := map[string]int{}
	for _, ev := range a.Events {
		if ev.Type == "result" {
			results[ev.StepID]++
		}
	}
	for _, id := range []string{"s1", "s2", "s3", "s4", "s5"} {
		if st := a.Steps[id]; st == nil || st.Status != engine.StepSucceeded || len(st.Attempts) != 1 || results[id] != 1 {
			t.Fatalf("run %s: step %s is %+v with %d results, want one attempt succeeded", run, id, st, results[id])
		}
	}
	if _, err := s.Verify(ctx, run, store.VerifyOptions{}); err != nil {
		t.Fatal(err)
	}
}

var allSteps = []string{"s1", "s2", "s3", "s4", "s5"}

// TestTwoServersOneRun: two processes, each with its own STRATUM_HOME
// (two machines' servers), are told at once to drive the same run in the
// background, for 12 runs: each time exactly one holds the lease and
// drives every step, and the other drives none. Then the holder is killed
// with SIGKILL between two steps: it cannot release, the other server gets
// the lease only once it has expired on the database's clock, with a
// higher epoch, and finishes the run from where it stood.
func TestTwoServersOneRun(t *testing.T) {
	const runs = 12
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	s := open(t, dsn, 30*time.Second)
	e := engine.New(s, engine.Options{Workspace: engine.WorkspacePolicy{Default: t.TempDir()}})
	defer e.Close()
	plan := func() string {
		r, err := e.Plan(ctx, engine.PlanRequest{Spec: []byte(linearSpec)})
		if err != nil {
			t.Fatal(err)
		}
		return r.RunID
	}

	servers := []*driver{startDriver(t, dsn), startDriver(t, dsn)}
	for round := range runs {
		run := plan()
		for _, d := range servers {
			go io.WriteString(d.in, run+" free\n") // both at once; a failed write shows as a stopped driver
		}
		var drove [][]string
		for _, d := range servers {
			if _, steps := d.untilDone(t); len(steps) > 0 {
				drove = append(drove, steps)
			}
		}
		if len(drove) != 1 || !slices.Equal(drove[0], allSteps) {
			t.Fatalf("round %d: the servers drove %v, want one of them to drive %v", round, drove, allSteps)
		}
		checkDrivenOnce(t, e, s, run)
	}

	// Take-over after a crash.
	run := plan()
	a := startDriver(t, dsn)
	a.send(t, run+" stepwise")
	l := a.line(t)
	epochA, err := strconv.ParseInt(strings.TrimPrefix(l, "lease "), 10, 64)
	if err != nil {
		t.Fatalf("driver said %q", l)
	}
	a.send(t, "next")
	if l := a.line(t); l != "step s1" {
		t.Fatalf("driver said %q, want step s1", l)
	}
	_ = a.cmd.Process.Kill()
	_ = a.cmd.Wait()
	b := servers[0]
	b.send(t, run+" free")
	epochB, steps := b.untilDone(t)
	if epochB <= epochA || !slices.Equal(steps, allSteps[1:]) {
		t.Fatalf("after the holder was killed: lease epoch %d (the dead holder's %d), steps %v; want a higher epoch and %v", epochB, epochA, steps, allSteps[1:])
	}
	checkDrivenOnce(t, e, s, run)
}
