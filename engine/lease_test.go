package engine

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

const bgSpec = `version: 1
contracts:
  Out: {v: integer}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${b.output}", contract: Out}
    steps:
      - id: a
        do: "first"
        out: Out
      - id: review
        after: [a]
        gate: {on_approve: null, on_revise: null, on_kill: null}
      - id: b
        after: [review]
        do: "second"
        out: Out
`

// planBackground plans bgSpec in the background on h's engine.
func (h *harness) planBackground(spec string) *Response {
	h.t.Helper()
	r, err := h.e.Plan(h.ctx, PlanRequest{Spec: []byte(spec), Input: js(map[string]any{}), Background: true})
	if err != nil {
		h.t.Fatalf("plan background: %v", err)
	}
	return r
}

// hold takes the run's lease on e.
func hold(t *testing.T, e *Engine, runID string) *Hold {
	t.Helper()
	hd, err := e.Hold(context.Background(), runID)
	if err != nil {
		t.Fatalf("hold: %v", err)
	}
	t.Cleanup(hd.Release)
	return hd
}

// TestBackgroundDrivenOnlyByItsHolder: a background run is reported only
// by the driver of the process holding its lease; every other caller,
// in another process or in the same one, is refused naming the holder,
// and a person's gate decision and a cancel are not refused.
func TestBackgroundDrivenOnlyByItsHolder(t *testing.T) {
	h := newHarness(t, Options{LeaseOwner: "server-a", LeaseTTL: time.Minute})
	r := h.planBackground(bgSpec)
	run := r.RunID
	a := entry(t, r, "a")
	done := StepDoneRequest{RunID: run, StepID: "a", DispatchToken: a.DispatchToken, Result: StepResult{Output: js(map[string]any{"v": 1})}}

	// Nobody holds it: nobody drives it.
	_, err := h.e.StepDone(h.ctx, done)
	if e := wantCode(t, err, ErrRunLeased); e.Holder != "" || !strings.Contains(e.Message, "none holds it") {
		t.Errorf("unheld: %+v", e)
	}
	_, err = h.e.TakeOver(AsDriver(h.ctx), run)
	wantCode(t, err, ErrRunLeased)

	hold(t, h.e, run)
	other := h.reopen(Options{LeaseOwner: "server-b", LeaseTTL: time.Minute})
	for name, call := range map[string]func() error{
		"step_done (other process)": func() error { _, err := other.StepDone(AsDriver(h.ctx), done); return err },
		"resume (other process)":    func() error { _, err := other.Resume(AsDriver(h.ctx), run); return err },
		"commit (other process)":    func() error { _, err := other.Commit(AsDriver(h.ctx), run, "x"); return err },
		"step_done (a client here)": func() error { _, err := h.e.StepDone(h.ctx, done); return err },
		"attempt start (here)":      func() error { return h.e.AttemptStarted(h.ctx, run, "a", a.DispatchToken, "me") },
	} {
		e := wantCode(t, call(), ErrRunLeased)
		if e.Holder != "server-a" {
			t.Errorf("%s: holder %q", name, e.Holder)
		}
	}
	if _, err := other.Hold(h.ctx, run); !errors.Is(err, ErrRunLeased) {
		t.Errorf("a second holder: %v", err)
	}

	resp, err := h.e.TakeOver(AsDriver(h.ctx), run)
	if err != nil {
		t.Fatal(err)
	}
	resp, err = h.e.StepDone(AsDriver(h.ctx), StepDoneRequest{RunID: run, StepID: "a", DispatchToken: entry(t, resp, "a").DispatchToken,
		Result: StepResult{Output: js(map[string]any{"v": 1})}})
	if err != nil {
		t.Fatalf("the holder's driver: %v", err)
	}
	wantStatus(t, resp, StatusRunning)
	p, err := other.PollBackground(h.ctx, run, 0)
	if err != nil {
		t.Fatal(err)
	}
	if p.Bg.Status != BgPausedGate || p.Bg.GateStepID != "review" || p.Bg.Driver != "server-a" || len(p.Events) == 0 {
		t.Errorf("paused view from another process: %s", dump(p))
	}
	// A person decides the gate from another process.
	gv, err := other.GateViews(h.ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.ResolveGate(h.ctx, GateRequest{RunID: run, StepID: "review", Decision: DecisionApprove, GateToken: gv[0].GateToken, Digest: gv[0].Digest}); err != nil {
		t.Fatalf("gate decision from another process: %v", err)
	}
	if p, _ = other.PollBackground(h.ctx, run, 0); p.Bg.Status != BgRunning || len(p.Bg.PendingGates) != 0 {
		t.Errorf("after the decision: %s", dump(p.Bg))
	}
	// And cancels it.
	c, err := other.CancelBackground(h.ctx, run, "enough")
	if err != nil || c.Status != StatusCancelled {
		t.Fatalf("cancel from another process: %v %v", c, err)
	}
	if p, _ = other.PollBackground(h.ctx, run, 0); p.Bg.Status != BgCancelled || p.Status != StatusCancelled {
		t.Errorf("after the cancel: %s", dump(p))
	}
}

// TestTakeOverRecordsEachNewLease: driver_acquired is recorded when a
// lease is new to the run, naming the previous driver, not on every take
// over by the same holder.
func TestTakeOverRecordsEachNewLease(t *testing.T) {
	h := newHarness(t, Options{LeaseOwner: "a", LeaseTTL: 50 * time.Millisecond})
	run := h.planBackground(bgSpec).RunID
	ha := hold(t, h.e, run)
	for range 2 {
		if _, err := h.e.TakeOver(AsDriver(h.ctx), run); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.e.DriverHalted(h.ctx, run, "claude cannot run: not logged in"); err != nil {
		t.Fatal(err)
	}
	if p, _ := h.e.PollBackground(h.ctx, run, 0); p.Bg.Status != BgHalted || !strings.Contains(p.Bg.Halted, "not logged in") {
		t.Errorf("halted view: %s", dump(p.Bg))
	}
	ha.Release()
	b := h.reopen(Options{LeaseOwner: "b", LeaseTTL: time.Minute})
	hold(t, b, run)
	resp, err := b.TakeOver(AsDriver(h.ctx), run)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, resp, StatusReady)
	var got []DriverDetail
	for _, ev := range h.audit(run).Events {
		if ev.Type == EventDriverAcquired {
			var d DriverDetail
			if err := ev.DecodeDetail(&d); err != nil {
				t.Fatal(err)
			}
			got = append(got, d)
		}
	}
	if len(got) != 2 || got[0].Owner != "a" || got[0].Previous != "" || got[1].Owner != "b" || got[1].Previous != "a" || got[1].Epoch <= got[0].Epoch {
		t.Errorf("driver_acquired events: %+v", got)
	}
	if p, _ := b.PollBackground(h.ctx, run, 0); p.Bg.Status != BgRunning || p.Bg.Halted != "" {
		t.Errorf("a take-over clears the halt: %s", dump(p.Bg))
	}
}

// TestHoldLostWhenNotRenewed: a holder whose lease another process took
// (it could not renew in time) sees Lost; shares of one process are one
// lease, released with the last.
func TestHoldLostWhenNotRenewed(t *testing.T) {
	h := newHarness(t, Options{LeaseOwner: "a", LeaseTTL: time.Hour})
	run := h.planBackground(bgSpec).RunID
	h1 := hold(t, h.e, run)
	h2 := hold(t, h.e, run)
	h1.Release()
	if !h2.Valid() {
		t.Fatal("a share released the other's lease")
	}
	if snap, _ := h.store.Load(h.ctx, run); snap.Lease == nil || snap.Lease.Owner != "a" {
		t.Fatalf("lease after one release: %+v", snap.Lease)
	}
	h2.Release()
	if snap, _ := h.store.Load(h.ctx, run); snap.Lease != nil {
		t.Fatalf("lease after the last release: %+v", snap.Lease)
	}

	// A lease the store gave to another owner (here: released behind the
	// holder's back, then granted) is lost at the next renewal: effects
	// stop and Lost is closed.
	short := h.reopen(Options{LeaseOwner: "c", LeaseTTL: 30 * time.Millisecond})
	hc := hold(t, short, run)
	if err := h.store.ReleaseLease(h.ctx, run, hc.Lease()); err != nil {
		t.Fatal(err)
	}
	if _, err := h.store.AcquireLease(h.ctx, run, "d", time.Hour); err != nil {
		t.Fatal(err)
	}
	<-hc.Lost()
	if hc.Valid() {
		t.Error("a lost lease is still valid")
	}
	if _, err := short.TakeOver(AsDriver(h.ctx), run); !errors.Is(err, ErrRunLeased) {
		t.Errorf("take over after the lease was lost: %v", err)
	}
}

// TestBackgroundRefusesConsumerFanouts: a consumer fanout cannot run in
// the background; the refusal names the fanout and the way out, and
// nothing is created.
func TestBackgroundRefusesConsumerFanouts(t *testing.T) {
	h := newHarness(t, Options{})
	spec := `version: 1
contracts:
  C: {ok: boolean}
flows:
  entry: main
  main:
    input: {items: "integer[]"}
    output: {from: "${fan.output[0]}", contract: C}
    steps:
      - id: fan
        fanout:
          over: '${input.items}'
          dispatch: consumer
          concurrency: 1
          isolation: none
          require: all
          merge: sequential
          steps:
            - do: "check ${item}"
              out: C
`
	_, err := h.e.Plan(h.ctx, PlanRequest{Spec: []byte(spec), Input: js(map[string]any{"items": []int{1, 2}}), Background: true})
	e := wantCode(t, err, ErrBackgroundUnsupported)
	if e.Code() != "consumer_dispatch_bg_unsupported" || len(e.Details) != 1 || e.Details[0].Path != "flows.main.steps[0].fanout.dispatch" ||
		!strings.Contains(e.Message, "stratum_plan") || !strings.Contains(e.Message, "dispatch: engine") {
		t.Errorf("refusal: %+v", e)
	}
	if runs, _ := h.store.List(h.ctx); len(runs) != 0 {
		t.Errorf("a refused plan created %d runs", len(runs))
	}
	if _, err := h.e.PollBackground(h.ctx, h.plan(bgSpec, map[string]any{}).RunID, 0); !errors.Is(err, ErrNotBackground) {
		t.Errorf("bg poll of a foreground run: %v", err)
	}
}

// TestPollBackgroundPages: a background poll returns at most
// MaxPollEvents events and a cursor to continue from.
func TestPollBackgroundPages(t *testing.T) {
	h := newHarness(t, Options{LeaseOwner: "a"})
	var b strings.Builder
	b.WriteString("version: 1\ncontracts:\n  O: {v: integer}\nflows:\n  entry: main\n  main:\n    input: {}\n    output: {from: \"${s79.output}\", contract: O}\n    steps:\n")
	for i := range 80 {
		b.WriteString("      - id: s" + itoa(i) + "\n        set: {v: \"1\"}\n        out: O\n")
	}
	run := h.planBackground(b.String()).RunID
	var all []Event
	cursor := int64(0)
	for pages := 0; ; pages++ {
		p, err := h.e.PollBackground(h.ctx, run, cursor)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Events) > MaxPollEvents {
			t.Fatalf("%d events in one poll", len(p.Events))
		}
		all = append(all, p.Events...)
		cursor = p.NextCursor
		if !p.MoreEvents {
			if p.Status != StatusCompleted || p.Bg.Status != BgCompleted || pages == 0 {
				t.Errorf("last page %d: %s", pages, dump(p.Bg))
			}
			break
		}
	}
	a := h.audit(run)
	if len(all) != len(a.Events) {
		t.Errorf("paged %d events, the audit has %d", len(all), len(a.Events))
	}
	for i := range all {
		if all[i].Seq != a.Events[i].Seq {
			t.Fatalf("event %d: seq %d, audit %d", i, all[i].Seq, a.Events[i].Seq)
		}
	}
	raw, _ := json.Marshal(all[len(all)-1])
	if !strings.Contains(string(raw), `"completed"`) {
		t.Errorf("last event %s", raw)
	}
}

// TestBackgroundUnclaimedUntilHeld: a background run just planned is
// unclaimed (a supervisor leaves it to the server that started it, for a
// lease ttl from its planning) until some process holds its lease.
func TestBackgroundUnclaimedUntilHeld(t *testing.T) {
	h := newHarness(t, Options{LeaseOwner: "server-a", LeaseTTL: time.Minute})
	r := h.planBackground(bgSpec)
	info, err := h.e.BackgroundInfo(h.ctx, r.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if !info.Unclaimed || info.Since.IsZero() {
		t.Fatalf("just planned: unclaimed %v since %v", info.Unclaimed, info.Since)
	}
	hd := hold(t, h.e, r.RunID)
	if info, err = h.e.BackgroundInfo(h.ctx, r.RunID); err != nil || info.Unclaimed {
		t.Fatalf("held: unclaimed %v (%v)", info.Unclaimed, err)
	}
	hd.Release()
}
