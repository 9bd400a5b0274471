package engine

// Fanouts while their work is in flight: cancel, revise, a judge per item, a lock held past its timeout; cancel burning every token.

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stratum-go/stratum/store"
)

// Cancel burns every outstanding issuance: a root task, a waiting gate
// inside a subflow, a consumer item; every later report or decision is
// refused and changes nothing.
func TestCancelBurnsEveryToken(t *testing.T) {
	h := newHarness(t, Options{})
	r := h.plan(childAndFanout, map[string]any{"items": []any{"i0", "i1"}})
	// Ready order (docs/engine.md, "Responses"): root tasks, subflow tasks, items.
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
