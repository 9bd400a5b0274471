package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratum-go/stratum/expr"
	"github.com/stratum-go/stratum/internal/proc"
)

// procDispatcher is an agent faked by a real child process: the script
// reads the task on stdin and prints the JSON output.
type procDispatcher struct {
	script string
	calls  atomic.Int32
	mu     sync.Mutex
	seen   []DispatchRequest
}

func (d *procDispatcher) Dispatch(ctx context.Context, req DispatchRequest) (DispatchResult, error) {
	d.calls.Add(1)
	d.mu.Lock()
	d.seen = append(d.seen, req)
	d.mu.Unlock()
	res, err := proc.Run(ctx, proc.Spec{Argv: []string{"/bin/sh", "-c", d.script}, Dir: req.Workdir,
		Stdin: []byte(req.Prompt), Timeout: 10 * time.Second,
		Env: []string{"PATH=/usr/bin:/bin", fmt.Sprintf("ATTEMPT=%d", req.Attempt), fmt.Sprintf("STAGE=%d", req.Stage),
			fmt.Sprintf("ITEM=%d", req.ItemIndex)}})
	if err != nil {
		return DispatchResult{}, err
	}
	if !res.Success() {
		return DispatchResult{Failure: strings.TrimSpace(string(res.StderrTail))}, nil
	}
	out, err := expr.DecodeJSON(res.Stdout)
	if err != nil {
		return DispatchResult{Failure: "agent printed no JSON: " + err.Error()}, nil
	}
	return DispatchResult{Output: out, Usage: Ledger{Tokens: 10}, Telemetry: &Telemetry{DurationMs: 1, Model: "fake"}}, nil
}

// requests returns the requests dispatched so far.
func (d *procDispatcher) requests() []DispatchRequest {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.seen)
}

// waitFor polls a run until cond holds.
func (h *harness) waitFor(e *Engine, runID string, cond func(*Response) bool) *Response {
	h.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		r, err := e.Status(h.ctx, runID)
		if err != nil {
			h.t.Fatal(err)
		}
		if cond(r) {
			return r
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting: %s", dump(r))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// notFanoutWaiting reports a run that waits on no engine work: no
// fanout and no evaluate command in progress.
func notFanoutWaiting(r *Response) bool {
	for _, w := range r.Waiting {
		if w.Kind == WaitFanout || w.Kind == WaitEvaluate {
			return false
		}
	}
	return true
}

func TestExampleFiveConstructs(t *testing.T) {
	// The agent answers {"value": "<the task>"}.
	d := &procDispatcher{script: `read task; printf '{"value":"%s"}' "$task"`}
	h := newHarness(t, Options{Dispatcher: d})
	r := h.plan(string(example(t, "five-constructs.stratum.yaml")), map[string]any{"topic": "moon", "items": []any{"a", "b", "c"}})
	r = h.ok(r, "analyze", `{"summary":"round","score":0.7}`)
	wantStatus(t, r, StatusRunning)
	r = h.resolve(r.RunID, "review", DecisionApprove)
	r = h.waitFor(h.e, r.RunID, notFanoutWaiting)
	en := entry(t, r, "child/write_summary")
	if en.Do != "Summarize moon" {
		t.Fatalf("child entry %s", dump(en))
	}
	r = h.ok(r, "child/write_summary", `{"message":"summary"}`)
	r = h.ok(r, "finish", `{"message":"final"}`)
	wantStatus(t, r, StatusCompleted)
	a := h.audit(r.RunID)
	if got := jsonOf(t, a.Steps["inspect"].Output.Data); got != `[{"value":"Inspect a"},{"value":"Inspect b"},{"value":"Inspect c"}]` {
		t.Fatalf("fanout output %s", got)
	}
	types := h.eventTypes(r.RunID)
	if countPrefix(types, "fanout_item_dispatched(inspect)") != 3 || countPrefix(types, "fanout_attempt_result(inspect)") != 3 ||
		countPrefix(types, "fanout_item_ready(inspect)") != 3 {
		t.Fatalf("events %v", types)
	}
	// analyze + 3 items + write_summary + finish
	if a.FlowSpent.Dispatches != 6 || a.FlowSpent.Tokens != 30 {
		t.Fatalf("spent %s", dump(a.FlowSpent))
	}
}

func TestEngineFanoutRetriesAndRequire(t *testing.T) {
	spec := strings.Replace(strings.Replace(consumerSpec("2", `            - do: "Inspect ${item}"
              out: V`), "dispatch: consumer", "dispatch: engine", 1), "concurrency: 2", "concurrency: 3", 1)
	// Item "bad" always fails; "flaky" fails its first attempt.
	d := &procDispatcher{script: `read task; case "$task" in *bad*) echo "cannot" >&2; exit 1;; *flaky*) if [ "$ATTEMPT" = 1 ]; then echo "transient" >&2; exit 1; fi;; esac; printf '{"value":"%s"}' "$task"`}
	h := newHarness(t, Options{Dispatcher: d})
	r := h.plan(spec, map[string]any{"items": []any{"good", "bad", "flaky"}})
	r = h.waitFor(h.e, r.RunID, notFanoutWaiting)
	en := entry(t, r, "after")
	if en.Do != `after [{"value":"Inspect good"},null,{"value":"Inspect flaky"}]` {
		t.Fatalf("after %s", dump(en))
	}
	fan := h.stepState(r.RunID, "fan")
	bad := fan.Fanout.Items[1]
	if bad.Status != StepFailed || len(bad.Attempts) != 2 || bad.Attempts[1].FailureKind != kindConnector || bad.Failure.Reason != "cannot" {
		t.Fatalf("bad item %s", dump(bad))
	}
	if fl := fan.Fanout.Items[2]; fl.Status != StepSucceeded || len(fl.Attempts) != 2 {
		t.Fatalf("flaky item %s", dump(fl))
	}
	if d.calls.Load() != 5 {
		t.Fatalf("dispatches %d", d.calls.Load())
	}
	types := h.eventTypes(r.RunID)
	if !slices.Contains(types, "result(fan)") {
		t.Fatalf("events %v", types)
	}
}

// A fanout driven by one process whose Engine closes mid-way is resumed
// by another: terminal items are not dispatched again.
func TestEngineFanoutResume(t *testing.T) {
	spec := strings.Replace(strings.Replace(consumerSpec("all", `            - do: "Inspect ${item}"
              out: V`), "dispatch: consumer", "dispatch: engine", 1), "concurrency: 2", "concurrency: 1", 1)
	slow := &procDispatcher{script: `read task; case "$task" in *b*) sleep 5;; esac; printf '{"value":"%s"}' "$task"`}
	h := newHarness(t, Options{Dispatcher: slow})
	r := h.plan(spec, map[string]any{"items": []any{"a", "b", "c"}})
	h.waitFor(h.e, r.RunID, func(*Response) bool {
		st := h.stepState(r.RunID, "fan")
		return st.Fanout.Items[0].Status == StepSucceeded && st.Fanout.Items[1].Status == StepRunning
	})
	h.e.Close() // the process goes away while item b is in flight
	fast := &procDispatcher{script: `read task; printf '{"value":"%s"}' "$task"`}
	e2 := h.reopen(Options{Dispatcher: fast})
	if _, err := e2.Resume(h.ctx, r.RunID); err != nil {
		t.Fatal(err)
	}
	r = h.waitFor(e2, r.RunID, notFanoutWaiting)
	if entry(t, r, "after").Do != `after [{"value":"Inspect a"},{"value":"Inspect b"},{"value":"Inspect c"}]` {
		t.Fatalf("after %s", dump(r))
	}
	if fast.calls.Load() != 2 {
		t.Fatalf("resumed dispatches %d, want 2 (b again, c)", fast.calls.Load())
	}
	var raw []byte
	raw, _ = json.Marshal(h.stepState(r.RunID, "fan").Fanout.Items[1].Attempts)
	if strings.Count(string(raw), `"attempt"`) != 1 {
		t.Fatalf("item b attempts %s", raw)
	}
}

// unavailableDispatcher runs its agent program like a connector does, and
// reports a program that cannot be started as an agent that cannot run.
type unavailableDispatcher struct{ program string }

func (d unavailableDispatcher) Dispatch(ctx context.Context, req DispatchRequest) (DispatchResult, error) {
	if _, err := proc.Run(ctx, proc.Spec{Argv: []string{d.program}, Timeout: 5 * time.Second}); err != nil {
		return DispatchResult{}, fmt.Errorf("%w: %v", ErrAgentUnavailable, err)
	}
	return DispatchResult{Output: "ran"}, nil
}

// An agent that cannot run at all is not charged an attempt: the item
// waits, the fanout pauses with a dispatch_unavailable event, and the run
// stays resumable.
func TestEngineFanoutPausesWhenTheAgentCannotRun(t *testing.T) {
	spec := strings.Replace(consumerSpec("all", `            - do: "Inspect ${item}"
              out: V`), "dispatch: consumer", "dispatch: engine", 1)
	h := newHarness(t, Options{Dispatcher: unavailableDispatcher{program: "/no/such/agent"}})
	r := h.plan(spec, map[string]any{"items": []any{"a"}})
	for deadline := time.Now().Add(20 * time.Second); countPrefix(h.eventTypes(r.RunID), "dispatch_unavailable(fan)") == 0; {
		if time.Now().After(deadline) {
			t.Fatalf("no dispatch_unavailable: %v", h.eventTypes(r.RunID))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := h.e.Wait(h.ctx); err != nil {
		t.Fatal(err)
	}
	st, _ := h.e.Status(h.ctx, r.RunID)
	it := h.stepState(r.RunID, "fan").Fanout.Items[0]
	if st.Status != StatusRunning || it.Status != StepPending || len(it.Attempts) != 0 {
		t.Fatalf("status %s, item %s", st.Status, dump(it))
	}
}
