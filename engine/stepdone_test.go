package engine

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/stratum-go/stratum/store"
)

const twoSteps = `
version: 1
contracts:
  R: {v: string}
flows:
  entry: main
  main:
    input: {x: string}
    output: {from: "${b.output}", contract: R}
    steps:
      - id: a
        do: "a ${input.x}"
        out: R
        attempts: 3
      - id: b
        do: "b ${a.output.v}"
        out: R
`

func TestStepDoneFencing(t *testing.T) {
	h := newHarness(t, Options{})
	r := h.plan(twoSteps, map[string]any{"x": "X"})
	tok := entry(t, r, "a").DispatchToken
	headBefore := h.audit(r.RunID).Events

	for _, tc := range []struct {
		name, step, token string
		kind              error
		msg               string
	}{
		{"missing token", "a", "", ErrStaleToken, "missing dispatch token"},
		{"wrong token", "a", "nope", ErrStaleToken, "superseded issuance"},
		{"unknown step", "zz", tok, ErrNotAwaiting, "no step"},
		{"not ready", "b", tok, ErrNotAwaiting, "not awaiting"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := h.e.StepDone(h.ctx, StepDoneRequest{RunID: r.RunID, StepID: tc.step, DispatchToken: tc.token,
				Result: StepResult{Output: json.RawMessage(`{"v":"1"}`)}})
			e := wantCode(t, err, tc.kind)
			if !strings.Contains(e.Message, tc.msg) || e.State == nil || e.State.Status != StatusReady {
				t.Fatalf("refusal %q state %s", e.Message, dump(e.State))
			}
		})
	}
	if got := h.audit(r.RunID).Events; len(got) != len(headBefore) {
		t.Fatalf("refused calls wrote events: %d -> %d", len(headBefore), len(got))
	}

	r2 := h.ok(r, "a", `{"v":"A"}`)
	// The same report again: already accepted, refused with the state.
	_, err := h.e.StepDone(h.ctx, StepDoneRequest{RunID: r.RunID, StepID: "a", DispatchToken: tok, Result: StepResult{Output: json.RawMessage(`{"v":"A"}`)}})
	e := wantCode(t, err, ErrStaleToken)
	if !strings.Contains(e.Message, "already accepted") || e.State.Ready[0].ID != "b" {
		t.Fatalf("refusal %q %s", e.Message, dump(e.State))
	}
	if en := entry(t, r2, "b"); en.Do != "b A" {
		t.Fatalf("b do %q", en.Do)
	}
	// A token of a failed attempt is superseded by the retry's.
	r3 := h.report(r2, "b", StepResult{Failure: "nope"})
	old := entry(t, r2, "b").DispatchToken
	_, err = h.e.StepDone(h.ctx, StepDoneRequest{RunID: r.RunID, StepID: "b", DispatchToken: old, Result: StepResult{Output: json.RawMessage(`{"v":"B"}`)}})
	wantCode(t, err, ErrStaleToken)
	r3 = h.ok(r3, "b", `{"v":"B"}`)
	wantStatus(t, r3, StatusCompleted)
	// A terminal run refuses with its state.
	_, err = h.e.StepDone(h.ctx, StepDoneRequest{RunID: r.RunID, StepID: "b", DispatchToken: "x"})
	e = wantCode(t, err, ErrRunTerminal)
	if e.State.Status != StatusCompleted {
		t.Fatalf("state %s", dump(e.State))
	}
	_, err = h.e.StepDone(h.ctx, StepDoneRequest{RunID: "../etc", StepID: "b", DispatchToken: "x"})
	wantCode(t, err, ErrRunNotFound)
}

func TestStepDoneValidation(t *testing.T) {
	h := newHarness(t, Options{})
	cases := []struct {
		name   string
		res    StepResult
		reason string
	}{
		{"contract", StepResult{Output: json.RawMessage(`{"v":1}`)}, "output failed the R contract: result.v"},
		{"undeclared key", StepResult{Output: json.RawMessage(`{"v":"x","extra":1}`)}, "extra"},
		{"bad telemetry", StepResult{Output: json.RawMessage(`{"v":"x"}`), Telemetry: js(map[string]any{"model": ""})}, "invalid connector telemetry"},
		{"bad usage", StepResult{Output: json.RawMessage(`{"v":"x"}`), Usage: js(map[string]any{"usd": -1})}, "invalid usage ledger entry"},
		{"dispatches", StepResult{Output: json.RawMessage(`{"v":"x"}`), Usage: js(map[string]any{"dispatches": 1, "tokens": 5})}, "dispatches are engine-accounted"},
		{"failure wins", StepResult{Output: json.RawMessage(`{"v":"x"}`), Failure: "could not"}, "could not"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := h.plan(twoSteps, map[string]any{"x": "X"})
			r = h.report(r, "a", tc.res)
			en := entry(t, r, "a")
			if en.Attempt != 2 || !strings.Contains(en.PreviousFailure.Reason, tc.reason) {
				t.Fatalf("entry %s, want reason containing %q", dump(en), tc.reason)
			}
		})
	}
	// Telemetry and usage are recorded on the attempt; usage is debited.
	r := h.plan(twoSteps, map[string]any{"x": "X"})
	r = h.report(r, "a", StepResult{Output: json.RawMessage(`{"v":"x"}`), Usage: js(map[string]any{"tokens": 10, "usd": 0.5}),
		Telemetry: js(map[string]any{"durationMs": 12, "model": "m1"})})
	if r.Ledger.Spent != (Ledger{USD: 0.5, Tokens: 10, Dispatches: 2}) {
		t.Fatalf("ledger %s", dump(r.Ledger))
	}
	a := h.stepState(r.RunID, "a").Attempts[0]
	if a.Model != "m1" || *a.DurationMs != 12 || a.Usage.Tokens != 10 {
		t.Fatalf("attempt %s", dump(a))
	}
	if !slices.Contains(h.eventTypes(r.RunID), "usage_debit(a)") {
		t.Fatal("no usage_debit event")
	}
}

func TestAttemptsExhaustedFailsRun(t *testing.T) {
	h := newHarness(t, Options{})
	r := h.plan(twoSteps, map[string]any{"x": "X"})
	r = h.drive(r, script{"a": {`!one`, `!two`, `!three`}})
	wantFailure(t, r, StatusFailed, "three")
	if r.Failure.Attempt != 3 {
		t.Fatalf("failure %s", dump(r.Failure))
	}
}

func TestIdenticalEvidenceEarlyStop(t *testing.T) {
	h := newHarness(t, Options{})
	r := h.plan(twoSteps, map[string]any{"x": "X"})
	r = h.ok(r, "a", `{"v":1}`)
	r = h.ok(r, "a", `{"v":1}`) // attempts: 3, but the same rejected output again
	wantFailure(t, r, StatusFailed, "(no retry: identical evidence)")
	if r.Failure.Attempt != 2 {
		t.Fatalf("failure %s", dump(r.Failure))
	}
}

func TestPlanRefusals(t *testing.T) {
	h := newHarness(t, Options{})
	_, err := h.e.Plan(h.ctx, PlanRequest{Spec: []byte("version: 1\nflows: {}"), Input: js(map[string]any{})})
	e := wantCode(t, err, ErrInvalidSpec)
	if len(e.Diagnostics) == 0 {
		t.Fatal("no diagnostics")
	}
	_, err = h.e.Plan(h.ctx, PlanRequest{Spec: []byte(twoSteps), Input: js(map[string]any{"x": 1, "y": 2})})
	e = wantCode(t, err, ErrInvalidInput)
	if len(e.Details) != 2 || e.Details[0].Code != "INPUT_CONTRACT_INVALID" {
		t.Fatalf("details %s", dump(e.Details))
	}
	runs, err := h.e.ListRuns(h.ctx)
	if err != nil || len(runs) != 0 {
		t.Fatalf("a refused plan persisted something: %v %v", runs, err)
	}
}

// Two independent ready steps: both are returned, each with its dispatch
// reserved, and they may be reported in any order.
func TestParallelReady(t *testing.T) {
	h := newHarness(t, Options{})
	spec := `
version: 1
contracts:
  R: {v: string}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${c.output}", contract: R}
    steps:
      - {id: a, do: a, out: R}
      - {id: b, do: b, out: R}
      - {id: c, do: "c ${a.output.v} ${b.output.v}", out: R}
`
	r := h.plan(spec, map[string]any{})
	if ids := readyIDs(r); !slices.Equal(ids, []string{"a", "b"}) || r.Ledger.Spent.Dispatches != 2 {
		t.Fatalf("ready %v ledger %s", ids, dump(r.Ledger))
	}
	first := r
	r = h.ok(first, "b", `{"v":"B"}`)
	if ids := readyIDs(r); !slices.Equal(ids, []string{"a"}) {
		t.Fatalf("ready %v", ids)
	}
	r = h.ok(first, "a", `{"v":"A"}`)
	if en := entry(t, r, "c"); en.Do != "c A B" {
		t.Fatalf("c do %q", en.Do)
	}
	// A flow budget of one dispatch is exhausted by making two steps ready.
	_, err := h.e.Plan(h.ctx, PlanRequest{Spec: []byte(strings.Replace(spec, "input: {}", "input: {}\n    budget: {dispatches: 1}", 1)), Input: js(map[string]any{})})
	if err != nil {
		t.Fatal(err)
	}
	runs, _ := h.e.ListRuns(h.ctx)
	if runs[0].Status != StatusBudgetExhausted {
		t.Fatalf("runs %s", dump(runs))
	}
}

func TestRunNotFoundAndLocked(t *testing.T) {
	h := newFileHarness(t, Options{})
	_, err := h.e.Audit(h.ctx, "00000000-0000-4000-8000-000000000999")
	wantCode(t, err, ErrRunNotFound)
	if CodeOf(err) != CodeRunNotFound {
		t.Fatal(CodeOf(err))
	}
	// A lock held elsewhere for the whole lock timeout maps to run_locked.
	r := h.plan(twoSteps, map[string]any{"x": "X"})
	fs, _ := store.NewFileStore(h.files.Root(), &store.Options{LockTimeout: 50_000_000})
	e2 := New(fs, Options{})
	defer e2.Close()
	hold := make(chan struct{})
	release := make(chan struct{})
	go func() {
		_, _ = h.store.Update(context.Background(), r.RunID, func(*store.Snapshot) (*store.Change, error) {
			close(hold)
			<-release
			return nil, nil
		})
	}()
	<-hold
	_, err = e2.StepDone(h.ctx, StepDoneRequest{RunID: r.RunID, StepID: "a", DispatchToken: entry(t, r, "a").DispatchToken})
	close(release)
	if !errors.Is(err, ErrRunLocked) {
		t.Fatalf("err %v", err)
	}
}

// A report for a step reset by a revise is stale, not "not awaiting".
func TestStaleAfterRevise(t *testing.T) {
	h := newHarness(t, Options{})
	r := h.plan(string(example(t, "full-gate.stratum.yaml")), map[string]any{"text": "t"})
	tok := entry(t, r, "work").DispatchToken
	r = h.ok(r, "work", goodWork)
	r = h.resolve(r.RunID, "review", DecisionRevise)
	_, err := h.e.StepDone(h.ctx, StepDoneRequest{RunID: r.RunID, StepID: "work", DispatchToken: tok, Result: StepResult{Output: json.RawMessage(goodWork)}})
	wantCode(t, err, ErrStaleToken)
	_, err = h.e.StepDone(h.ctx, StepDoneRequest{RunID: r.RunID, StepID: "work", DispatchToken: "forged", Result: StepResult{Output: json.RawMessage(goodWork)}})
	wantCode(t, err, ErrStaleToken)
}
