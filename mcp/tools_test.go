package mcp

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

// Specs used by the tool tests.
const (
	// linearSpec: two do steps, the second after the first; draft has an
	// ensure a test can fail on purpose.
	linearSpec = `version: 1
contracts:
  Outline:
    title: string
    points: string[]
  Draft:
    text: string
    words: integer
flows:
  entry: write
  write:
    input:
      topic: string
    output:
      from: "${draft.output}"
      contract: Draft
    steps:
      - id: outline
        do: "Outline a note about ${input.topic}"
        out: Outline
      - id: draft
        do: "Write ${outline.output.title}"
        out: Draft
        ensure:
          - expr: "result.words > 0"
`
	// gateSpec: a step, then a gate that can send it back (full-gate).
	gateSpec = `version: 1
contracts:
  Work:
    result: string
flows:
  entry: main
  main:
    input: {}
    output:
      from: "${work.output}"
      contract: Work
    max_rounds: 3
    steps:
      - id: work
        do: "Do the work"
        out: Work
      - id: review
        after: [work]
        gate:
          on_approve: null
          on_revise: work
          on_kill: null
          max_rounds: 2
`
)

func (f *fixture) plan(spec string, input any) result {
	f.t.Helper()
	args := map[string]any{"spec": spec}
	if input != nil {
		args["input"] = input
	}
	return f.call("stratum_plan", args)
}

// entry returns the ready entry with the given id.
func entry(t *testing.T, r result, id string) map[string]any {
	t.Helper()
	ready, _ := r.Body["ready"].([]any)
	for _, e := range ready {
		m, _ := e.(map[string]any)
		if m["id"] == id {
			return m
		}
	}
	t.Fatalf("no ready entry %q in:\n%s", id, r.Text)
	return nil
}

func runID(t *testing.T, r result) string {
	t.Helper()
	id, _ := r.Body["runId"].(string)
	if id == "" {
		t.Fatalf("no runId in:\n%s", r.Text)
	}
	return id
}

// done reports output for the ready entry id of r.
func (f *fixture) done(r result, id string, output any) result {
	f.t.Helper()
	e := entry(f.t, r, id)
	return f.call("stratum_step_done", map[string]any{
		"runId": runID(f.t, r), "stepId": id, "dispatchToken": e["dispatchToken"],
		"result": map[string]any{"output": output},
	})
}

// gateToken reads a waiting gate's token from stratum_gates.
func (f *fixture) gateToken(run, gate string) string {
	f.t.Helper()
	tok, _ := gateView(f.t, f.call, run, gate)
	return tok
}

var outline = map[string]any{"title": "Notes", "points": []any{"a", "b"}}

func TestValidate(t *testing.T) {
	f := newFixture(t)
	f.call("stratum_validate", map[string]any{"spec": linearSpec}).mustStatus(t, "valid")

	// The same spec as a JSON object.
	var obj map[string]any
	if err := json.Unmarshal([]byte(`{"version":1,"contracts":{"R":{"x":"string"}},"flows":{"entry":"m","m":{"input":{},"output":{"from":"${s.output}","contract":"R"},"steps":[{"id":"s","do":"d","out":"R"}]}}}`), &obj); err != nil {
		t.Fatal(err)
	}
	f.call("stratum_validate", map[string]any{"spec": obj}).mustStatus(t, "valid")

	// Every problem at once, positioned.
	bad := strings.Replace(linearSpec, "out: Outline", "out: Missing", 1)
	bad = strings.Replace(bad, "entry: write", "entry: nowhere", 1)
	r := f.call("stratum_validate", map[string]any{"spec": bad}).mustStatus(t, "invalid")
	errs, _ := r.Body["errors"].([]any)
	if len(errs) < 2 {
		t.Fatalf("want every problem, got:\n%s", r.Text)
	}
	for _, e := range errs {
		m := e.(map[string]any)
		if m["code"] == "" || m["line"].(float64) < 1 || m["column"].(float64) < 1 || m["message"] == "" {
			t.Errorf("problem lacks code or position: %v", m)
		}
	}
	if r.IsError {
		t.Error("an invalid spec is an answer, not a refused call")
	}

	// A JSON object spec is read as the JSON text sent: one line.
	delete(obj, "contracts")
	r = f.call("stratum_validate", map[string]any{"spec": obj}).mustStatus(t, "invalid")
	if e := r.Body["errors"].([]any)[0].(map[string]any); e["line"].(float64) != 1 {
		t.Errorf("JSON spec diagnostic not on line 1: %v", e)
	}

	// Not YAML at all.
	r = f.call("stratum_validate", map[string]any{"spec": "flows: [unclosed"}).mustStatus(t, "invalid")
	if !strings.Contains(r.Text, "YAML") {
		t.Errorf("want a YAML diagnostic:\n%s", r.Text)
	}

	// Wrong kinds of spec are refused as arguments.
	for _, spec := range []any{[]any{1}, 5, true} {
		f.call("stratum_validate", map[string]any{"spec": spec}).mustError(t, CodeInvalidArguments)
	}
	f.call("stratum_validate", map[string]any{}).mustError(t, CodeInvalidArguments)
	f.call("stratum_validate", map[string]any{"spec": nil}).mustError(t, CodeInvalidArguments)
	f.call("stratum_validate", map[string]any{"spec": linearSpec, "extra": 1}).mustError(t, CodeInvalidArguments)
}

func TestPlan(t *testing.T) {
	f := newFixture(t)
	r := f.plan(linearSpec, map[string]any{"topic": "moon"}).mustStatus(t, "ready")
	e := entry(t, r, "outline")
	if e["do"] != "Outline a note about moon" || e["attempt"].(float64) != 1 || e["dispatchToken"] == "" {
		t.Errorf("ready entry: %v", e)
	}
	if c, _ := e["contract"].(map[string]any); c["root"] != "Outline" {
		t.Errorf("contract: %v", e["contract"])
	}
	if d, _ := r.Body["revisionDigest"].(string); !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(d) {
		t.Errorf("revisionDigest %q", d)
	}
	if led, _ := r.Body["ledger"].(map[string]any); led["spent"] == nil {
		t.Errorf("ledger: %v", r.Body["ledger"])
	}

	// The JSON object form, and a flow without input (input omitted).
	var obj map[string]any
	json.Unmarshal([]byte(`{"version":1,"contracts":{"R":{"x":"string"}},"flows":{"entry":"m","m":{"input":{},"output":{"from":"${s.output}","contract":"R"},"steps":[{"id":"s","do":"d","out":"R"}]}}}`), &obj)
	r = f.call("stratum_plan", map[string]any{"spec": obj}).mustStatus(t, "ready")
	f.done(r, "s", map[string]any{"x": "y"}).mustStatus(t, "completed")

	// Refusals: nothing is created.
	r = f.plan(strings.Replace(linearSpec, "out: Outline", "out: Missing", 1), map[string]any{"topic": "x"}).mustError(t, "invalid_spec")
	if errs, _ := r.Body["error"].(map[string]any)["errors"].([]any); len(errs) == 0 {
		t.Errorf("invalid_spec without diagnostics:\n%s", r.Text)
	}
	r = f.plan(linearSpec, map[string]any{"topic": 3, "extra": true}).mustError(t, "invalid_input")
	if errs, _ := r.Body["error"].(map[string]any)["errors"].([]any); len(errs) == 0 {
		t.Errorf("invalid_input without problems:\n%s", r.Text)
	}
	f.plan(linearSpec, nil).mustError(t, "invalid_input")
	f.call("stratum_plan", map[string]any{"spec": linearSpec, "input": []any{1}}).mustError(t, CodeInvalidArguments)
	f.call("stratum_plan", map[string]any{"input": map[string]any{}}).mustError(t, CodeInvalidArguments)
}

func TestStepDone(t *testing.T) {
	f := newFixture(t)
	r := f.plan(linearSpec, map[string]any{"topic": "moon"}).mustStatus(t, "ready")
	run := runID(t, r)
	first := entry(t, r, "outline")

	// Missing token and wrong argument types never reach the engine.
	f.call("stratum_step_done", map[string]any{"runId": run, "stepId": "outline", "result": map[string]any{}}).mustError(t, CodeInvalidArguments)
	f.call("stratum_step_done", map[string]any{"runId": run, "stepId": "outline", "dispatchToken": 7, "result": map[string]any{}}).mustError(t, CodeInvalidArguments)
	f.call("stratum_step_done", map[string]any{"runId": run, "stepId": "outline", "dispatchToken": "x", "result": map[string]any{"usage": map[string]any{"dispatches": 1}}}).mustError(t, CodeInvalidArguments)
	f.call("stratum_step_done", map[string]any{"runId": run, "stepId": "outline", "dispatchToken": "x", "epoch": 0, "result": map[string]any{}}).mustError(t, CodeInvalidArguments)

	// A wrong token: stale, with the current state to recover from.
	r2 := f.call("stratum_step_done", map[string]any{"runId": run, "stepId": "outline", "dispatchToken": "not-the-token",
		"result": map[string]any{"output": outline}}).mustError(t, "stale_token")
	state, _ := r2.Body["error"].(map[string]any)["state"].(map[string]any)
	if state["status"] != "ready" {
		t.Errorf("stale_token without the current state:\n%s", r2.Text)
	}

	// Unknown run, hostile run id, unknown step.
	f.call("stratum_step_done", map[string]any{"runId": "no-such-run", "stepId": "outline", "dispatchToken": "x", "result": map[string]any{}}).mustError(t, "run_not_found")
	f.call("stratum_step_done", map[string]any{"runId": "../../etc", "stepId": "outline", "dispatchToken": "x", "result": map[string]any{}}).mustError(t, "run_not_found")
	f.call("stratum_step_done", map[string]any{"runId": run, "stepId": "nope", "dispatchToken": "x", "result": map[string]any{}}).mustError(t, "not_awaiting")

	// Accepted: the next step is ready. The old token is now stale.
	r = f.done(r, "outline", outline).mustStatus(t, "ready")
	if e := entry(t, r, "draft"); e["do"] != "Write Notes" {
		t.Errorf("draft entry: %v", e)
	}
	f.call("stratum_step_done", map[string]any{"runId": run, "stepId": "outline", "dispatchToken": first["dispatchToken"],
		"result": map[string]any{"output": outline}}).mustError(t, "stale_token")

	// A failed ensure: the same step again, attempt 2, with the reason.
	r = f.done(r, "draft", map[string]any{"text": "t", "words": 0}).mustStatus(t, "ready")
	retry := entry(t, r, "draft")
	pf, _ := retry["previousFailure"].(map[string]any)
	if retry["attempt"].(float64) != 2 || pf == nil || !strings.Contains(pf["reason"].(string), "result.words > 0") {
		t.Errorf("retry entry: %v", retry)
	}
	// Output key order and number text survive the trip to the engine.
	r = f.call("stratum_step_done", map[string]any{"runId": run, "stepId": "draft", "dispatchToken": retry["dispatchToken"],
		"result": json.RawMessage(`{"output":{"words":12,"text":"z"},"usage":{"tokens":5},"telemetry":{"durationMs":3,"model":"m"}}`)}).mustStatus(t, "completed")
	if !strings.Contains(r.Text, `"output":{"words":12,"text":"z"}`) {
		t.Errorf("output key order not kept:\n%s", r.Text)
	}

	// A finished run.
	f.call("stratum_step_done", map[string]any{"runId": run, "stepId": "draft", "dispatchToken": "x", "result": map[string]any{}}).mustError(t, "run_terminal")
}

func TestStepDoneFailure(t *testing.T) {
	f := newFixture(t)
	r := f.plan(linearSpec, map[string]any{"topic": "moon"})
	e := entry(t, r, "outline")
	r = f.call("stratum_step_done", map[string]any{"runId": runID(t, r), "stepId": "outline", "dispatchToken": e["dispatchToken"],
		"result": map[string]any{"failure": "could not reach the docs"}}).mustStatus(t, "ready")
	retry := entry(t, r, "outline")
	if pf, _ := retry["previousFailure"].(map[string]any); pf == nil || !strings.Contains(pf["reason"].(string), "could not reach the docs") {
		t.Errorf("retry after a reported failure: %v", retry)
	}
	// Attempts exhausted (default 2): the run fails.
	r = f.call("stratum_step_done", map[string]any{"runId": runID(t, r), "stepId": "outline", "dispatchToken": retry["dispatchToken"],
		"result": map[string]any{"failure": "still no docs"}}).mustStatus(t, "failed")
	if fl, _ := r.Body["failure"].(map[string]any); fl == nil {
		t.Errorf("failed without failure:\n%s", r.Text)
	}
}

func TestGateResolve(t *testing.T) {
	f := newFixture(t)
	start := func() (string, result) {
		r := f.plan(gateSpec, map[string]any{}).mustStatus(t, "ready")
		r = f.done(r, "work", map[string]any{"result": "v1"}).mustStatus(t, "running")
		w, _ := r.Body["waiting"].([]any)
		if len(w) != 1 || w[0].(map[string]any)["kind"] != "gate" || w[0].(map[string]any)["stepId"] != "review" {
			t.Fatalf("waiting: %s", r.Text)
		}
		if strings.Contains(r.Text, "gateToken") {
			t.Fatalf("a response exposes a gate token:\n%s", r.Text)
		}
		return runID(t, r), r
	}
	resolve := func(run, decision, token string) result {
		return f.call("stratum_gate_resolve", map[string]any{"runId": run, "stepId": "review", "decision": decision, "gateToken": token})
	}

	// revise: work is ready again; the old gate token is stale afterwards.
	run, _ := start()
	tok := f.gateToken(run, "review")
	resolve(run, "maybe", tok).mustError(t, CodeInvalidArguments)
	f.call("stratum_gate_resolve", map[string]any{"runId": run, "stepId": "review", "decision": "approve"}).mustError(t, CodeInvalidArguments)
	resolve(run, "approve", "wrong").mustError(t, "stale_token")
	r := resolve(run, "revise", tok).mustStatus(t, "ready")
	if e := entry(t, r, "work"); e["epoch"].(float64) != 1 {
		t.Errorf("revised step: %v", e)
	}
	f.done(r, "work", map[string]any{"result": "v2"}).mustStatus(t, "running")
	resolve(run, "approve", tok).mustError(t, "stale_token")
	r = f.call("stratum_gate_resolve", map[string]any{"runId": run, "stepId": "review", "decision": "approve",
		"gateToken": f.gateToken(run, "review"), "rationale": "reads well now", "resolvedBy": "Ada"}).mustStatus(t, "completed")
	if !strings.Contains(r.Text, `"output":{"result":"v2"}`) {
		t.Errorf("output after revise and approve:\n%s", r.Text)
	}
	audit := f.call("stratum_audit", map[string]any{"runId": run})
	if !strings.Contains(audit.Text, `"rationale":"reads well now"`) || !strings.Contains(audit.Text, `"resolvedBy":"Ada"`) {
		t.Errorf("the rationale and resolver are not in the audit:\n%s", audit.Text)
	}
	resolve(run, "approve", "x").mustError(t, "run_terminal")

	// kill with a null route fails the run.
	run, _ = start()
	resolve(run, "kill", f.gateToken(run, "review")).mustStatus(t, "failed")

	// Not a gate.
	f.call("stratum_gate_resolve", map[string]any{"runId": run, "stepId": "work", "decision": "approve", "gateToken": "x"}).mustError(t, "run_terminal")
	run, _ = start()
	f.call("stratum_gate_resolve", map[string]any{"runId": run, "stepId": "work", "decision": "approve", "gateToken": "x"}).mustError(t, "not_awaiting")
	f.call("stratum_gate_resolve", map[string]any{"runId": "nope", "stepId": "review", "decision": "approve", "gateToken": "x"}).mustError(t, "run_not_found")
}

// revise on a gate with no on_revise is refused by the engine, the same
// answer `stratum gate revise` gives.
func TestGateResolveWithoutReviseRoute(t *testing.T) {
	f := newFixture(t)
	spec := strings.Replace(gateSpec, "on_revise: work", "on_revise: null", 1)
	if spec == gateSpec {
		t.Fatal("gateSpec no longer has on_revise: work")
	}
	r := f.plan(spec, map[string]any{}).mustStatus(t, "ready")
	r = f.done(r, "work", map[string]any{"result": "v1"}).mustStatus(t, "running")
	run := runID(t, r)
	tok := f.gateToken(run, "review")
	f.call("stratum_gate_resolve", map[string]any{"runId": run, "stepId": "review", "decision": "revise", "gateToken": tok}).mustError(t, "missing_on_revise")
	f.call("stratum_gate_resolve", map[string]any{"runId": run, "stepId": "review", "decision": "approve", "gateToken": tok}).mustStatus(t, "completed")
}

func TestAuditAndPoll(t *testing.T) {
	f := newFixture(t)
	r := f.plan(linearSpec, map[string]any{"topic": "moon"})
	run := runID(t, r)
	a := f.call("stratum_audit", map[string]any{"runId": run}).mustStatus(t, "running")
	steps, _ := a.Body["steps"].(map[string]any)
	if st, _ := steps["outline"].(map[string]any); st["status"] != "ready" || st["dispatchToken"] == nil {
		t.Errorf("audit step: %v", steps["outline"])
	}
	if _, ok := steps["draft"]; !ok {
		t.Error("audit omits pending steps")
	}
	evs, _ := a.Body["events"].([]any)
	if len(evs) == 0 || evs[0].(map[string]any)["type"] != "planned" {
		t.Errorf("events: %v", evs)
	}

	p := f.call("stratum_flow_poll", map[string]any{"runId": run}).mustStatus(t, "ready")
	cursor := p.Body["nextCursor"].(float64)
	prev := 0.0
	for _, ev := range p.Body["events"].([]any) {
		seq := ev.(map[string]any)["seq"].(float64)
		if seq <= prev || seq > cursor {
			t.Errorf("event seq %v after %v, nextCursor %v", seq, prev, cursor)
		}
		prev = seq
	}
	if len(p.Body["events"].([]any)) == 0 {
		t.Errorf("poll from 0 returned no events:\n%s", p.Text)
	}
	entry(t, p, "outline")
	r = f.done(r, "outline", outline)
	p = f.call("stratum_flow_poll", map[string]any{"runId": run, "cursor": cursor}).mustStatus(t, "ready")
	for _, ev := range p.Body["events"].([]any) {
		if ev.(map[string]any)["seq"].(float64) <= cursor {
			t.Errorf("event at or before the cursor: %v", ev)
		}
	}
	if len(p.Body["events"].([]any)) == 0 {
		t.Error("no new events after a step")
	}
	f.call("stratum_flow_poll", map[string]any{"runId": run, "cursor": 100000}).mustError(t, "invalid_cursor")
	f.call("stratum_flow_poll", map[string]any{"runId": run, "cursor": -1}).mustError(t, "invalid_cursor")
	f.call("stratum_flow_poll", map[string]any{"runId": run, "cursor": "x"}).mustError(t, CodeInvalidArguments)
	f.call("stratum_audit", map[string]any{"runId": "nope"}).mustError(t, "run_not_found")
	f.call("stratum_flow_poll", map[string]any{"runId": "nope"}).mustError(t, "run_not_found")

	f.done(r, "draft", map[string]any{"text": "t", "words": 1}).mustStatus(t, "completed")
	a = f.call("stratum_audit", map[string]any{"runId": run}).mustStatus(t, "completed")
	if !strings.Contains(a.Text, `"output":{"text":"t","words":1}`) {
		t.Errorf("audit output:\n%s", a.Text)
	}
	f.call("stratum_flow_poll", map[string]any{"runId": run}).mustStatus(t, "completed")
}

func TestCheckpoints(t *testing.T) {
	f := newFixture(t)
	r := f.plan(linearSpec, map[string]any{"topic": "moon"})
	run := runID(t, r)
	c := f.call("stratum_commit", map[string]any{"runId": run, "label": "  start "}).mustStatus(t, "committed")
	if c.Body["label"] != "start" || c.Body["currentStepId"] != "outline" || c.Body["stepNumber"].(float64) != 1 {
		t.Errorf("commit: %s", c.Text)
	}
	f.call("stratum_commit", map[string]any{"runId": run, "label": "   "}).mustError(t, "invalid_label")
	f.call("stratum_commit", map[string]any{"runId": "nope", "label": "x"}).mustError(t, "run_not_found")

	old := entry(t, r, "outline")["dispatchToken"]
	f.done(r, "outline", outline).mustStatus(t, "ready")
	c = f.call("stratum_commit", map[string]any{"runId": run, "label": "outlined"}).mustStatus(t, "committed")
	if cps := c.Body["checkpoints"].([]any); len(cps) != 2 {
		t.Errorf("checkpoints: %v", cps)
	}

	r = f.call("stratum_revert", map[string]any{"runId": run, "label": "start"}).mustStatus(t, "ready")
	if r.Body["revertedTo"] != "start" {
		t.Errorf("revert: %s", r.Text)
	}
	e := entry(t, r, "outline")
	if e["dispatchToken"] == old {
		t.Error("revert kept the old dispatch token")
	}
	r2 := f.call("stratum_revert", map[string]any{"runId": run, "label": "nowhere"}).mustError(t, "checkpoint_not_found")
	if av, _ := r2.Body["error"].(map[string]any)["available"].([]any); len(av) != 2 {
		t.Errorf("available labels: %s", r2.Text)
	}
	f.done(r, "outline", outline).mustStatus(t, "ready")
}

func TestResume(t *testing.T) {
	f := newFixture(t)
	r := f.plan(linearSpec, map[string]any{"topic": "moon"})
	run := runID(t, r)
	tok := entry(t, r, "outline")["dispatchToken"]
	r2 := f.call("stratum_resume", map[string]any{"runId": run}).mustStatus(t, "ready")
	if entry(t, r2, "outline")["dispatchToken"] != tok || r2.Body["revisionDigest"] != r.Body["revisionDigest"] {
		t.Errorf("resume changed the issuance:\n%s\n%s", r.Text, r2.Text)
	}
	f.done(r2, "outline", outline).mustStatus(t, "ready")
	f.call("stratum_resume", map[string]any{"runId": "nope"}).mustError(t, "run_not_found")
	f.call("stratum_resume", map[string]any{}).mustError(t, CodeInvalidArguments)
}

func TestFlowCancel(t *testing.T) {
	f := newFixture(t)
	r := f.plan(linearSpec, map[string]any{"topic": "moon"})
	run := runID(t, r)
	c := f.call("stratum_flow_cancel", map[string]any{"runId": run, "reason": "test"}).mustStatus(t, "cancelled")
	if c.Body["flowSettled"] != true {
		t.Errorf("cancel: %s", c.Text)
	}
	if b := c.Body["burned"].(map[string]any); len(b["steps"].([]any)) != 1 {
		t.Errorf("burned: %v", b)
	}
	e := entry(t, r, "outline")
	f.call("stratum_step_done", map[string]any{"runId": run, "stepId": "outline", "dispatchToken": e["dispatchToken"],
		"result": map[string]any{"output": outline}}).mustError(t, "run_cancelled")
	f.call("stratum_resume", map[string]any{"runId": run}).mustError(t, "run_cancelled")
	f.call("stratum_commit", map[string]any{"runId": run, "label": "x"}).mustError(t, "run_cancelled")
	f.call("stratum_audit", map[string]any{"runId": run}).mustStatus(t, "cancelled")
	f.call("stratum_flow_poll", map[string]any{"runId": run}).mustStatus(t, "cancelled")
	again := f.call("stratum_flow_cancel", map[string]any{"runId": run}).mustStatus(t, "cancelled")
	if again.Body["reason"] != "already_cancelled" {
		t.Errorf("second cancel: %s", again.Text)
	}
	f.call("stratum_flow_cancel", map[string]any{"runId": "nope"}).mustError(t, "run_not_found")
}

func TestUsageReport(t *testing.T) {
	f := newFixture(t)
	r := f.plan(linearSpec, map[string]any{"topic": "moon"})
	run := runID(t, r)
	rc := map[string]any{"dispatchId": "d1", "stepId": "outline", "source": "test", "usage": map[string]any{"usd": 0.5, "tokens": 10}, "usdSource": "reported"}
	u := f.call("stratum_usage_report", map[string]any{"runId": run, "receipt": rc}).mustStatus(t, "ok")
	spent := u.Body["ledger"].(map[string]any)["spent"].(map[string]any)
	if spent["usd"] != 0.5 || spent["tokens"] != 10.0 {
		t.Errorf("ledger after receipt: %s", u.Text)
	}
	d := f.call("stratum_usage_report", map[string]any{"runId": run, "receipt": rc}).mustStatus(t, "duplicate")
	if d.Body["seq"] != u.Body["seq"] {
		t.Errorf("duplicate seq: %s vs %s", d.Text, u.Text)
	}
	f.call("stratum_usage_report", map[string]any{"runId": run, "receipt": map[string]any{"dispatchId": "d2", "source": "test", "usage": map[string]any{"usd": 1}}}).mustError(t, "invalid_receipt")
	f.call("stratum_usage_report", map[string]any{"runId": run, "receipt": map[string]any{"dispatchId": "legacy:1", "source": "test", "usage": map[string]any{"tokens": 1}}}).mustError(t, "invalid_receipt")
	f.call("stratum_usage_report", map[string]any{"runId": run, "receipt": map[string]any{"dispatchId": "d3", "stepId": "ghost", "source": "test", "usage": map[string]any{"tokens": 1}}}).mustError(t, "invalid_step")
	f.call("stratum_usage_report", map[string]any{"runId": run, "receipt": map[string]any{"dispatchId": "d4", "source": "test", "usage": map[string]any{"dispatches": 1}}}).mustError(t, CodeInvalidArguments)
	f.call("stratum_usage_report", map[string]any{"runId": "nope", "receipt": rc}).mustError(t, "run_not_found")
}
