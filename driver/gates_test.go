package driver

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
)

// gateResolutions are the gate_resolved details of a run, oldest first.
func gateResolutions(t *testing.T, e *engine.Engine, runID string) []engine.GateResolvedDetail {
	t.Helper()
	a, err := e.Audit(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	var out []engine.GateResolvedDetail
	for _, ev := range a.Events {
		if ev.Type == engine.EventGateResolved {
			var d engine.GateResolvedDetail
			if err := ev.DecodeDetail(&d); err != nil {
				t.Fatal(err)
			}
			out = append(out, d)
		}
	}
	return out
}

// The note and the decider an AskGate returns are recorded with the
// decision; automatic decisions are recorded as the system's.
func TestDriveRecordsWhoDecidedAndWhy(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		opts Options
		want []engine.GateResolvedDetail
	}{
		{"ask", Options{Gates: GateAsk, AskGate: func() func(context.Context, engine.GateView) (GateAnswer, error) {
			n := 0
			return func(context.Context, engine.GateView) (GateAnswer, error) {
				n++
				if n == 1 {
					return GateAnswer{Decision: engine.DecisionRevise, Note: "keep non-ASCII letters", ResolvedBy: "alice"}, nil
				}
				return GateAnswer{Decision: engine.DecisionApprove, ResolvedBy: "alice"}, nil
			}
		}()}, []engine.GateResolvedDetail{
			{Decision: engine.DecisionRevise, Rationale: "keep non-ASCII letters", ResolvedBy: "alice"},
			{Decision: engine.DecisionApprove, ResolvedBy: "alice"},
		}},
		{"approve", Options{Gates: GateApprove}, []engine.GateResolvedDetail{
			{Decision: engine.DecisionApprove, Rationale: "decided automatically (gate mode approve)", ResolvedBy: ResolvedBySystem},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			tt.opts.Agent = okAgent(t)
			d, e := f.driver(tt.opts)
			out, err := d.Start(ctx, e, engine.PlanRequest{Spec: []byte(gateSpec), Input: js(map[string]any{})})
			if err != nil || out.Response.Status != engine.StatusCompleted {
				t.Fatalf("%v %+v", err, out)
			}
			got := gateResolutions(t, e, out.RunID)
			for i := range got {
				got[i].Target, got[i].Digest = nil, ""
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("gate_resolved %+v, want %+v", got, tt.want)
			}
		})
	}
}

// In GateWait mode each waiting gate round is announced once, with its
// token, so that a person can decide it elsewhere.
func TestDriveAnnouncesWaitingGates(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	other := engine.New(f.store, engine.Options{}) // another process
	defer other.Close()
	var announced []engine.WaitingGate
	decide := func(g engine.WaitingGate) {
		announced = append(announced, g)
		decision := engine.DecisionRevise
		if len(announced) > 1 {
			decision = engine.DecisionApprove
		}
		if _, err := other.ResolveGate(ctx, engine.GateRequest{RunID: g.RunID, StepID: g.StepID, Decision: decision, GateToken: g.GateToken}); err != nil {
			t.Error(err)
		}
	}
	d, e := f.driver(Options{Agent: okAgent(t), Gates: GateWait, GateWaiting: decide, PollInterval: 5 * time.Millisecond})
	out, err := d.Start(ctx, e, engine.PlanRequest{Spec: []byte(gateSpec), Input: js(map[string]any{})})
	if err != nil || out.Response.Status != engine.StatusCompleted {
		t.Fatalf("%v %+v", err, out)
	}
	if len(announced) != 2 || announced[0].StepID != "review" || announced[0].GateToken == announced[1].GateToken || announced[1].Round != 1 {
		t.Errorf("announced %+v, want both rounds of review once each", announced)
	}
}

// Resuming a run that has finished returns its final state and records
// nothing.
func TestResumeFinishedRunRecordsNothing(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	d, e := f.driver(Options{Agent: okAgent(t), Gates: GateApprove})
	out, err := d.Start(ctx, e, engine.PlanRequest{Spec: []byte(gateSpec), Input: js(map[string]any{})})
	if err != nil || out.Response.Status != engine.StatusCompleted {
		t.Fatalf("%v %+v", err, out)
	}
	before, err := e.Audit(ctx, out.RunID)
	if err != nil {
		t.Fatal(err)
	}
	again, err := d.Resume(ctx, e, out.RunID)
	if err != nil || again.Response.Status != engine.StatusCompleted || !again.Finished() {
		t.Fatalf("resume: %v %+v", err, again)
	}
	if b, _ := again.Response.Output.MarshalJSON(); string(b) != `{"v":"ok"}` {
		t.Errorf("output %s", b)
	}
	after, err := e.Audit(ctx, out.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if len(after.Events) != len(before.Events) {
		t.Errorf("resume recorded %d events (last %s)", len(after.Events)-len(before.Events), after.Events[len(after.Events)-1].Type)
	}
}

// AskGate is shown the gate's view (the task and output under review, the
// digest recorded when the round began), and the decision is recorded
// with that digest.
func TestDriveAsksWithTheGateView(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	var shown []engine.GateView
	ask := func(_ context.Context, g engine.GateView) (GateAnswer, error) {
		shown = append(shown, g)
		return GateAnswer{Decision: engine.DecisionApprove, ResolvedBy: "alice"}, nil
	}
	d, e := f.driver(Options{Agent: okAgent(t), Gates: GateAsk, AskGate: ask})
	out, err := d.Start(ctx, e, engine.PlanRequest{Spec: []byte(gateSpec), Input: js(map[string]any{})})
	if err != nil || out.Response.Status != engine.StatusCompleted {
		t.Fatalf("%v %+v", err, out)
	}
	if len(shown) != 1 || len(shown[0].UnderReview) != 1 {
		t.Fatalf("shown %+v", shown)
	}
	g, r := shown[0], shown[0].UnderReview[0]
	if b, _ := r.Output.MarshalJSON(); r.StepID != "work" || r.Task != "work" || string(b) != `{"v":"ok"}` || g.Digest == "" {
		t.Errorf("view %+v, under review %+v (output %s)", g, r, b)
	}
	if got := gateResolutions(t, e, out.RunID); len(got) != 1 || got[0].Digest != g.Digest {
		t.Errorf("gate_resolved %+v, want the digest shown %s", got, g.Digest)
	}
}
