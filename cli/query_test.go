package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/internal/pgtest"
	"github.com/stratum-go/stratum/store"
	"github.com/stratum-go/stratum/store/postgres"
)

// querySpec has a do step, a gate and a run step whose subflow has a gate:
// enough to put runs in every state a listing shows.
const querySpec = `version: 1
contracts:
  V: {v: string}
flows:
  entry: main
  sub:
    input: {}
    output: {from: "${inner.output}", contract: V}
    steps:
      - {id: inner, do: "inner", out: V}
      - id: subgate
        gate: {on_approve: null, on_revise: null, on_kill: null}
        after: [inner]
  main:
    input: {}
    output: {from: "${last.output}", contract: V}
    steps:
      - {id: first, do: "first", out: V}
      - id: review
        gate: {on_approve: null, on_revise: null, on_kill: null}
        after: [first]
      - {id: nested, run: sub, with: {}, after: [review]}
      - {id: last, do: "last", out: V, after: [nested]}
`

// `stratum query flows` lists runs from their summaries; each entry must
// say what `stratum query flow RUN` (a full read of the run) says.
func TestQueryFlowsAgreesWithQueryFlow(t *testing.T) {
	home := t.TempDir()
	fs, err := store.NewFileStore(filepath.Join(home, "flows"), nil)
	if err != nil {
		t.Fatal(err)
	}
	queryFlowsAgree(t, fs, func(k string) string {
		if k == "STRATUM_HOME" {
			return home
		}
		return ""
	})
}

// TestQueryFlowsAgreesWithQueryFlowPostgres is the same on PostgreSQL,
// whose List is its own code (one statement decoded from the wire).
func TestQueryFlowsAgreesWithQueryFlowPostgres(t *testing.T) {
	dsn := pgtest.DSN(t)
	pg, err := postgres.Open(context.Background(), dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	home := t.TempDir()
	queryFlowsAgree(t, pg, func(k string) string {
		switch k {
		case "STRATUM_HOME":
			return home
		case "STRATUM_STORE":
			return dsn
		}
		return ""
	})
}

// queryFlowsAgree makes runs in every state in st and checks that each
// entry of `stratum query flows` (run with getenv, which names st) is what
// `stratum query flow RUN` says.
func queryFlowsAgree(t *testing.T, st store.Store, getenv func(string) string) {
	ctx := context.Background()
	e := engine.New(st, engine.Options{Workspace: engine.WorkspacePolicy{Default: t.TempDir()}})
	defer e.Close()
	plan := func() *engine.Response {
		r, err := e.Plan(ctx, engine.PlanRequest{Spec: []byte(querySpec), Input: json.RawMessage(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	done := func(r *engine.Response, id string) *engine.Response {
		for _, en := range r.Ready {
			if en.ID == id {
				r, err := e.StepDone(ctx, engine.StepDoneRequest{RunID: r.RunID, StepID: id, DispatchToken: en.DispatchToken,
					Result: engine.StepResult{Output: json.RawMessage(`{"v":"x"}`)}})
				if err != nil {
					t.Fatal(err)
				}
				return r
			}
		}
		t.Fatalf("%s is not ready: %+v", id, r.Ready)
		return nil
	}
	decide := func(r *engine.Response, gate string, d engine.Decision) *engine.Response {
		gates, err := e.ListGates(ctx, r.RunID)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range gates {
			if g.StepID == gate {
				r, err := e.ResolveGate(ctx, engine.GateRequest{RunID: r.RunID, StepID: gate, Decision: d, GateToken: g.GateToken, ResolvedBy: "human"})
				if err != nil {
					t.Fatal(err)
				}
				return r
			}
		}
		t.Fatalf("gate %s is not waiting: %+v", gate, gates)
		return nil
	}
	plan()                                                                                // at first
	done(plan(), "first")                                                                 // at the gate
	decide(done(plan(), "first"), "review", engine.DecisionKill)                          // killed
	done(decide(done(plan(), "first"), "review", engine.DecisionApprove), "nested/inner") // at the subflow's gate
	r := done(decide(done(decide(done(plan(), "first"), "review", engine.DecisionApprove), "nested/inner"), "nested/subgate", engine.DecisionApprove), "last")
	if r.Status != engine.StatusCompleted {
		t.Fatalf("run ended %s", r.Status)
	}
	c := plan()
	if _, err := e.Cancel(ctx, c.RunID, "test"); err != nil {
		t.Fatal(err)
	}

	env := func() (*Env, *bytes.Buffer, *bytes.Buffer) {
		var out, errb bytes.Buffer
		return &Env{Stdout: &out, Stderr: &errb, Getenv: getenv}, &out, &errb
	}
	en, out, errb := env()
	if code := run(ctx, en, []string{"query", "flows"}); code != 0 {
		t.Fatalf("query flows: exit %d: %s", code, errb)
	}
	var listed []flowSummary
	if err := json.Unmarshal(out.Bytes(), &listed); err != nil {
		t.Fatal(err)
	}
	if len(listed) != 6 {
		t.Fatalf("%d runs listed, want 6:\n%s", len(listed), out)
	}
	statuses := map[string]bool{}
	for _, l := range listed {
		en, out, errb := env()
		if code := run(ctx, en, []string{"query", "flow", l.FlowID}); code != 0 {
			t.Fatalf("query flow %s: exit %d: %s", l.FlowID, code, errb)
		}
		var d flowDetail
		if err := json.Unmarshal(out.Bytes(), &d); err != nil {
			t.Fatal(err)
		}
		a, _ := json.Marshal(l)
		b, _ := json.Marshal(d.flowSummary)
		if !bytes.Equal(a, b) {
			t.Errorf("run %s:\n listed %s\n read   %s", l.FlowID, a, b)
		}
		statuses[l.Status] = true
	}
	for _, want := range []string{"running", "awaiting_gate", "killed", "complete", "cancelled"} {
		if !statuses[want] {
			t.Errorf("no listed run is %s: %v", want, statuses)
		}
	}
}

// `stratum audit --json` streams the document: it must be the engine's
// audit (stratum_audit's answer) exactly, for runs in every state.
func TestAuditJSONStreamIsTheAudit(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	fs, err := store.NewFileStore(filepath.Join(home, "flows"), nil)
	if err != nil {
		t.Fatal(err)
	}
	e := engine.New(fs, engine.Options{Workspace: engine.WorkspacePolicy{Default: t.TempDir()}})
	defer e.Close()
	var ids []string
	for i := 0; i < 3; i++ {
		r, err := e.Plan(ctx, engine.PlanRequest{Spec: []byte(querySpec), Input: json.RawMessage(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.RunID)
		if i == 0 {
			continue
		}
		en := r.Ready[0]
		if r, err = e.StepDone(ctx, engine.StepDoneRequest{RunID: r.RunID, StepID: en.ID, DispatchToken: en.DispatchToken,
			Result: engine.StepResult{Output: json.RawMessage(`{"v":"<b>&x</b>"}`)}}); err != nil {
			t.Fatal(err)
		}
		if i == 2 {
			gates, _ := e.ListGates(ctx, r.RunID)
			if _, err := e.ResolveGate(ctx, engine.GateRequest{RunID: r.RunID, StepID: "review", Decision: engine.DecisionApprove, GateToken: gates[0].GateToken, ResolvedBy: "human"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, id := range ids {
		var out, errb bytes.Buffer
		en := &Env{Stdout: &out, Stderr: &errb, Getenv: func(k string) string {
			if k == "STRATUM_HOME" {
				return home
			}
			return ""
		}}
		if code := run(ctx, en, []string{"audit", id, "--json"}); code != 0 {
			t.Fatalf("audit: exit %d: %s", code, errb.String())
		}
		a, err := e.Audit(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		var want bytes.Buffer
		if err := writeJSON(&want, a); err != nil {
			t.Fatal(err)
		}
		var got, exp any
		if err := json.Unmarshal(out.Bytes(), &got); err != nil {
			t.Fatalf("streamed audit is not JSON: %v\n%s", err, out.String())
		}
		_ = json.Unmarshal(want.Bytes(), &exp)
		g, _ := json.Marshal(got)
		x, _ := json.Marshal(exp)
		if !bytes.Equal(g, x) {
			t.Errorf("run %s: streamed audit differs:\n got  %s\n want %s", id, g, x)
		}
		if bytes.Contains(out.Bytes(), []byte(`\u003c`)) {
			t.Errorf("streamed audit escapes HTML")
		}
	}
}
