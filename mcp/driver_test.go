package mcp

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stratum-go/stratum/ir"
)

// This file drives runs the way an agent does: do every ready step
// (answering from its contract), approve gates, poll while the engine
// works, until the run ends. The in-memory and stdio tests share it.

// caller calls one tool and returns the checked answer.
type caller func(name string, args any) result

// agentFunc answers a ready entry: an output, or a failure reason.
type agentFunc func(e map[string]any) (output any, failure string)

// gateFunc decides a waiting gate (approve, revise or kill).
type gateFunc func(stepID string) string

type clientDriver struct {
	t      *testing.T
	call   caller
	answer agentFunc
	decide gateFunc
	// steps counts the step_done calls made.
	steps int
}

func newDriver(t *testing.T, call caller) *clientDriver {
	return &clientDriver{t: t, call: call, answer: contractAgent, decide: func(string) string { return "approve" }}
}

// drive continues a run from the answer r until it is terminal and
// returns the terminal answer.
func (d *clientDriver) drive(r result) result {
	d.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for i := 0; ; i++ {
		if time.Now().After(deadline) || i > 500 {
			d.t.Fatalf("run did not finish; last answer:\n%s", r.Text)
		}
		switch r.status() {
		case "ready":
			run := runID(d.t, r)
			next := r
			for _, e := range r.Body["ready"].([]any) {
				en := e.(map[string]any)
				out, failure := d.answer(en)
				res := map[string]any{"output": out}
				if failure != "" {
					res = map[string]any{"failure": failure}
				}
				next = d.call("stratum_step_done", map[string]any{"runId": run, "stepId": en["id"],
					"dispatchToken": en["dispatchToken"], "result": res})
				d.steps++
				if next.status() == statusError {
					d.t.Fatalf("step_done %s refused:\n%s", en["id"], next.Text)
				}
			}
			r = next
		case "running":
			run := runID(d.t, r)
			var gate string
			for _, w := range r.Body["waiting"].([]any) {
				if wm := w.(map[string]any); wm["kind"] == "gate" {
					gate = wm["stepId"].(string)
					break
				}
			}
			if gate != "" {
				tok, digest := d.gate(run, gate)
				r = d.call("stratum_gate_resolve", map[string]any{"runId": run, "stepId": gate,
					"decision": d.decide(gate), "gateToken": tok, "digest": digest})
				if r.status() == statusError {
					d.t.Fatalf("gate_resolve %s refused:\n%s", gate, r.Text)
				}
				continue
			}
			// Engine work (a fanout or a subflow): poll until it moves.
			time.Sleep(20 * time.Millisecond)
			r = d.call("stratum_flow_poll", map[string]any{"runId": run})
		default:
			return r
		}
	}
}

// gate reads a waiting gate's view with stratum_gates, as a model does:
// the token and the digest a decision passes ("<runStep>/<gate>" inside a
// subflow).
func (d *clientDriver) gate(run, gate string) (token, digest string) {
	d.t.Helper()
	return gateView(d.t, d.call, run, gate)
}

// gateView is the token and digest of a waiting gate, from stratum_gates.
func gateView(t *testing.T, call caller, run, gate string) (token, digest string) {
	t.Helper()
	r := call("stratum_gates", map[string]any{"runId": run}).mustStatus(t, "ok")
	gates, _ := r.Body["gates"].([]any)
	for _, g := range gates {
		gm, _ := g.(map[string]any)
		if gm["stepId"] == gate {
			token, _ = gm["gateToken"].(string)
			digest, _ = gm["digest"].(string)
		}
	}
	if token == "" || digest == "" {
		t.Fatalf("no gateToken and digest for %s in stratum_gates:\n%s", gate, r.Text)
	}
	return token, digest
}

// contractAgent fills the entry's output contract with plausible values.
func contractAgent(e map[string]any) (any, string) {
	c, _ := e["contract"].(map[string]any)
	if c == nil {
		return "done", ""
	}
	contracts, _ := c["contracts"].(map[string]any)
	return fillContract(contracts, c["root"].(string), 0), ""
}

func fillContract(contracts map[string]any, name string, depth int) map[string]any {
	out := map[string]any{}
	fields, _ := contracts[name].(map[string]any)
	for f, typ := range fields {
		out[f] = fillType(contracts, typ.(string), depth+1)
	}
	return out
}

// fillType returns a value of a v1 type string (string, number, integer,
// boolean, object, array, T[], a|b, a contract name, T?).
func fillType(contracts map[string]any, typ string, depth int) any {
	typ = strings.TrimSuffix(strings.TrimSpace(typ), "?")
	switch {
	case strings.HasSuffix(typ, "[]"):
		elem := strings.TrimSuffix(typ, "[]")
		return []any{fillType(contracts, elem, depth), fillType(contracts, elem, depth)}
	case strings.HasPrefix(typ, "(") && strings.HasSuffix(typ, ")"):
		return fillType(contracts, typ[1:len(typ)-1], depth)
	case strings.Contains(typ, "|"):
		return strings.TrimSpace(strings.Split(typ, "|")[0])
	}
	switch typ {
	case "string":
		return "text"
	case "number":
		return 0.99
	case "integer":
		return 1
	case "boolean":
		return true
	case "object":
		return map[string]any{}
	case "array":
		return []any{}
	}
	if _, ok := contracts[typ]; ok && depth < 8 {
		return fillContract(contracts, typ, depth)
	}
	return "text"
}

// exampleInput fills the entry flow's input contract of a spec.
func exampleInput(t *testing.T, src string) map[string]any {
	t.Helper()
	p, ds := ir.Build([]byte(src))
	if len(ds) > 0 {
		t.Fatalf("example does not validate: %v", ds)
	}
	contracts := map[string]any{}
	in := map[string]any{}
	for _, fl := range p.EntryFlow().Input.Fields {
		in[fl.Name] = fillType(contracts, fl.Type.Source, 0)
	}
	return in
}

// examples lists the runnable example specs.
func examples(t *testing.T) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join("..", "examples", "*.stratum.yaml"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	for i, n := range names {
		names[i] = filepath.Base(n)
	}
	return names
}

// exampleScenario drives one example to its end through call, the way an
// agent would, with the example's own twists: a failed ensure and its
// retry, a revise round, a checkpoint revert, a failure routed by on_fail.
// It returns a description of what it checked, for the log.
func exampleScenario(t *testing.T, call caller, name string) string {
	t.Helper()
	src := readExample(t, name)
	d := newDriver(t, call)
	if st := call("stratum_validate", map[string]any{"spec": src}).mustStatus(t, "valid"); st.IsError {
		t.Fatal("validate")
	}
	plan := func(input map[string]any) result {
		return call("stratum_plan", map[string]any{"spec": src, "input": input})
	}
	input := exampleInput(t, src)
	var end result
	switch name {
	case "minimal.stratum.yaml":
		// A failed ensure (confidence 0.5 <= 0.7), then the fixed retry.
		d.answer = func(e map[string]any) (any, string) {
			if e["attempt"].(float64) == 1 {
				return map[string]any{"label": "positive", "confidence": 0.5}, ""
			}
			pf, _ := e["previousFailure"].(map[string]any)
			if pf == nil || !strings.Contains(fmt.Sprint(pf["reason"]), "confidence") {
				t.Errorf("retry without the failed ensure: %v", e)
			}
			return map[string]any{"label": "positive", "confidence": 0.9}, ""
		}
		end = d.drive(plan(input)).mustStatus(t, "completed")
		if d.steps != 2 {
			t.Errorf("%s: %d step reports, want 2", name, d.steps)
		}
	case "full-gate.stratum.yaml":
		// One revise round, then approve.
		rounds := 0
		d.decide = func(string) string {
			rounds++
			if rounds == 1 {
				return "revise"
			}
			return "approve"
		}
		end = d.drive(plan(input)).mustStatus(t, "completed")
		if rounds != 2 || d.steps != 2 {
			t.Errorf("%s: %d gate decisions and %d steps, want 2 and 2", name, rounds, d.steps)
		}
	case "quickstart.stratum.yaml":
		// A checkpoint, a step, a revert to the checkpoint, then to the end.
		r := plan(input).mustStatus(t, "ready")
		run := runID(t, r)
		call("stratum_commit", map[string]any{"runId": run, "label": "start"}).mustStatus(t, "committed")
		e := entry(t, r, "outline")
		out, _ := contractAgent(e)
		call("stratum_step_done", map[string]any{"runId": run, "stepId": "outline", "dispatchToken": e["dispatchToken"],
			"result": map[string]any{"output": out}}).mustStatus(t, "ready")
		r = call("stratum_revert", map[string]any{"runId": run, "label": "start"}).mustStatus(t, "ready")
		entry(t, r, "outline")
		end = d.drive(r).mustStatus(t, "completed")
	case "on-fail-routing.stratum.yaml":
		// The failure path: generate fails twice, recover runs, verify is
		// skipped, publish completes the run.
		d.answer = func(e map[string]any) (any, string) {
			if e["id"] == "generate" {
				return nil, "the generator crashed"
			}
			return contractAgent(e)
		}
		end = d.drive(plan(input)).mustStatus(t, "completed")
		// And the success path.
		d2 := newDriver(t, call)
		d2.drive(plan(input)).mustStatus(t, "completed")
	case "iterate.stratum.yaml":
		// Quality rises until the until-predicate holds.
		q := 0.5
		d.answer = func(e map[string]any) (any, string) {
			q += 0.2
			return map[string]any{"text": "draft", "quality": q}, ""
		}
		end = d.drive(plan(input)).mustStatus(t, "completed")
		if d.steps != 3 {
			t.Errorf("%s: %d iterations, want 3", name, d.steps)
		}
	default:
		end = d.drive(plan(input)).mustStatus(t, "completed")
	}
	// The audit of the finished run agrees.
	a := call("stratum_audit", map[string]any{"runId": runID(t, end)}).mustStatus(t, "completed")
	if len(a.Body["events"].([]any)) == 0 {
		t.Errorf("%s: audit without events", name)
	}
	return fmt.Sprintf("%s: completed after %d step reports", name, d.steps)
}
