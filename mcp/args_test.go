package mcp

import "testing"

// TestArgumentErrorsNameTheParameter checks that an argument the input
// schema refuses is named as the client sent it (result.usage), not as a
// schema pointer ("validating root: validating /properties/result...").
func TestArgumentErrorsNameTheParameter(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		tool string
		args map[string]any
		want string
	}{
		{"stratum_audit", map[string]any{}, `arguments: required: missing properties: ["runId"] (see the tool's input schema)`},
		{"stratum_audit", map[string]any{"runId": 5}, `runId: type: 5 has type "integer", want "string" (see the tool's input schema)`},
		{"stratum_audit", map[string]any{"runId": "x", "epoch": 1}, `arguments: unexpected additional properties ["epoch"] (see the tool's input schema)`},
		{"stratum_gate_resolve", map[string]any{"runId": "x", "stepId": "s", "gateToken": "t", "decision": "maybe"},
			`decision: enum: maybe does not equal any of: [approve revise kill] (see the tool's input schema)`},
		{"stratum_step_done", map[string]any{"runId": "x", "stepId": "s", "dispatchToken": "t", "result": map[string]any{"usage": map[string]any{"dispatches": 1}}},
			`result.usage: unexpected additional properties ["dispatches"] (see the tool's input schema)`},
	}
	for _, tt := range tests {
		r := f.call(tt.tool, tt.args).mustError(t, CodeInvalidArguments)
		e, _ := r.Body["error"].(map[string]any)
		if got, _ := e["message"].(string); got != tt.want {
			t.Errorf("%s %v:\n got  %s\n want %s", tt.tool, tt.args, got, tt.want)
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
