package engine

import (
	"encoding/json"
	"strings"
	"testing"
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
		Result: StepResult{Output: json.RawMessage(`{"v":"late"}`), Usage: map[string]any{"tokens": 5}}})
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
			StepResult{Output: json.RawMessage(`{"v":1}`), Usage: map[string]any{"tokens": 1.7e308}},
			StepResult{Output: json.RawMessage(`{"v":2}`), Usage: map[string]any{"tokens": 1.7e308}},
			"invalid usage ledger entry"},
		{"deep output", StepResult{Output: deep(9999)}, StepResult{Output: deep(10000)}, "nested deeper than"},
		{"deep telemetry", StepResult{Output: json.RawMessage(`{"v":"x"}`), Telemetry: json.RawMessage(`{"model":` + string(deep(9999)) + `,"durationMs":1}`)},
			StepResult{Output: json.RawMessage(`{"v":"x"}`), Telemetry: map[string]any{"model": "m", "durationMs": 1, "effort": []any{[]any{}}}}, "invalid connector telemetry"},
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
	r = h.report(r, "a", StepResult{Output: map[string]any{"v": "x\xff"}, Telemetry: map[string]any{"model": "m\xff", "durationMs": 1}})
	if st := h.stepState(r.RunID, "a"); jsonOf(t, st.Output.Data) != "{\"v\":\"x\ufffd\"}" || st.Attempts[1].Model != "m\ufffd" {
		t.Fatalf("a %s", dump(st))
	}
	a1 := h.audit(r.RunID)
	a2, err := h.reopen(Options{}).Audit(h.ctx, r.RunID)
	if err != nil || dump(a1) != dump(a2) {
		t.Fatalf("processes disagree: %v\n%s\n%s", err, dump(a1.Steps), dump(a2.Steps))
	}
	_, err = h.e.UsageReport(h.ctx, r.RunID, Receipt{DispatchID: "d\xff", Source: "s", Usage: map[string]any{"tokens": 1}})
	wantCode(t, err, ErrInvalidReceipt)
	_, err = h.e.Commit(h.ctx, r.RunID, "l\xff")
	wantCode(t, err, ErrInvalidLabel)

	cmd := `printf 'broken \377 stderr' >&2; exit 1`
	r = h.plan(evaluateSpec(cmd, 5000), map[string]any{"n": 1})
	wantFailure(t, r, StatusFailed, "broken \ufffd stderr")
}
