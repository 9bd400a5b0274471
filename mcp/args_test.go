package mcp

import (
	"regexp"
	"strings"
	"testing"
)

// TestArgumentErrorsInPlainWords checks that an argument the input schema
// refuses is named as the client sent it (result.usage), in words: what it
// must be and what to do, never a schema pointer or Go syntax.
func TestArgumentErrorsInPlainWords(t *testing.T) {
	f := newFixture(t)
	const fixed = " Nothing changed: call again with the arguments fixed."
	done := func(result any) map[string]any {
		return map[string]any{"runId": "x", "stepId": "s", "dispatchToken": "t", "result": result}
	}
	tests := []struct {
		tool string
		args map[string]any
		want string
	}{
		{"stratum_audit", map[string]any{}, `this tool needs "runId" (a string: the run's id (from stratum_plan)); add it.`},
		{"stratum_audit", map[string]any{"runId": 5}, `runId must be a string, not the number 5.`},
		{"stratum_audit", map[string]any{"runId": "x", "epoch": 1}, `"epoch" is not an argument of this tool (it takes eventsAfter, eventsLimit, runId, steps, stepsAfter, stepsLimit).`},
		{"stratum_audit", map[string]any{"runId": "x", "epoch": 1, "b": 2}, `"b" and "epoch" are not arguments of this tool (it takes eventsAfter, eventsLimit, runId, steps, stepsAfter, stepsLimit).`},
		{"stratum_gate_resolve", map[string]any{"runId": "x", "stepId": "s", "gateToken": "t", "decision": "maybe"},
			`decision must be one of approve, revise, kill, not the string "maybe".`},
		{"stratum_step_done", done(map[string]any{"usage": map[string]any{"dispatches": 1}}),
			`"dispatches" is not a field of result.usage (it takes ms, tokens, usd): Stratum counts dispatches itself; report only what you know of usd, tokens and ms.`},
		// The usual mistake: the output itself as result.
		{"stratum_step_done", done(map[string]any{"title": "Notes", "points": []any{"a"}}),
			`"points" and "title" are not fields of result (it takes failure, output, telemetry, usage): a step's output goes under result.output, e.g. {"result": {"output": {...}}}; result.failure says why you could not do the task instead.`},
		{"stratum_step_done", done("the text"), `result must be an object, not the string "the text".`},
		{"stratum_step_done", done(map[string]any{"output": 1, "telemetry": map[string]any{"model": "m"}}),
			`result.telemetry needs "durationMs" (a number: how long the attempt took, in milliseconds); add it.`},
		{"stratum_step_done", done(map[string]any{"output": 1, "usage": map[string]any{"usd": "1"}}),
			`result.usage.usd must be a number or null, not the string "1".`},
		{"stratum_validate", map[string]any{"spec": []any{1}}, `spec must be a string or an object, not an array.`},
		{"stratum_plan", map[string]any{"spec": "version: 1", "input": []any{}}, `input must be an object, not an array.`},
	}
	for _, tt := range tests {
		r := f.call(tt.tool, tt.args).mustError(t, CodeInvalidArguments)
		e, _ := r.Body["error"].(map[string]any)
		got, _ := e["message"].(string)
		if got != tt.want+fixed {
			t.Errorf("%s %v:\n got  %s\n want %s", tt.tool, tt.args, got, tt.want+fixed)
		}
		if goSyntax.MatchString(got) {
			t.Errorf("%s: message in Go or schema syntax: %s", tt.tool, got)
		}
	}
}

// goSyntax matches what a model should never read in a message: Go slice
// or map syntax, schema pointers, validator jargon.
var goSyntax = regexp.MustCompile(`\["[^"]*" "|map\[|/properties/|validating |want one of|does not equal any of`)

// TestRefusalsSayWhatToDo: every refusal names its code once (in
// error.code, not again in the message) and ends with what to do.
func TestRefusalsSayWhatToDo(t *testing.T) {
	f := newFixture(t)
	r := f.plan(linearSpec, map[string]any{"topic": "x"})
	run := runID(t, r)
	tok := entry(t, r, "outline")["dispatchToken"]
	out := map[string]any{"output": outline}
	tests := []struct {
		tool string
		args map[string]any
		code string
		want string // a part of the message saying what to do
	}{
		{"stratum_step_done", map[string]any{"runId": run, "stepId": "outline", "dispatchToken": "old", "result": out}, "stale_token", "error.state.ready"},
		{"stratum_step_done", map[string]any{"runId": run, "stepId": "nope", "dispatchToken": tok, "result": out}, "not_awaiting", "only the ids listed in ready"},
		{"stratum_step_done", map[string]any{"runId": "nope", "stepId": "outline", "dispatchToken": tok, "result": out}, "run_not_found", "runId that stratum_plan returned"},
		{"stratum_gate_resolve", map[string]any{"runId": run, "stepId": "outline", "gateToken": "t", "decision": "approve"}, "not_awaiting", "listed in waiting with kind gate"},
		{"stratum_plan", map[string]any{"spec": linearSpec}, "invalid_input", "exactly the entry flow's input fields"},
		{"stratum_plan", map[string]any{"spec": "version: 2"}, "invalid_spec", "stratum_validate"},
		{"stratum_revert", map[string]any{"runId": run, "label": "x"}, "checkpoint_not_found", "error.available"},
		{"stratum_guard_history", map[string]any{"resource_id": "nope"}, "guard_not_found", "stratum_guard_register"},
		{"stratum_guard_history", map[string]any{"resource_id": "x", "foo": 1}, "invalid_argument", "arguments fixed"},
		{"stratum_validate", map[string]any{}, CodeInvalidArguments, `add it`},
	}
	for _, tt := range tests {
		res := f.call(tt.tool, tt.args).mustError(t, tt.code)
		e, _ := res.Body["error"].(map[string]any)
		msg, _ := e["message"].(string)
		if strings.Contains(msg, tt.code+":") {
			t.Errorf("%s %s: the message repeats its code: %s", tt.tool, tt.code, msg)
		}
		if !strings.Contains(msg, tt.want) {
			t.Errorf("%s %s: the message does not say what to do (%q):\n%s", tt.tool, tt.code, tt.want, msg)
		}
		if goSyntax.MatchString(msg) {
			t.Errorf("%s %s: message in Go or schema syntax: %s", tt.tool, tt.code, msg)
		}
	}
	// The gate's stale token points at the audit, not at ready entries.
	g := f.plan(gateSpec, nil)
	grun := runID(t, f.done(g, "work", map[string]any{"result": "x"}))
	res := f.call("stratum_gate_resolve", map[string]any{"runId": grun, "stepId": "review", "gateToken": "old", "decision": "approve"}).mustError(t, "stale_token")
	if e := res.Body["error"].(map[string]any); !strings.Contains(e["message"].(string), "call again with its gateToken") {
		t.Errorf("gate stale token: %s", res.Text)
	}
}

func TestStripCode(t *testing.T) {
	for _, tt := range []struct{ code, in, want string }{
		{"guard_not_found", "guard_not_found: no guard", "no guard"},
		{"x", "x: x: twice", "twice"},
		{"x", "xy: kept", "xy: kept"},
		{"", ": kept", ": kept"},
	} {
		if got := stripCode(tt.code, tt.in); got != tt.want {
			t.Errorf("stripCode(%q, %q) = %q, want %q", tt.code, tt.in, got, tt.want)
		}
	}
}

func TestSchemaPointerPath(t *testing.T) {
	for ptr, want := range map[string]string{
		"root":                                       "",
		"/properties/runId":                          "runId",
		"/properties/result/properties/usage":        "result.usage",
		"/properties/a~1b/properties/c~0d":           "a/b.c~d",
		"/properties/modified_files/items":           "modified_files[]",
		"/properties/artifacts/additionalProperties": "artifacts[]",
		"/properties/spec/anyOf/0":                   "spec",
	} {
		if got := schemaPointerPath(ptr); got != want {
			t.Errorf("schemaPointerPath(%q) = %q, want %q", ptr, got, want)
		}
	}
}
