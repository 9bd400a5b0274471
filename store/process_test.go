//go:build unix

package store

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The tests in this file re-execute the test binary as a child process
// (TestMain dispatches on STORE_TEST_CHILD), so that locks, crashes and
// races are between real, separate processes.

func TestMain(m *testing.M) {
	if mode := os.Getenv("STORE_TEST_CHILD"); mode != "" {
		if err := runChild(mode); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(3)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func runChild(mode string) error {
	root := os.Getenv("STORE_ROOT")
	switch mode {
	case "crash":
		seed, _ := strconv.ParseUint(os.Getenv("STORE_SEED"), 10, 64)
		return crashChild(root, seed, envInt("STORE_WORKERS", 1))
	case "cas":
		return casChild(root, os.Getenv("STORE_RUN"), os.Getenv("STORE_EXPECT"), os.Getenv("STORE_NEW"))
	case "hold":
		return holdChild(root, os.Getenv("STORE_RUN"))
	case "lease":
		return leaseChild(root, os.Getenv("STORE_RUN"), os.Getenv("STORE_OWNER"))
	}
	return fmt.Errorf("unknown child mode %q", mode)
}

// crashChild creates and updates runs forever on workers goroutines, each
// with runs of its own (so several Updates of different runs are in flight
// at once, their fsyncs overlapping), printing "begin RUN" before each
// Create or Update and "ack RUN SEQ" after it returns. The parent kills it
// with SIGKILL.
// Every event's data names its run and seq, and every state names the seq
// it is consistent with, so the parent can check both.
func crashChild(root string, seed uint64, workers int) error {
	s, err := NewFileStore(root, &Options{OnRepair: func(id string, r Tail) {
		fmt.Printf("repair %s %d %d %v\n", id, r.Bytes, r.Events, r.Chained)
	}})
	if err != nil {
		return err
	}
	infos, err := s.List(context.Background())
	if err != nil {
		return err
	}
	runs := make([][]string, workers)
	for i, r := range infos {
		runs[i%workers] = append(runs[i%workers], r.ID)
	}
	errs := make(chan error, workers)
	for w := range workers {
		go func() { errs <- crashWorker(s, seed, w, runs[w]) }()
	}
	return <-errs
}

func crashWorker(s *FileStore, seed uint64, worker int, runs []string) error {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 42+uint64(worker)))
	pad := func() string {
		switch rng.IntN(6) {
		case 0:
			return strings.Repeat("x", rng.IntN(20000)) // beyond one read window
		default:
			return strings.Repeat("y", rng.IntN(200))
		}
	}
	events := func(run string, from int64, n int) []NewEvent {
		var evs []NewEvent
		for i := range n {
			seq := from + int64(i) + 1
			data, _ := json.Marshal(map[string]any{"run": run, "seq": seq, "pad": pad()})
			evs = append(evs, NewEvent{Type: "step", At: time.Now(), Data: data})
		}
		return evs
	}
	state := func(seq int64) []byte {
		b, _ := json.Marshal(map[string]any{"seq": seq, "pad": pad()})
		return b
	}
	for n := 0; ; n++ {
		if len(runs) < 3 || rng.IntN(8) == 0 {
			id := fmt.Sprintf("r%d-%d", seed, n)
			if worker > 0 {
				id = fmt.Sprintf("r%d-w%d-%d", seed, worker, n)
			}
			fmt.Printf("begin %s\n", id)
			k := rng.IntN(3)
			h, err := s.Create(ctx, id, Change{State: state(int64(k)), Events: events(id, 0, k)})
			if err != nil {
				return err
			}
			runs = append(runs, id)
			fmt.Printf("ack %s %d\n", id, h.Seq)
			continue
		}
		id := runs[rng.IntN(len(runs))]
		fmt.Printf("begin %s\n", id)
		h, err := s.Update(ctx, id, func(cur *Snapshot) (*Change, error) {
			k := rng.IntN(4)
			return &Change{State: state(cur.Head.Seq + int64(k)), Events: events(id, cur.Head.Seq, k)}, nil
		})
		if err != nil {
			return err
		}
		fmt.Printf("ack %s %d\n", id, h.Seq)
	}
}

var errStaleToken = errors.New("stale token")

// casChild waits for "go" on stdin, then reports a step with a token: it
// wins only if the run still holds the token it expects.
func casChild(root, run, expect, next string) error {
	s, err := NewFileStore(root, &Options{LockTimeout: 10 * time.Second})
	if err != nil {
		return err
	}
	fmt.Println("ready")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		return err
	}
	_, err = s.Update(context.Background(), run, func(cur *Snapshot) (*Change, error) {
		var st struct{ Token string }
		if err := json.Unmarshal(cur.State, &st); err != nil {
			return nil, err
		}
		if st.Token != expect {
			return nil, errStaleToken
		}
		data, _ := json.Marshal(map[string]string{"by": next})
		return &Change{
			State:  fmt.Appendf(nil, `{"token":%q}`, next),
			Events: []NewEvent{{Type: "step_done", At: time.Now(), Data: data}},
		}, nil
	})
	switch {
	case err == nil:
		fmt.Println("accepted")
	case errors.Is(err, errStaleToken):
		fmt.Println("stale")
	default:
		fmt.Println("error:", err)
	}
	return nil
}

// holdChild holds a run's lock (inside an Update) until stdin closes.
func holdChild(root, run string) error {
	s, err := NewFileStore(root, nil)
	if err != nil {
		return err
	}
	_, err = s.Update(context.Background(), run, func(*Snapshot) (*Change, error) {
		fmt.Println("locked")
		io.Copy(io.Discard, os.Stdin)
		return nil, nil
	})
	return err
}

type child struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string
	stderr *bytes.Buffer
}

func startChild(t *testing.T, mode string, env ...string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{"STORE_TEST_CHILD=" + mode}, env...)...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, stdin: stdin, lines: make(chan string, 1<<16), stderr: &bytes.Buffer{}}
	cmd.Stderr = c.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
	}()
	return c
}

// next returns the child's next output line, failing after a timeout.
func (c *child) next(t *testing.T) string {
	t.Helper()
	select {
	case l, ok := <-c.lines:
		if !ok {
			c.cmd.Wait()
			t.Fatalf("child exited early; stderr: %s", c.stderr)
		}
		return l
	case <-time.After(20 * time.Second):
		t.Fatalf("child said nothing for 20 s; stderr: %s", c.stderr)
	}
	return ""
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// TestCrashSafety kills a writer process with SIGKILL at random moments,
// many times over the same runs. After every kill each run must load and
// verify, its state must match its head, and every step the child saw
// acknowledged must be present. STORE_CRASH_ITERATIONS raises the count.
func TestCrashSafety(t *testing.T) {
	crashLoop(t, 1)
}

// TestCrashSafetyConcurrentRuns is TestCrashSafety with a child that
// updates many runs at once (8 goroutines, each on runs of its own), as a
// server does with concurrent runs or fanout items (docs/storage.md,
// "Concurrent writes"): killed with several writes in flight, at their
// different steps, no acknowledged update may be lost, and every run must
// load and verify.
func TestCrashSafetyConcurrentRuns(t *testing.T) {
	crashLoop(t, 8)
}

// crashLoop runs the crash test with a child of workers goroutines.
func crashLoop(t *testing.T, workers int) {
	iterations := envInt("STORE_CRASH_ITERATIONS", 60)
	if testing.Short() {
		iterations = 5
	}
	root := filepath.Join(t.TempDir(), "flows")
	s, err := NewFileStore(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	acked := map[string]int64{}
	repairs, acks, tails := 0, 0, 0
	for it := range iterations {
		c := startChild(t, "crash", "STORE_ROOT="+root, fmt.Sprintf("STORE_SEED=%d", it), fmt.Sprintf("STORE_WORKERS=%d", workers))
		touched := map[string]bool{}
		record := func(line string) {
			f := strings.Fields(line)
			switch {
			case len(f) == 2 && f[0] == "begin":
				touched[f[1]] = true
			case len(f) == 3 && f[0] == "ack":
				seq, _ := strconv.ParseInt(f[2], 10, 64)
				acked[f[1]] = max(acked[f[1]], seq)
				acks++
			case len(f) == 5 && f[0] == "repair":
				repairs++
			default:
				t.Fatalf("child printed %q", line)
			}
		}
		record(c.next(t)) // the child is working
		// A child with more writers gets a little longer to make progress.
		time.Sleep(time.Duration(rng.IntN(40_000*min(workers, 2))) * time.Microsecond)
		if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		c.cmd.Wait()
		for line := range c.lines {
			record(line)
		}
		if c.stderr.Len() > 0 {
			t.Fatalf("iteration %d: child stderr: %s", it, c.stderr)
		}
		// Checking only the runs this child touched keeps the test linear;
		// the run it was writing when killed is among them.
		tails += checkRuns(t, s, acked, touched)
	}
	checkRuns(t, s, acked, nil)
	t.Logf("%d kills, %d acknowledged writes over %d runs; %d run checks found an interrupted write (a tail, or a state left in the temp file), %d tails repaired by a later child",
		iterations, acks, len(acked), tails, repairs)
	if iterations >= 20 && tails == 0 {
		t.Error("no kill ever interrupted a write: the test is not reaching the window it exists for")
	}
	// A final write to every run removes any tail a kill left.
	ctx := context.Background()
	for id := range acked {
		if _, err := s.Update(ctx, id, func(cur *Snapshot) (*Change, error) {
			return &Change{State: fmt.Appendf(nil, `{"seq":%d}`, cur.Head.Seq)}, nil
		}); err != nil {
			t.Fatal(err)
		}
		if rep, err := s.Verify(ctx, id, VerifyOptions{}); err != nil || rep.Tail.Bytes != 0 {
			t.Fatalf("run %s after a final update: %+v, %v", id, rep, err)
		}
	}
}

// checkRuns checks the runs in only (every run when only is nil) and
// returns how many have a tail.
func checkRuns(t *testing.T, s *FileStore, acked map[string]int64, only map[string]bool) (tails int) {
	t.Helper()
	ctx := context.Background()
	infos, err := s.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, r := range infos {
		listed[r.ID] = true
	}
	for id := range acked {
		if !listed[id] {
			t.Fatalf("acknowledged run %s is not listed", id)
		}
	}
	for _, r := range infos { // runs created but never acknowledged must be whole too
		id := r.ID
		if only != nil && !only[id] {
			continue
		}
		// Verify first: it reads without writing, so it still sees a state
		// a killed write left in the temp file, which Load then puts in
		// place.
		rep, err := s.Verify(ctx, id, VerifyOptions{})
		if err != nil || !rep.Tail.Chained {
			t.Fatalf("run %s: Verify %+v, %v", id, rep, err)
		}
		if rep.Tail.Bytes > 0 || rep.StateFromTemp {
			tails++
		}
		snap, err := s.Load(ctx, id)
		if err != nil || rep.Head != snap.Head {
			t.Fatalf("run %s: Load %v, head %v, Verify's %v", id, err, snap.Head, rep.Head)
		}
		if snap.Head.Seq < acked[id] {
			t.Fatalf("run %s: head %d, but seq %d was acknowledged", id, snap.Head.Seq, acked[id])
		}
		var st struct{ Seq int64 }
		if err := json.Unmarshal(snap.State, &st); err != nil || st.Seq != snap.Head.Seq {
			t.Fatalf("run %s: state %s is not consistent with head %d (%v)", id, snap.State, snap.Head.Seq, err)
		}
		evs, err := s.Events(ctx, id, 0, 0)
		if err != nil || int64(len(evs)) != snap.Head.Seq {
			t.Fatalf("run %s: %d events, %v", id, len(evs), err)
		}
		for _, e := range evs {
			var d struct {
				Run string
				Seq int64
			}
			if err := json.Unmarshal(e.Data, &d); err != nil || d.Run != id || d.Seq != e.Seq {
				t.Fatalf("run %s: event %d carries %s", id, e.Seq, e.Data)
			}
		}
	}
	return tails
}

// TestContentionTwoProcesses: two processes report the same step with the
// same token at the same moment. Exactly one is accepted; the other sees
// the token already changed.
func TestContentionTwoProcesses(t *testing.T) {
	rounds := envInt("STORE_CONTENTION_ROUNDS", 20)
	root := filepath.Join(t.TempDir(), "flows")
	s, _ := NewFileStore(root, nil)
	ctx := context.Background()
	for round := range rounds {
		run := fmt.Sprintf("cas-%d", round)
		h0, err := s.Create(ctx, run, Change{State: []byte(`{"token":"t0"}`), Events: []NewEvent{{Type: "ready", At: t0}}})
		if err != nil {
			t.Fatal(err)
		}
		a := startChild(t, "cas", "STORE_ROOT="+root, "STORE_RUN="+run, "STORE_EXPECT=t0", "STORE_NEW=A")
		b := startChild(t, "cas", "STORE_ROOT="+root, "STORE_RUN="+run, "STORE_EXPECT=t0", "STORE_NEW=B")
		for _, c := range []*child{a, b} {
			if l := c.next(t); l != "ready" {
				t.Fatalf("child said %q", l)
			}
		}
		a.stdin.Write([]byte("go\n"))
		b.stdin.Write([]byte("go\n"))
		ra, rb := a.next(t), b.next(t)
		winner := ""
		switch {
		case ra == "accepted" && rb == "stale":
			winner = "A"
		case ra == "stale" && rb == "accepted":
			winner = "B"
		default:
			t.Fatalf("round %d: A said %q, B said %q", round, ra, rb)
		}
		snap, err := s.Load(ctx, run)
		if err != nil {
			t.Fatal(err)
		}
		if string(snap.State) != `{"token":"`+winner+`"}` || snap.Head.Seq != h0.Seq+1 {
			t.Fatalf("round %d: winner %s but state %s, head %d", round, winner, snap.State, snap.Head.Seq)
		}
		evs, err := s.Events(ctx, run, h0.Seq, 0)
		if err != nil || len(evs) != 1 || string(evs[0].Data) != `{"by":"`+winner+`"}` {
			t.Fatalf("round %d: new events %v, %v", round, evs, err)
		}
		if _, err := s.Verify(ctx, run, VerifyOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLockHeldByAnotherProcess: a refused writer names the holder's pid,
// readers are not blocked, and the kernel releases the lock of a holder
// killed with SIGKILL.
func TestLockHeldByAnotherProcess(t *testing.T) {
	root := filepath.Join(t.TempDir(), "flows")
	s, _ := NewFileStore(root, &Options{LockTimeout: 200 * time.Millisecond})
	ctx := context.Background()
	mustCreate(t, s, "held", `{}`, 1)
	c := startChild(t, "hold", "STORE_ROOT="+root, "STORE_RUN=held")
	if l := c.next(t); l != "locked" {
		t.Fatalf("child said %q", l)
	}
	pid := c.cmd.Process.Pid
	_, err := s.Update(ctx, "held", appendEvents(`{}`, 1))
	var le *LockedError
	if !errors.As(err, &le) || le.PID != pid || !strings.Contains(err.Error(), fmt.Sprintf("run held is locked by pid %d", pid)) {
		t.Fatalf("Update: %v, want locked by pid %d", err, pid)
	}
	if _, err := s.Verify(ctx, "held", VerifyOptions{}); !errors.As(err, &le) || le.PID != pid {
		t.Errorf("Verify: %v, want locked by pid %d", err, pid)
	}
	if _, err := s.Load(ctx, "held"); err != nil {
		t.Errorf("Load while another process writes: %v", err)
	}
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	c.cmd.Wait()
	if h, err := s.Update(ctx, "held", appendEvents(`{}`, 1)); err != nil || h.Seq != 2 {
		t.Fatalf("Update after the holder died: %+v, %v", h, err)
	}

	// A holder that finishes normally releases too.
	c = startChild(t, "hold", "STORE_ROOT="+root, "STORE_RUN=held")
	if l := c.next(t); l != "locked" {
		t.Fatalf("child said %q", l)
	}
	c.stdin.Close()
	if err := c.cmd.Wait(); err != nil {
		t.Fatalf("holder: %v %s", err, c.stderr)
	}
	if _, err := s.Update(ctx, "held", appendEvents(`{}`, 1)); err != nil {
		t.Fatal(err)
	}
}

// leaseChild waits for "go", asks for the run's lease as owner (ttl 1 h),
// prints "granted EPOCH" or "held HOLDER", then waits for stdin to close.
func leaseChild(root, run, owner string) error {
	s, err := NewFileStore(root, &Options{LockTimeout: 10 * time.Second})
	if err != nil {
		return err
	}
	fmt.Println("ready")
	in := bufio.NewReader(os.Stdin)
	if _, err := in.ReadString('\n'); err != nil {
		return err
	}
	l, err := s.AcquireLease(context.Background(), run, owner, time.Hour)
	var held *LeaseHeldError
	switch {
	case err == nil:
		fmt.Println("granted", l.Epoch)
	case errors.As(err, &held):
		fmt.Println("held", held.Holder)
	default:
		fmt.Println("error:", err)
	}
	io.Copy(io.Discard, in)
	return nil
}

// TestLeaseProcesses: processes racing for one run's lease get exactly one
// grant, and the others are told who holds it; a holder that dies
// without releasing keeps the lease until it expires on the store's clock
// (no pid is consulted: the holder could be on another machine of a
// shared store). Expiry and take-over are in the contract suite.
func TestLeaseProcesses(t *testing.T) {
	rounds := envInt("STORE_LEASE_ROUNDS", 5)
	root := filepath.Join(t.TempDir(), "flows")
	s, _ := NewFileStore(root, nil)
	ctx := context.Background()
	for round := range rounds {
		run := fmt.Sprintf("lease-%d", round)
		mustCreate(t, s, run, `{}`, 1)
		var kids []*child
		for i := range 6 {
			kids = append(kids, startChild(t, "lease", "STORE_ROOT="+root, "STORE_RUN="+run, fmt.Sprintf("STORE_OWNER=p%d", i)))
		}
		for _, c := range kids {
			if l := c.next(t); l != "ready" {
				t.Fatalf("child said %q", l)
			}
		}
		for _, c := range kids {
			c.stdin.Write([]byte("go\n"))
		}
		winner, holders := -1, map[string]int{}
		for i, c := range kids {
			f := strings.Fields(c.next(t))
			switch {
			case len(f) == 2 && f[0] == "granted":
				if winner >= 0 {
					t.Fatalf("round %d: p%d and p%d were both granted the lease", round, winner, i)
				}
				winner = i
			case len(f) == 2 && f[0] == "held":
				holders[f[1]]++
			default:
				t.Fatalf("child said %q", f)
			}
		}
		want := fmt.Sprintf("p%d", winner)
		if winner < 0 || len(holders) != 1 || holders[want] != 5 {
			t.Fatalf("round %d: winner p%d, the others were told %v", round, winner, holders)
		}
		snap, err := s.Load(ctx, run)
		if err != nil || snap.Lease == nil || snap.Lease.Owner != want {
			t.Fatalf("round %d: Load shows %+v, %v", round, snap, err)
		}
		kids[winner].cmd.Process.Signal(syscall.SIGKILL)
		kids[winner].cmd.Wait()
		if _, err := s.AcquireLease(ctx, run, "next", time.Hour); !errors.Is(err, ErrLeaseHeld) {
			t.Fatalf("a dead holder's unexpired lease was granted again: %v", err)
		}
		for _, c := range kids {
			c.stdin.Close()
		}
	}
}
