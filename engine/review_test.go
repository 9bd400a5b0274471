package engine

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stratum-go/stratum/expr"
	"github.com/stratum-go/stratum/store"
)

// A subflow with two parallel tasks, one of which fails for good: the run
// step fails (and routes by on_fail), and the other task's outstanding
// issuance must die with its subflow.
const parallelChild = `
version: 1
contracts:
  V: {v: string}
flows:
  entry: main
  sub:
    input: {}
    output: {from: "${c2.output}", contract: V}
    steps:
      - {id: c1, do: c1, out: V, attempts: 1}
      - {id: c2, do: c2, out: V}
      - id: g
        gate: {on_approve: null, on_revise: null, on_kill: null}
  main:
    input: {}
    output: {from: "${rescue.output}", contract: V}
    steps:
      - {id: w, run: sub, with: {}, on_fail: rescue}
      - {id: rescue, do: rescue, out: V}
`

func TestDeadSubflowIssuancesRefused(t *testing.T) {
	h := newHarness(t, Options{})
	r := h.plan(parallelChild, map[string]any{})
	tok2 := entry(t, r, "w/c2").DispatchToken
	gateTok := h.gateToken(r.RunID, "w/g")
	r = h.report(r, "w/c1", StepResult{Failure: "broke"})
	en := entry(t, r, "rescue")
	if !strings.Contains(en.PreviousFailure.Reason, "broke") {
		t.Fatalf("rescue %s", dump(en))
	}
	before := len(h.audit(r.RunID).Events)
	_, err := h.e.StepDone(h.ctx, StepDoneRequest{RunID: r.RunID, StepID: "w/c2", DispatchToken: tok2,
		Result: StepResult{Output: json.RawMessage(`{"v":"late"}`), Usage: js(map[string]any{"tokens": 5})}})
	e := wantCode(t, err, ErrStaleToken)
	if e.State == nil || e.State.Status != StatusReady {
		t.Fatalf("refusal state %s", dump(e.State))
	}
	_, err = h.e.ResolveGate(h.ctx, GateRequest{RunID: r.RunID, StepID: "w/g", Decision: DecisionApprove, GateToken: gateTok})
	wantCode(t, err, ErrStaleToken)
	a := h.audit(r.RunID)
	if len(a.Events) != before {
		t.Fatalf("refused reports wrote events: %d -> %d", before, len(a.Events))
	}
	if c2 := a.Steps["w"].Sub.Steps["c2"]; c2.DispatchToken != "" || c2.Status == StepSucceeded {
		t.Fatalf("c2 of the failed subflow %s", dump(c2))
	}
	if g := a.Steps["w"].Sub.Steps["g"]; g.GateToken != "" {
		t.Fatalf("gate of the failed subflow %s", dump(g))
	}
	r = h.ok(r, "rescue", `{"v":"r"}`)
	wantStatus(t, r, StatusCompleted)
}

// Two steps share an on_fail target: the second failure, arriving after
// the target already ran, routes to a finished step. The finished step
// must not be changed (it is stored once, when it finished).
func TestSecondRouteToFinishedTarget(t *testing.T) {
	spec := `
version: 1
contracts:
  V: {v: string}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${fix.output}", contract: V}
    steps:
      - {id: a, do: a, out: V, attempts: 1, on_fail: fix}
      - {id: b, do: b, out: V, attempts: 1, on_fail: fix}
      - {id: fix, do: fix, out: V}
`
	h := newHarness(t, Options{})
	r := h.plan(spec, map[string]any{})
	first := r
	r = h.report(first, "a", StepResult{Failure: "a broke"})
	if en := entry(t, r, "fix"); en.PreviousFailure == nil || en.PreviousFailure.Reason != "a broke" {
		t.Fatalf("fix %s", dump(en))
	}
	r = h.ok(r, "fix", `{"v":"fixed"}`)
	fixBefore := dump(h.stepState(r.RunID, "fix"))
	r = h.report(first, "b", StepResult{Failure: "b broke"})
	wantStatus(t, r, StatusCompleted)
	if got := dump(h.stepState(r.RunID, "fix")); got != fixBefore {
		t.Fatalf("a finished route target changed:\n before %s\n after  %s", fixBefore, got)
	}
	// A fresh process sees the same.
	a, err := h.reopen(Options{}).Audit(h.ctx, r.RunID)
	if err != nil || dump(a.Steps["fix"]) != fixBefore {
		t.Fatalf("fresh audit %v %s", err, dump(a.Steps["fix"]))
	}
}

// Cancel burns every outstanding issuance: a root task, a waiting gate
// inside a subflow, a consumer item; every later report or decision is
// refused and changes nothing.
func TestCancelBurnsEveryToken(t *testing.T) {
	h := newHarness(t, Options{})
	r := h.plan(childAndFanout, map[string]any{"items": []any{"i0", "i1"}})
	// Ready order (spec/engine.md 2.3): root tasks, subflow tasks, items.
	if ids := strings.Join(readyIDs(r), ","); ids != "a,w/d,fan/0" {
		t.Fatalf("ready %s", ids)
	}
	r = h.ok(r, "w/d", `{"value":"d"}`)
	aTok := entry(t, r, "a").DispatchToken
	itemTok := entry(t, r, "fan/0").DispatchToken
	gTok := h.gateToken(r.RunID, "w/g")
	c, err := h.e.Cancel(h.ctx, r.RunID, "stop")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.Burned.Steps, ",") != "a,w/g" || c.Burned.Items != 1 {
		t.Fatalf("burned %s", dump(c.Burned))
	}
	before := len(h.audit(r.RunID).Events)
	_, err = h.e.StepDone(h.ctx, StepDoneRequest{RunID: r.RunID, StepID: "a", DispatchToken: aTok, Result: StepResult{Output: json.RawMessage(`{"v":"x"}`)}})
	wantCode(t, err, ErrRunCancelled)
	_, err = h.e.StepDone(h.ctx, StepDoneRequest{RunID: r.RunID, StepID: "fan/0", DispatchToken: itemTok, Result: StepResult{Output: json.RawMessage(`{"value":"x"}`)}})
	wantCode(t, err, ErrRunCancelled)
	_, err = h.e.ResolveGate(h.ctx, GateRequest{RunID: r.RunID, StepID: "w/g", Decision: DecisionApprove, GateToken: gTok})
	wantCode(t, err, ErrRunCancelled)
	_, err = h.e.Revert(h.ctx, r.RunID, "x")
	wantCode(t, err, ErrRunCancelled)
	a := h.audit(r.RunID)
	if len(a.Events) != before {
		t.Fatalf("refusals wrote events")
	}
	raw := dump(a.Steps)
	for _, tok := range []string{aTok, itemTok, gTok} {
		if strings.Contains(raw, tok) {
			t.Fatalf("token %s survived the cancel: %s", tok, raw)
		}
	}
	if gates, _ := h.e.ListGates(h.ctx, ""); len(gates) != 0 {
		t.Fatalf("gates of a cancelled run listed: %s", dump(gates))
	}
	// A fresh process agrees.
	a2, err := h.reopen(Options{}).Audit(h.ctx, r.RunID)
	if err != nil || dump(a2.Steps) != raw || a2.Status != StatusCancelled {
		t.Fatalf("fresh audit %v %s", err, dump(a2))
	}
}

const childAndFanout = `
version: 1
contracts:
  V: {value: string}
flows:
  entry: main
  sub:
    input: {}
    output: {from: "${d.output}", contract: V}
    steps:
      - {id: d, do: d, out: V}
      - id: g
        after: [d]
        gate: {on_approve: null, on_revise: null, on_kill: null}
  main:
    input:
      items: string[]
    output: {from: "${a.output}", contract: V}
    steps:
      - {id: a, do: a, out: V}
      - {id: w, run: sub, with: {}}
      - id: fan
        fanout:
          over: "${input.items}"
          concurrency: 1
          isolation: none
          require: all
          merge: sequential
          dispatch: consumer
          steps:
            - do: "x ${item}"
              out: V
`

// Hostile values in a report are failed attempts, never internal errors:
// an amount large enough to overflow the ledgers, an output nested deep
// enough to be unstorable.
func TestHostileReportValues(t *testing.T) {
	deep := func(n int) json.RawMessage {
		return json.RawMessage(strings.Repeat("[", n) + strings.Repeat("]", n))
	}
	for _, tc := range []struct {
		name   string
		first  StepResult
		second StepResult
		reason string
	}{
		{"usage overflow",
			StepResult{Output: json.RawMessage(`{"v":1}`), Usage: json.RawMessage(`{"usd":1e308}`)},
			StepResult{Output: json.RawMessage(`{"v":2}`), Usage: json.RawMessage(`{"usd":1e308}`)},
			"invalid usage ledger entry"},
		{"tokens overflow",
			StepResult{Output: json.RawMessage(`{"v":1}`), Usage: js(map[string]any{"tokens": 1.7e308})},
			StepResult{Output: json.RawMessage(`{"v":2}`), Usage: js(map[string]any{"tokens": 1.7e308})},
			"invalid usage ledger entry"},
		{"deep output", StepResult{Output: js(deep(9999))}, StepResult{Output: js(deep(10000))}, "nested deeper than"},
		{"deep telemetry", StepResult{Output: json.RawMessage(`{"v":"x"}`), Telemetry: json.RawMessage(`{"model":` + string(deep(9999)) + `,"durationMs":1}`)},
			StepResult{Output: json.RawMessage(`{"v":"x"}`), Telemetry: js(map[string]any{"model": "m", "durationMs": 1, "effort": []any{[]any{}}})}, "invalid connector telemetry"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Options{})
			r := h.plan(strings.Replace(twoSteps, "attempts: 3", "attempts: 4", 1), map[string]any{"x": "X"})
			for i, res := range []StepResult{tc.first, tc.second} {
				en := entry(t, r, "a")
				var err error
				r, err = h.e.StepDone(h.ctx, StepDoneRequest{RunID: r.RunID, StepID: "a", DispatchToken: en.DispatchToken, Result: res})
				if err != nil {
					t.Fatalf("report %d: %v (code %s)", i+1, err, CodeOf(err))
				}
			}
			en := entry(t, r, "a")
			if en.PreviousFailure == nil || !strings.Contains(en.PreviousFailure.Reason, tc.reason) {
				t.Fatalf("entry %s, want a failure containing %q", dump(en), tc.reason)
			}
			if _, err := h.reopen(Options{}).Audit(h.ctx, r.RunID); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Text that is not valid UTF-8 cannot be stored as JSON as it is: free
// text (failure reasons, command stderr) is stored with U+FFFD and must be
// held in memory the same way, and identifiers (receipt ids, labels) are
// refused, or a second process would not recognise them.
func TestInvalidUTF8(t *testing.T) {
	h := newHarness(t, Options{})
	r := h.plan(twoSteps, map[string]any{"x": "X"})
	r = h.report(r, "a", StepResult{Failure: "bad \xce byte"})
	if en := entry(t, r, "a"); en.PreviousFailure.Reason != "bad \ufffd byte" {
		t.Fatalf("reason %q", en.PreviousFailure.Reason)
	}
	r = h.report(r, "a", StepResult{Output: js(map[string]any{"v": "x\xff"}), Telemetry: js(map[string]any{"model": "m\xff", "durationMs": 1})})
	if st := h.stepState(r.RunID, "a"); jsonOf(t, st.Output.Data) != "{\"v\":\"x\ufffd\"}" || st.Attempts[1].Model != "m\ufffd" {
		t.Fatalf("a %s", dump(st))
	}
	a1 := h.audit(r.RunID)
	a2, err := h.reopen(Options{}).Audit(h.ctx, r.RunID)
	if err != nil || dump(a1) != dump(a2) {
		t.Fatalf("processes disagree: %v\n%s\n%s", err, dump(a1.Steps), dump(a2.Steps))
	}
	_, err = h.e.UsageReport(h.ctx, r.RunID, Receipt{DispatchID: "d\xff", Source: "s", Usage: js(map[string]any{"tokens": 1})})
	wantCode(t, err, ErrInvalidReceipt)
	_, err = h.e.Commit(h.ctx, r.RunID, "l\xff")
	wantCode(t, err, ErrInvalidLabel)

	cmd := `printf 'broken \377 stderr' >&2; exit 1`
	r = h.plan(evaluateSpec(cmd, 5000), map[string]any{"n": 1})
	wantFailure(t, r, StatusFailed, "broken \ufffd stderr")
}

// A revise resets exactly the closure of its target (dependents and
// routes, a run step's subflow and a fanout's items dropped) and nothing
// else; rounds are checked and carry on_revise values resolved before
// anything changes.
const reviseClosure = `
version: 1
contracts:
  V: {v: string}
flows:
  entry: main
  sub:
    input: {}
    output: {from: "${c.output}", contract: V}
    steps:
      - {id: c, do: c, out: V}
  main:
    input:
      items: string[]
      flag: boolean
    output: {from: "${side.output}", contract: V}
    max_rounds: 2
    carry:
      wave:
        initial: "${plan.output.v}"
        on_revise:
          review: "${maybe.output.v}"
    steps:
      - {id: prep, do: prep, out: V}
      - {id: plan, do: plan, out: V, after: [prep]}
      - id: maybe
        when: "input.flag == true"
        do: maybe
        out: V
      - id: fan
        after: [plan]
        fanout:
          over: "${input.items}"
          concurrency: 2
          isolation: none
          require: all
          merge: sequential
          dispatch: consumer
          steps:
            - {do: "x ${item} ${wave}", out: V}
      - {id: w, run: sub, with: {}, after: [plan]}
      - id: review
        after: [fan, w, maybe]
        gate: {on_approve: null, on_revise: plan, on_kill: null}
      - {id: side, do: side, out: V, after: [prep]}
`

func TestReviseClosure(t *testing.T) {
	sc := script{"prep": {`{"v":"p"}`}, "maybe": {`{"v":"m"}`}, "side": {`{"v":"s"}`}, "plan": {`{"v":"w1"}`},
		"fan/*": {`{"v":"f"}`}, "w/c": {`{"v":"c"}`}}
	t.Run("unresolved carry refuses before any change", func(t *testing.T) {
		h := newHarness(t, Options{})
		r := h.drive(h.plan(reviseClosure, map[string]any{"items": []any{"i0"}, "flag": false}), sc)
		wantStatus(t, r, StatusRunning)
		tok := h.gateToken(r.RunID, "review")
		before := h.audit(r.RunID)
		_, err := h.e.ResolveGate(h.ctx, GateRequest{RunID: r.RunID, StepID: "review", Decision: DecisionRevise, GateToken: tok})
		e := wantCode(t, err, ErrCarryReviseUnresolved)
		if !strings.Contains(e.Message, "maybe") || e.State == nil || e.State.Status != StatusRunning {
			t.Fatalf("refusal %q %s", e.Message, dump(e.State))
		}
		if after := h.audit(r.RunID); dump(after) != dump(before) {
			t.Fatalf("a refused revise changed the run:\n%s\n%s", dump(before), dump(after))
		}
		// The token is still valid.
		r, err = h.e.ResolveGate(h.ctx, GateRequest{RunID: r.RunID, StepID: "review", Decision: DecisionApprove, GateToken: tok})
		if err != nil {
			t.Fatal(err)
		}
		wantStatus(t, r, StatusCompleted)
	})
	t.Run("reset closure", func(t *testing.T) {
		h := newHarness(t, Options{})
		r := h.drive(h.plan(reviseClosure, map[string]any{"items": []any{"i0"}, "flag": true}), sc)
		wantStatus(t, r, StatusRunning)
		before := h.audit(r.RunID)
		r = h.resolve(r.RunID, "review", DecisionRevise)
		a := h.audit(r.RunID)
		for _, id := range []string{"prep", "maybe", "side"} {
			if dump(a.Steps[id]) != dump(before.Steps[id]) {
				t.Fatalf("%s is outside the closure but changed: %s", id, dump(a.Steps[id]))
			}
		}
		for _, id := range []string{"plan", "fan", "w", "review"} {
			st := a.Steps[id]
			if st.Epoch != 1 || len(st.Attempts) != 0 || st.Output.Present || st.Fanout != nil || st.Sub != nil || !st.Spent.IsZero() && id != "plan" {
				t.Fatalf("%s was not reset: %s", id, dump(st))
			}
		}
		if h.persisted(r.RunID).Steps["fan"].FanoutEpoch != 1 || a.Steps["review"].Iterations != 1 || a.Rounds != 1 {
			t.Fatalf("fan %s review %s rounds %d", dump(a.Steps["fan"]), dump(a.Steps["review"]), a.Rounds)
		}
		var reset map[string]any
		for _, ev := range a.Events {
			if ev.Type == "step_reset" {
				if ev.StepID != "plan" {
					t.Fatalf("step_reset on %s", ev.StepID)
				}
				_ = json.Unmarshal(ev.Detail, &reset)
			}
		}
		if got := dump(reset); got != `{"reason":"revise","reset":[{"fromEpoch":0,"stepId":"plan","toEpoch":1},{"fromEpoch":0,"stepId":"fan","toEpoch":1},{"fromEpoch":0,"stepId":"w","toEpoch":1},{"fromEpoch":0,"stepId":"review","toEpoch":1}],"subflowsDropped":["w"]}` {
			t.Fatalf("step_reset %s", got)
		}
		// Spend is never erased; the new issuance of plan is reserved.
		if a.FlowSpent.Dispatches != before.FlowSpent.Dispatches+1 {
			t.Fatalf("spent %s -> %s", dump(before.FlowSpent), dump(a.FlowSpent))
		}
		if en := entry(t, r, "plan"); en.Epoch != 1 || en.Attempt != 1 {
			t.Fatalf("plan %s", dump(en))
		}
		r = h.ok(r, "plan", `{"v":"w2"}`)
		// The revise-written carry survives plan running again.
		if en := entry(t, r, "fan/0"); en.Do != "x i0 m" {
			t.Fatalf("fan/0 %s", dump(en))
		}
		r = h.drive(r, sc)
		r = h.resolve(r.RunID, "review", DecisionApprove)
		wantStatus(t, r, StatusCompleted)
	})
}

// The step_done checks of spec/engine.md 4.1 in order: each case breaks
// two rules at once and the earlier one must be the reason; what is
// recorded (usage) follows from where the pipeline stopped.
func TestStepDoneCheckOrder(t *testing.T) {
	spec := `
version: 1
contracts:
  R: {v: string, n: number, opt: "integer?"}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${a.output}", contract: R}
    budget: {usd: 10}
    steps:
      - id: a
        do: a
        out: R
        attempts: 5
        budget: {tokens: 100}
        ensure:
          - expr: "result.n > 0"
          - expr: "result.n > 10"
`
	good := json.RawMessage(`{"v":"x","n":50}`)
	tele := map[string]any{"durationMs": 1, "model": "m"}
	for _, tc := range []struct {
		name   string
		res    StepResult
		reason string // the whole failure reason
		spent  Ledger // flow spend after the report (1 dispatch each issuance)
	}{
		{"telemetry before usage", StepResult{Output: js(good), Telemetry: js(map[string]any{"model": "m"}), Usage: js(map[string]any{"usd": -1})},
			"invalid connector telemetry (nothing recorded): telemetry needs both durationMs and model", Ledger{Dispatches: 2}},
		{"usage shape before budget", StepResult{Output: js(good), Usage: js(map[string]any{"usd": 1, "tokens": "9"})},
			`invalid usage ledger entry (nothing recorded): usage.tokens must be a number from 0 to 1e+15 (or null when not known), not "9"`, Ledger{Dispatches: 2}},
		{"task budget before dispatches and failure", StepResult{Failure: "no", Usage: js(map[string]any{"tokens": 101, "dispatches": 1}), Telemetry: js(tele)},
			"task budget exhausted", Ledger{Tokens: 101, Dispatches: 1}},
		{"dispatches before failure", StepResult{Failure: "no", Usage: js(map[string]any{"tokens": 5, "dispatches": 1})},
			"dispatches are engine-accounted; do not report them in usage (other keys were recorded)", Ledger{Tokens: 5, Dispatches: 2}},
		{"failure before contract", StepResult{Failure: "could not", Output: json.RawMessage(`{"v":1}`)},
			"could not", Ledger{Dispatches: 2}},
		{"contract before ensures", StepResult{Output: json.RawMessage(`{"v":"x","n":-1,"opt":1.5}`)},
			"output failed the R contract: result.opt: expected an integer, got 1.5", Ledger{Dispatches: 2}},
		{"first ensure first", StepResult{Output: json.RawMessage(`{"v":"x","n":-1,"opt":null}`)},
			`ensure "result.n > 0" failed: evaluated to false on result {"v":"x","n":-1,"opt":null}`, Ledger{Dispatches: 2}},
		{"second ensure", StepResult{Output: json.RawMessage(`{"v":"x","n":5}`)},
			`ensure "result.n > 10" failed: evaluated to false on result {"v":"x","n":5}`, Ledger{Dispatches: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Options{})
			r := h.report(h.plan(spec, map[string]any{}), "a", tc.res)
			st := h.stepState(r.RunID, "a")
			if st.Failure == nil || st.Failure.Reason != tc.reason {
				t.Fatalf("reason %s\nwant %q", dump(st.Failure), tc.reason)
			}
			if r.Ledger.Spent != tc.spent {
				t.Fatalf("spent %s, want %s", dump(r.Ledger.Spent), dump(tc.spent))
			}
		})
	}
}

// attempts defaults to 2: the second failure of a step that declares no
// attempts is final.
func TestDefaultAttempts(t *testing.T) {
	h := newHarness(t, Options{})
	r := h.plan(twoSteps, map[string]any{"x": "X"})
	r = h.ok(r, "a", `{"v":"A"}`)
	r = h.report(r, "b", StepResult{Failure: "one"})
	if en := entry(t, r, "b"); en.Attempt != 2 {
		t.Fatalf("b %s", dump(en))
	}
	r = h.report(r, "b", StepResult{Failure: "two"})
	wantFailure(t, r, StatusFailed, "two")
	if r.Failure.Attempt != 2 {
		t.Fatalf("failure %s", dump(r.Failure))
	}
}

// A subflow's dispatch budget is reserved at readiness: the child task
// that would be the second dispatch of a `budget: {dispatches: 1}` run
// step is never issued, and the run step fails (routing by on_fail).
func TestSubflowDispatchReservation(t *testing.T) {
	spec := `
version: 1
contracts:
  V: {v: string}
flows:
  entry: main
  sub:
    input: {}
    output: {from: "${c2.output}", contract: V}
    steps:
      - {id: c1, do: c1, out: V}
      - {id: c2, do: c2, out: V, after: [c1]}
  main:
    input: {}
    output: {from: "${rescue.output}", contract: V}
    steps:
      - {id: w, run: sub, with: {}, budget: {dispatches: 1}, on_fail: rescue}
      - {id: rescue, do: rescue, out: V}
`
	h := newHarness(t, Options{})
	r := h.plan(spec, map[string]any{})
	r = h.ok(r, "w/c1", `{"v":"1"}`)
	en := entry(t, r, "rescue")
	if en.PreviousFailure == nil || en.PreviousFailure.Reason != `subflow "sub": subflow budget exhausted` {
		t.Fatalf("rescue %s", dump(en))
	}
	a := h.audit(r.RunID)
	if w := a.Steps["w"]; w.Spent.Dispatches != 1 || w.Status != StepFailed {
		t.Fatalf("w %s", dump(w))
	}
	if c2 := a.Steps["w"].Sub.Steps["c2"]; c2.Status != StepPending || c2.DispatchToken != "" {
		t.Fatalf("c2 was issued beyond the subflow budget: %s", dump(c2))
	}
	if a.FlowSpent.Dispatches != 2 { // c1 and rescue
		t.Fatalf("flow spent %s", dump(a.FlowSpent))
	}
}

// Revert: the waiting gate gets a new token (the old one is stale), spend
// reported after the commit stays spent, and a receipt stays idempotent
// across the revert and across processes.
func TestRevertGateTokenAndSpend(t *testing.T) {
	h := newHarness(t, Options{})
	r := h.plan(string(example(t, "full-gate.stratum.yaml")), map[string]any{"text": "t"})
	r = h.ok(r, "work", goodWork)
	old := h.gateToken(r.RunID, "review")
	if _, err := h.e.Commit(h.ctx, r.RunID, "gate"); err != nil {
		t.Fatal(err)
	}
	u, err := h.e.UsageReport(h.ctx, r.RunID, Receipt{DispatchID: "ext-1", StepID: "work", Source: "agent", Usage: js(map[string]any{"usd": 2.5}), USDSource: "reported"})
	if err != nil || u.Status != "ok" {
		t.Fatalf("receipt %s %v", dump(u), err)
	}
	spent := u.Ledger.Spent
	rv, err := h.e.Revert(h.ctx, r.RunID, "gate")
	if err != nil {
		t.Fatal(err)
	}
	if rv.Ledger.Spent != spent {
		t.Fatalf("spend after revert %s, before %s", dump(rv.Ledger.Spent), dump(spent))
	}
	if tok := h.gateToken(r.RunID, "review"); tok == old {
		t.Fatal("revert kept the gate token")
	}
	_, err = h.e.ResolveGate(h.ctx, GateRequest{RunID: r.RunID, StepID: "review", Decision: DecisionApprove, GateToken: old})
	wantCode(t, err, ErrStaleToken)
	dup, err := h.reopen(Options{}).UsageReport(h.ctx, r.RunID, Receipt{DispatchID: "ext-1", Source: "agent", Usage: js(map[string]any{"usd": 2.5}), USDSource: "reported"})
	if err != nil || dup.Status != "duplicate" || dup.Seq != u.Seq || dup.Ledger.Spent != spent {
		t.Fatalf("duplicate after revert in another process %s %v", dump(dup), err)
	}
	r = h.resolve(r.RunID, "review", DecisionApprove)
	wantStatus(t, r, StatusCompleted)
	if r.Ledger.Spent.USD != 2.5 {
		t.Fatalf("ledger %s", dump(r.Ledger))
	}
}

// Inside a fanout item, a judge's usage is also a fanout ledger debit
// (source judged), and its judged event names the item and stage; a stage
// `when` that cannot be evaluated skips the stage with the reason.
func TestFanoutItemJudgeAndStageWhen(t *testing.T) {
	stages := `            - do: "Inspect ${item}"
              out: V
              ensure:
                - judged: {statement: ok, stakes: default}
            - do: "Again ${item}"
              when: "prev.value.missing.deeper == 1"
              out: V`
	h := newHarness(t, Options{Judge: &wordJudge{}})
	r := h.plan(consumerSpec("any", stages), map[string]any{"items": []any{"a"}})
	r = h.ok(r, "fan/0", `{"value":"ok"}`)
	// The last stage was skipped, so the item is skipped: require any is
	// not met and the fanout routes to rescue.
	entry(t, r, "rescue")
	var debit, judged, skipped map[string]any
	for _, ev := range h.audit(r.RunID).Events {
		var d map[string]any
		_ = json.Unmarshal(ev.Detail, &d)
		switch {
		case ev.Type == "fanout_ledger_debit" && d["source"] == "judged":
			debit = d
		case ev.Type == "judged":
			judged = d
		case ev.Type == "fanout_item_skipped":
			skipped = d
		}
	}
	if debit == nil || dump(debit["amount"]) != `{"tokens":100,"usd":0.01}` || debit["itemIndex"] != 0.0 {
		t.Fatalf("judged fanout debit %s", dump(debit))
	}
	if judged == nil || judged["itemIndex"] != 0.0 || judged["stage"] != 0.0 {
		t.Fatalf("judged %s", dump(judged))
	}
	if skipped == nil || skipped["stage"] != 1.0 || !strings.Contains(fmtAny(skipped["reason"]), "prev.value.missing.deeper") {
		t.Fatalf("skipped %s", dump(skipped))
	}
}

func fmtAny(v any) string { s, _ := v.(string); return s }

// Failure reasons quote expressions as JSON strings (spec/engine.md 4.2),
// not as Go literals: control characters are \u escapes, other characters
// are kept.
func TestReasonQuotesJSON(t *testing.T) {
	for in, want := range map[string]string{
		"result.v == \"a\"": `"result.v == \"a\""`,
		"x\x01y":            `"x\u0001y"`,
		"x\u2028y\u200bz":   "\"x\u2028y\u200bz\"",
		"tab\there":         `"tab\there"`,
	} {
		if got := quote(in); got != want {
			t.Errorf("quote(%q) = %s, want %s", in, got, want)
		}
	}
}

// Decision 4 inside a subflow: the on_fail example's flow called by a run
// step completes on its failure path too (the reference leaves such a
// child stalled and the run running forever), and a killed child gate
// with a target skips the gate's successors in the child.
func TestChildScopeRoutingCompletes(t *testing.T) {
	spec := `
version: 1
contracts:
  TaskResult: {ok: boolean, details: string}
flows:
  entry: main
  build:
    input: {spec: string}
    output: {from: "${publish.output}", contract: TaskResult}
    steps:
      - {id: generate, do: "gen ${input.spec}", out: TaskResult, attempts: 1, on_fail: recover}
      - {id: verify, after: [generate], when: "result.generate.ok == true", do: verify, out: TaskResult}
      - {id: recover, do: recover, out: TaskResult}
      - {id: check, after: [verify, recover], gate: {on_approve: null, on_revise: null, on_kill: cleanup}}
      - {id: publish, after: [check], do: publish, out: TaskResult}
      - {id: cleanup, do: cleanup, out: TaskResult}
  main:
    input: {spec: string}
    output: {from: "${wrap.output}", contract: TaskResult}
    steps:
      - {id: wrap, run: build, with: {spec: "${input.spec}"}, on_fail: fallback}
      - {id: fallback, do: fallback, out: TaskResult}
`
	ok := `{"ok":true,"details":"d"}`
	t.Run("failure path and approve", func(t *testing.T) {
		h := newHarness(t, Options{})
		r := h.plan(spec, map[string]any{"spec": "s"})
		r = h.report(r, "wrap/generate", StepResult{Failure: "crashed"})
		r = h.ok(r, "wrap/recover", ok)
		if st := h.stepState(r.RunID, "wrap/verify"); st.Status != StepSkipped || st.Skip.Source != "generate" {
			t.Fatalf("verify %s", dump(st))
		}
		r = h.resolve(r.RunID, "wrap/check", DecisionApprove)
		r = h.ok(r, "wrap/publish", ok)
		wantStatus(t, r, StatusCompleted)
		if st := h.stepState(r.RunID, "wrap/cleanup"); st.Status != StepSkipped || !strings.Contains(st.Skip.Reason, "route target was never chosen") {
			t.Fatalf("cleanup %s", dump(st))
		}
	})
	t.Run("kill with a target", func(t *testing.T) {
		h := newHarness(t, Options{})
		r := h.plan(spec, map[string]any{"spec": "s"})
		r = h.ok(r, "wrap/generate", ok)
		r = h.ok(r, "wrap/verify", ok)
		r = h.resolve(r.RunID, "wrap/check", DecisionKill)
		if ids := readyIDs(r); len(ids) != 1 || ids[0] != "wrap/cleanup" {
			t.Fatalf("ready %v", ids)
		}
		r = h.ok(r, "wrap/cleanup", ok)
		// publish (the flow output's source) was skipped by the kill: the
		// subflow cannot produce its output, so the run step fails and
		// routes to fallback — nothing waits forever.
		en := entry(t, r, "fallback")
		if !strings.Contains(en.PreviousFailure.Reason, "flow output ${publish.output} is unavailable") {
			t.Fatalf("fallback %s", dump(en))
		}
		r = h.ok(r, "fallback", ok)
		wantFailure(t, r, StatusFailed, "flow output ${wrap.output} is unavailable")
	})
}

// With decision 4 a consistent run never dead-ends, so the last line of
// defence is exercised on a state no scheduler path produces (a step in a
// status the scheduler does not know): the scope fails with the precise
// reason instead of answering running forever, in the root and in a child.
func TestDeadEndFailsPrecisely(t *testing.T) {
	h := newHarness(t, Options{})
	h.e.verifyWrites = false
	r := h.plan(twoSteps, map[string]any{"x": "X"})
	t1, err := h.e.mutate(h.ctx, r.RunID, func(t *txn) error {
		t.rootScope().state(t.c.plan.EntryFlow().Step("a")).Status = "limbo"
		t.advance()
		t.result = t.response()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	wantFailure(t, t1.result, StatusFailed, `no runnable steps remain: "b" waits on "a" (limbo)`)

	r = h.plan(childGate, map[string]any{"x": "X"})
	t2, err := h.e.mutate(h.ctx, r.RunID, func(t *txn) error {
		root := t.rootScope()
		child := t.childScope(root, root.flow.Step("wrap"))
		child.state(child.flow.Step("draft")).Status = "limbo"
		t.advance()
		t.result = t.response()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	wantFailure(t, t2.result, StatusFailed, `subflow "sub": no runnable steps remain: "wrap/check" waits on "draft" (limbo)`)
}

// A state document that decodes but does not fit the run's plan (damaged
// or edited by hand) is reported as corrupt, never a panic.
func TestCorruptStateDocument(t *testing.T) {
	h := newHarness(t, Options{})
	h.e.verifyWrites = false
	for _, tc := range []struct{ name, from, to string }{
		{"unknown flow", `"flowName":"main"`, `"flowName":"nope"`},
		{"null step", `"steps":{"a":{`, `"steps":{"b":null,"a":{`},
		{"item stage out of range", `"steps":{"a":{`, `"steps":{"b":{"status":"running","attempts":[],"spent":{},"fanout":{"over":[1],"items":[{"index":0,"status":"ready","generation":1,"stage":7,"attempts":[]}]}},"a":{`},
		{"subflow on a do step", `"steps":{"a":{`, `"steps":{"b":{"status":"running","attempts":[],"spent":{},"sub":{"input":{},"steps":{"x":null}}},"a":{`},
		{"control: untouched", `"steps":{"a":{`, `"steps":{"a":{`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := h.plan(twoSteps, map[string]any{"x": "X"})
			snap, err := h.store.Load(h.ctx, r.RunID)
			if err != nil {
				t.Fatal(err)
			}
			bad := strings.Replace(string(snap.State), tc.from, tc.to, 1)
			if bad == string(snap.State) && tc.from != tc.to {
				t.Fatalf("no %s in %s", tc.from, snap.State)
			}
			if _, err := h.store.Update(h.ctx, r.RunID, func(*store.Snapshot) (*store.Change, error) {
				return &store.Change{State: []byte(bad)}, nil
			}); err != nil {
				t.Fatal(err)
			}
			for _, e := range []*Engine{h.e, h.reopen(Options{})} {
				if tc.from == tc.to {
					if _, err := e.Audit(h.ctx, r.RunID); err != nil {
						t.Fatal(err)
					}
					continue
				}
				_, err = e.StepDone(h.ctx, StepDoneRequest{RunID: r.RunID, StepID: "a", DispatchToken: entry(t, r, "a").DispatchToken,
					Result: StepResult{Output: json.RawMessage(`{"v":"A"}`)}})
				wantCode(t, err, ErrCorrupt)
				_, err = e.Audit(h.ctx, r.RunID)
				wantCode(t, err, ErrCorrupt)
				_, err = e.Status(h.ctx, r.RunID)
				wantCode(t, err, ErrCorrupt)
			}
		})
	}
}

// A revise that resets a run step or a consumer fanout supersedes every
// issuance inside it: a late report for a child task or an item is
// stale_token (an earlier round), like one for a reset root step.
func TestStaleInsideResetSubflowAndFanout(t *testing.T) {
	h := newHarness(t, Options{})
	r := h.plan(reviseClosure, map[string]any{"items": []any{"i0"}, "flag": true})
	for _, id := range []string{"prep", "plan", "maybe", "side"} {
		r = h.ok(r, id, `{"v":"x"}`)
	}
	itemTok := entry(t, r, "fan/0").DispatchToken
	childTok := entry(t, r, "w/c").DispatchToken
	r = h.ok(r, "fan/0", `{"v":"f"}`)
	r = h.ok(r, "w/c", `{"v":"c"}`)
	r = h.resolve(r.RunID, "review", DecisionRevise)
	for id, tok := range map[string]string{"fan/0": itemTok, "w/c": childTok} {
		_, err := h.e.StepDone(h.ctx, StepDoneRequest{RunID: r.RunID, StepID: id, DispatchToken: tok, Result: StepResult{Output: json.RawMessage(`{"v":"late"}`)}})
		e := wantCode(t, err, ErrStaleToken)
		if e.State == nil || e.State.Status != StatusReady {
			t.Fatalf("%s: refusal %s", id, dump(e.State))
		}
	}
	// A step id that never existed is still not awaiting.
	_, err := h.e.StepDone(h.ctx, StepDoneRequest{RunID: r.RunID, StepID: "w/zz", DispatchToken: "t"})
	wantCode(t, err, ErrNotAwaiting)
}

// A carry whose initial source succeeded without the value fails the run
// (carry_initial_unresolved), with no partial write.
func TestCarryInitialUnresolved(t *testing.T) {
	spec := strings.Replace(carrySpec, "Plan: {wave: string}", `Plan: {wave: "string?", other: "string?"}`, 1)
	spec = strings.Replace(spec, `    carry:
      wave:`, `    carry:
      other:
        initial: "${plan.output.other}"
      wave:`, 1)
	spec = strings.Replace(spec, `do: "work on ${wave}"`, `do: "work on ${wave} ${other}"`, 1)
	h := newHarness(t, Options{})
	r := h.plan(spec, map[string]any{"goal": "g"})
	r = h.ok(r, "plan", `{"other":"o"}`)
	wantFailure(t, r, StatusFailed, `carry_initial_unresolved: carry "wave": ${plan.output.wave} resolves to nothing`)
	if a := h.audit(r.RunID); len(a.Carry) != 0 {
		t.Fatalf("partial carry write %s", dump(a.Carry))
	}
}

// An engine fanout item whose agent is still running when the run is
// cancelled: its late result is abandoned (nothing recorded), and no
// further item is dispatched.
func TestEngineFanoutCancelInFlight(t *testing.T) {
	spec := strings.Replace(strings.Replace(consumerSpec("all", `            - do: "Inspect ${item}"
              out: V`), "dispatch: consumer", "dispatch: engine", 1), "concurrency: 2", "concurrency: 1", 1)
	d := &procDispatcher{script: `read task; while [ ! -f release ]; do sleep 0.02; done; printf '{"value":"%s"}' "$task"`}
	h := newHarness(t, Options{Dispatcher: d})
	r := h.plan(spec, map[string]any{"items": []any{"a", "b"}})
	h.waitFor(h.e, r.RunID, func(*Response) bool {
		return h.stepState(r.RunID, "fan").Fanout.Items[0].Status == StepRunning
	})
	if _, err := h.e.Cancel(h.ctx, r.RunID, "stop"); err != nil {
		t.Fatal(err)
	}
	before := h.audit(r.RunID)
	if err := os.WriteFile(filepath.Join(h.ws, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(h.ctx, 20*time.Second)
	defer cancel()
	if err := h.e.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	after := h.audit(r.RunID)
	if len(after.Events) != len(before.Events) || dump(after.Steps) != dump(before.Steps) {
		t.Fatalf("a result after the cancel was recorded:\n%s\n%s", dump(before.Steps["fan"]), dump(after.Steps["fan"]))
	}
	if n := d.calls.Load(); n != 1 {
		t.Fatalf("dispatches %d after the cancel", n)
	}
}

// A revise that resets an engine fanout while its agent is running: the
// late result belongs to the earlier round and is abandoned; the fanout
// runs again in the new round.
func TestEngineFanoutReviseInFlight(t *testing.T) {
	spec := `
version: 1
contracts:
  V: {value: string}
flows:
  entry: main
  main:
    input:
      items: string[]
    output: {from: "${plan.output}", contract: V}
    max_rounds: 1
    steps:
      - {id: plan, do: plan, out: V}
      - id: fan
        after: [plan]
        fanout:
          over: "${input.items}"
          concurrency: 1
          isolation: none
          require: all
          merge: sequential
          steps:
            - {do: "Inspect ${item} after ${plan.output.value}", out: V}
      - id: review
        after: [plan]
        gate: {on_approve: null, on_revise: plan, on_kill: null}
`
	d := &procDispatcher{script: `read task; while [ ! -f release ]; do sleep 0.02; done; printf '{"value":"%s"}' "$task"`}
	h := newHarness(t, Options{Dispatcher: d})
	r := h.plan(spec, map[string]any{"items": []any{"a"}})
	r = h.ok(r, "plan", `{"value":"p1"}`)
	h.waitFor(h.e, r.RunID, func(*Response) bool {
		return h.stepState(r.RunID, "fan").Fanout.Items[0].Status == StepRunning
	})
	r = h.resolve(r.RunID, "review", DecisionRevise)
	if err := os.WriteFile(filepath.Join(h.ws, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r = h.ok(r, "plan", `{"value":"p2"}`)
	r = h.waitFor(h.e, r.RunID, notFanoutWaiting)
	r = h.resolve(r.RunID, "review", DecisionApprove)
	wantStatus(t, r, StatusCompleted)
	fan := h.stepState(r.RunID, "fan")
	if got := jsonOf(t, fan.Output.Data); got != `[{"value":"Inspect a after p2"}]` || len(fan.Fanout.Items[0].Attempts) != 1 || fan.Epoch != 1 {
		t.Fatalf("fan %s", dump(fan))
	}
	if n := countPrefix(h.eventTypes(r.RunID), "fanout_attempt_result"); n != 1 {
		t.Fatalf("%d attempt results recorded, want only the new round's", n)
	}
}

// Values a Go caller hands over are copied: changing them after the call
// returns changes nothing in the run (spec/engine.md 1.2: the input is a
// deep copy; the same holds for outputs).
func TestCallerValuesCopied(t *testing.T) {
	h := newHarness(t, Options{})
	in := expr.NewObject(1)
	in.Set("x", "X")
	r := h.plan(twoSteps, in)
	out := expr.NewObject(1)
	out.Set("v", "A")
	r = h.report(r, "a", StepResult{Output: js(out)})
	in.Set("x", "changed")
	out.Set("v", "changed")
	r = h.ok(r, "b", `{"v":"B"}`) // verifyWrites compares memory with the store
	wantStatus(t, r, StatusCompleted)
	a := h.audit(r.RunID)
	if jsonOf(t, a.Input.Data) != `{"x":"X"}` || jsonOf(t, a.Steps["a"].Output.Data) != `{"v":"A"}` {
		t.Fatalf("input %s, a %s", jsonOf(t, a.Input.Data), jsonOf(t, a.Steps["a"].Output.Data))
	}
}

// At most MaxCheckpoints labels per run; reusing one is always allowed
// and keeps its position.
func TestCheckpointLimit(t *testing.T) {
	h := newHarness(t, Options{})
	r := h.plan(twoSteps, map[string]any{"x": "X"})
	for i := 0; i < MaxCheckpoints; i++ {
		if _, err := h.e.Commit(h.ctx, r.RunID, "cp"+itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	_, err := h.e.Commit(h.ctx, r.RunID, "one-more")
	wantCode(t, err, ErrInvalidLabel)
	c, err := h.e.Commit(h.ctx, r.RunID, "cp0")
	if err != nil || len(c.Checkpoints) != MaxCheckpoints || c.Checkpoints[0] != "cp0" {
		t.Fatalf("reuse %v %v", err, c)
	}
}

// The run lock can be held longer than the store's lock timeout by
// another transition (an evaluate command, a judge call). An engine
// fanout's transitions must wait it out, not stop driving: otherwise the
// fanout stays running and the run never finishes.
func TestEngineFanoutOutlastsLockTimeout(t *testing.T) {
	spec := strings.Replace(strings.Replace(consumerSpec("all", `            - do: "Inspect ${item}"
              out: V`), "dispatch: consumer", "dispatch: engine", 1), "concurrency: 2", "concurrency: 1", 1)
	d := &procDispatcher{script: `read task; while [ ! -f release ]; do sleep 0.02; done; printf '{"value":"%s"}' "$task"`}
	h := newFileHarness(t, Options{Dispatcher: d})
	fs, err := store.NewFileStore(h.files.Root(), &store.Options{LockTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	e := New(fs, Options{Dispatcher: d, Workspace: WorkspacePolicy{Default: h.ws}})
	t.Cleanup(e.Close)
	r, err := e.Plan(h.ctx, PlanRequest{Spec: []byte(spec), Input: js(map[string]any{"items": []any{"a", "b"}})})
	if err != nil {
		t.Fatal(err)
	}
	h.waitFor(e, r.RunID, func(*Response) bool {
		return h.stepState(r.RunID, "fan").Fanout.Items[0].Status == StepRunning
	})
	held, release := make(chan struct{}), make(chan struct{})
	go func() {
		_, _ = h.store.Update(context.Background(), r.RunID, func(*store.Snapshot) (*store.Change, error) {
			close(held)
			<-release
			return nil, nil
		})
	}()
	<-held
	if err := os.WriteFile(filepath.Join(h.ws, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(600 * time.Millisecond) // the item's result waits on the lock past the timeout
	close(release)
	r = h.waitFor(e, r.RunID, notFanoutWaiting)
	if en := entry(t, r, "after"); en.Do != `after [{"value":"Inspect a"},{"value":"Inspect b"}]` {
		t.Fatalf("after %s", dump(r))
	}
}
