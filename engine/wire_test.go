package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestWireGolden pins the JSON the front ends return as they are: every
// response shape of a scripted session, with deterministic ids and clock.
func TestWireGolden(t *testing.T) {
	h := newHarness(t, Options{})
	var buf bytes.Buffer
	add := func(name string, v any) {
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		buf.WriteString("## " + name + "\n")
		buf.Write(b)
		buf.WriteString("\n")
	}
	r := h.plan(string(example(t, "full-gate.stratum.yaml")), map[string]any{"text": "t"})
	add("plan: ready", r)
	r = h.ok(r, "work", `{"result":"r","quality_score":0.1}`)
	add("step_done: retry with previousFailure", r)
	r = h.ok(r, "work", goodWork)
	add("step_done: running, waiting on a gate", r)
	must := func(v any, err error) any {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	add("list gates", must(h.e.ListGates(h.ctx, r.RunID)))
	add("commit", must(h.e.Commit(h.ctx, r.RunID, "gate")))
	r = h.resolve(r.RunID, "review", DecisionApprove)
	add("gate_resolve: completed", r)
	add("revert: running", must(h.e.Revert(h.ctx, r.RunID, "gate")))
	r = h.resolve(r.RunID, "review", DecisionKill)
	add("gate_resolve: failed", r)
	_, err := h.e.StepDone(h.ctx, StepDoneRequest{RunID: r.RunID, StepID: "work", DispatchToken: "x"})
	var refusal *Error
	if !errors.As(err, &refusal) {
		t.Fatalf("step_done on a failed run: %v, want an *Error", err)
	}
	add("refusal", map[string]any{"code": CodeOf(err), "message": err.Error(), "state": refusal.State})

	r = h.plan(consumerSpec("any", oneStage), map[string]any{"items": []any{"a"}})
	add("plan: consumer item", r)
	add("usage report", must(h.e.UsageReport(h.ctx, r.RunID, Receipt{DispatchID: "d1", Source: "agent", Usage: js(map[string]any{"tokens": 5})})))
	add("cancel", must(h.e.Cancel(h.ctx, r.RunID, "stop")))
	add("poll", must(h.e.Poll(h.ctx, r.RunID, 0)))

	path := filepath.Join("testdata", "wire.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(want, buf.Bytes()) {
		t.Fatalf("wire output differs from %s (run with -update after checking the change):\n%s", path, buf.String())
	}
}
