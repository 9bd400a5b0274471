package engine

// Subflows and child scopes: issuances die with their subflow, routing and dead ends inside a child scope, stale tokens after a reset.

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

// Routing that completes (docs/engine.md, "Scheduling") inside a subflow:
// the on_fail example's flow called by a run
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

// With routing that completes (docs/engine.md, "Scheduling") a consistent
// run never dead-ends, so the last line of
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
