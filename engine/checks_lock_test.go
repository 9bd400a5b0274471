package engine

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stratum-go/stratum/store"
)

// checksSpec has two parallel do steps, a with regex ensures and b
// without: while a's checks evaluate, b can be reported. Over a long
// output (longOutput), a's ensures cost more than the work allowed
// under the lock (inlineUnits): they are evaluated outside it.
const checksSpec = `
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
          - expr: "!matches(result.s, '.{300}x1')"
          - expr: "!matches(result.s, '.{300}x2')"
          - expr: "len(result.s) > 0"
      - id: b
        do: "b"
        out: R
`

// longOutput is an output of a's over which each of its regex ensures
// costs more than inlineUnits (300 pattern states over 2,000 characters);
// with fail, it fails the first one.
func longOutput(fail bool) string {
	s := strings.Repeat("a", 2000)
	if fail {
		s += "x1"
	}
	return `{"s":"` + s + `"}`
}

// checkGate blocks the first evaluation of a report's checks outside the
// lock until released, and counts the evaluations by where they ran.
type checkGate struct {
	mu      sync.Mutex
	calls   map[string]int
	started chan context.Context
	release chan struct{}
	once    sync.Once
}

func newCheckGate(e *Engine) *checkGate {
	g := &checkGate{calls: map[string]int{}, started: make(chan context.Context, 1), release: make(chan struct{})}
	e.checkHook = func(ctx context.Context, mode string) {
		g.mu.Lock()
		g.calls[mode]++
		first := mode == checksOutside && g.calls[mode] == 1
		g.mu.Unlock()
		if first {
			g.started <- ctx
			<-g.release
		}
	}
	return g
}

// count is how many evaluations ran in mode.
func (g *checkGate) count(mode string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.calls[mode]
}

func (g *checkGate) open() { g.once.Do(func() { close(g.release) }) }

// lockHarness is an engine over a file store whose run lock is given up
// after 200 ms: a caller that waited for a lock held by a blocked check
// would fail with ErrRunLocked instead of hanging the test.
func lockHarness(t *testing.T) *harness {
	t.Helper()
	st, err := store.NewFileStore(filepath.Join(t.TempDir(), "flows"), &store.Options{LockTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return newHarnessOn(t, Options{}, st, st)
}

// reportInBackground sends a's report and returns the channel of its
// outcome.
func reportInBackground(h *harness, runID, token, output string) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := h.e.StepDone(h.ctx, StepDoneRequest{RunID: runID, StepID: "a", DispatchToken: token,
			Result: StepResult{Output: json.RawMessage(output)}})
		done <- err
	}()
	return done
}

// A cancel sent while a report's ensures evaluate takes the run's lock at
// once (the evaluation holds none), stops the evaluation (at once from
// this process, at the next poll of the run from another one), and the
// report then answers as any report on a cancelled run does.
func TestCancelWhileReportChecksEvaluate(t *testing.T) {
	for _, tc := range []struct {
		name        string
		otherEngine bool
	}{{"this process", false}, {"another process", true}} {
		t.Run(tc.name, func(t *testing.T) {
			h := lockHarness(t)
			g := newCheckGate(h.e)
			defer g.open()
			r := h.plan(checksSpec, map[string]any{})
			done := reportInBackground(h, r.RunID, entry(t, r, "a").DispatchToken, longOutput(false))
			checkCtx := <-g.started

			// The evaluation is blocked: the cancel is served while it runs.
			canceller := h.e
			if tc.otherEngine {
				canceller = h.reopen(Options{})
			}
			res, err := canceller.Cancel(h.ctx, r.RunID, "stop")
			if err != nil {
				t.Fatalf("cancel while the ensures evaluate: %v", err)
			}
			if res.Status != StatusCancelled {
				t.Fatalf("cancel answered %+v", res)
			}
			if tc.otherEngine {
				select {
				case <-checkCtx.Done():
				case <-time.After(30 * time.Second):
					t.Fatal("the cancel never stopped the evaluation of the checks")
				}
			}
			if !errors.Is(context.Cause(checkCtx), errRunStopped) {
				t.Fatalf("the evaluation's context after the cancel: %v", context.Cause(checkCtx))
			}
			g.open()
			err = <-done
			var ee *Error
			if !errors.As(err, &ee) || !errors.Is(ee.Kind, ErrRunCancelled) {
				t.Fatalf("report after the cancel: %v", err)
			}
			if got := h.eventTypes(r.RunID); countPrefix(got, "result(") != 0 || countPrefix(got, "flow_cancelled") != 1 {
				t.Fatalf("events %v", got)
			}
			if n, m := g.count(checksOutside), g.count(checksLocked); n != 1 || m != 0 {
				t.Fatalf("the checks were evaluated %d times outside the lock and %d under it, want 1 and 0", n, m)
			}
		})
	}
}

// A write that does not concern the report (another step's result) lands
// while its checks evaluate; the verdict is then reused, not evaluated
// again under the lock.
func TestReportChecksReusedAcrossOtherWrites(t *testing.T) {
	h := lockHarness(t)
	g := newCheckGate(h.e)
	defer g.open()
	r := h.plan(checksSpec, map[string]any{})
	done := reportInBackground(h, r.RunID, entry(t, r, "a").DispatchToken, longOutput(false))
	<-g.started
	if _, err := h.e.StepDone(h.ctx, StepDoneRequest{RunID: r.RunID, StepID: "b", DispatchToken: entry(t, r, "b").DispatchToken,
		Result: StepResult{Output: json.RawMessage(`{"s":"y"}`)}}); err != nil {
		t.Fatalf("step_done of b while a's checks evaluate: %v", err)
	}
	g.open()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	final, err := h.e.Status(h.ctx, r.RunID)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, final, StatusCompleted)
	// a's checks once outside the lock, reused under it; b's, and a's
	// first try, within the work allowed under the lock.
	if n, m, i := g.count(checksOutside), g.count(checksLocked), g.count(checksInline); n != 1 || m != 0 || i != 2 {
		t.Fatalf("the checks were evaluated %d times outside the lock, %d under it and %d within inlineUnits, want 1, 0 and 2", n, m, i)
	}
}

// A second report with the same token, accepted while the first one's
// checks evaluate, makes the first one stale: it is refused as a late
// duplicate is refused, and its verdict is never applied.
func TestReportChecksOfASupersededReport(t *testing.T) {
	h := lockHarness(t)
	g := newCheckGate(h.e)
	defer g.open()
	r := h.plan(checksSpec, map[string]any{})
	tok := entry(t, r, "a").DispatchToken
	// The first report fails its ensures.
	done := reportInBackground(h, r.RunID, tok, longOutput(true))
	<-g.started
	if _, err := h.e.StepDone(h.ctx, StepDoneRequest{RunID: r.RunID, StepID: "a", DispatchToken: tok,
		Result: StepResult{Output: json.RawMessage(`{"s":"fine"}`)}}); err != nil {
		t.Fatalf("the second report: %v", err)
	}
	g.open()
	err := <-done
	var ee *Error
	if !errors.As(err, &ee) || !errors.Is(ee.Kind, ErrStaleToken) || !strings.Contains(ee.Message, "already accepted") {
		t.Fatalf("the first report after the second was accepted: %v", err)
	}
	a, err := h.e.Audit(h.ctx, r.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if st := a.Steps["a"]; st.Status != StepSucceeded || len(st.Attempts) != 1 {
		t.Fatalf("a is %s with %d attempts", st.Status, len(st.Attempts))
	}
}

// Two reports of one dispatch whose checks evaluate at once are both
// stopped at once by a cancel in this process: the one that started
// first, and the one still running after the other has finished (each
// is its own effect under the one token).
func TestCancelStopsEveryCheckOfOneToken(t *testing.T) {
	for _, tc := range []struct {
		name        string
		finishFirst bool
	}{{"both running", false}, {"the first finished", true}} {
		t.Run(tc.name, func(t *testing.T) {
			h := lockHarness(t)
			started := make(chan context.Context, 2)
			release := []chan struct{}{make(chan struct{}), make(chan struct{})}
			var mu sync.Mutex
			calls := 0
			h.e.checkHook = func(ctx context.Context, mode string) {
				if mode != checksOutside {
					return
				}
				mu.Lock()
				n := calls
				calls++
				mu.Unlock()
				if n < 2 {
					started <- ctx
					<-release[n]
				}
			}
			defer func() {
				for _, r := range release {
					select {
					case <-r:
					default:
						close(r)
					}
				}
			}()
			r := h.plan(checksSpec, map[string]any{})
			tok := entry(t, r, "a").DispatchToken
			first := reportInBackground(h, r.RunID, tok, longOutput(false))
			ctx1 := <-started
			second := reportInBackground(h, r.RunID, tok, longOutput(false))
			ctx2 := <-started
			running := []context.Context{ctx1, ctx2}
			if tc.finishFirst {
				close(release[0])
				if err := <-first; err != nil {
					t.Fatalf("the first report: %v", err)
				}
				running = running[1:]
			}
			if _, err := h.e.Cancel(h.ctx, r.RunID, "stop"); err != nil {
				t.Fatal(err)
			}
			for i, ctx := range running {
				if !errors.Is(context.Cause(ctx), errRunStopped) {
					t.Errorf("check %d of %d still running after the cancel returned (%v)", i+1, len(running), context.Cause(ctx))
				}
			}
			for _, r := range release {
				select {
				case <-r:
				default:
					close(r)
				}
			}
			reports := []<-chan error{second}
			if !tc.finishFirst {
				reports = append(reports, first)
			}
			for _, done := range reports {
				var ee *Error
				if err := <-done; !errors.As(err, &ee) || !errors.Is(ee.Kind, ErrRunCancelled) {
					t.Fatalf("a report after the cancel: %v", err)
				}
			}
		})
	}
}
