package engine

// Routes, revise closures, reverts, carry and checkpoints.

import (
	"encoding/json"
	"strings"
	"testing"
)

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
