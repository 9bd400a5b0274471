package cli

import (
	"bytes"
	"slices"
	"testing"
)

// writeFlows prints what writeJSON prints, byte for byte, whatever the
// strings hold.
func TestWriteFlowsMatchesWriteJSON(t *testing.T) {
	str := func(s string) *string { return &s }
	odd := []string{"", "plain-id", `quote " and \ backslash`, "<&>", "tab\tnew\nline\r", "\x00\x1f\x7f", "é ✓ 日本",
		"\u2028\u2029", "bad \xff utf-8", "\x80"}
	cases := map[string][]flowSummary{
		"none": {},
		"one":  {{SchemaVersion: schemaVersion, FlowID: "r1", FlowName: "main", Status: "running", CurrentStepID: str("first"), StepCount: 4}},
		"nulls and terminal": {
			{SchemaVersion: schemaVersion, FlowID: "r1", FlowName: "r1", Status: "complete", TerminalStatus: str("completed"), StepCount: 4, CompletedSteps: 4, Round: 3, Synthetic: true},
			{SchemaVersion: schemaVersion, FlowID: "r2", FlowName: "x", Status: "awaiting_gate", CurrentStepID: str("review"), StepCount: -1, CompletedSteps: 1 << 40},
		},
	}
	var strange []flowSummary
	for _, s := range odd {
		strange = append(strange, flowSummary{SchemaVersion: s, FlowID: s, FlowName: s, Status: s, CurrentStepID: str(s), TerminalStatus: str(s)})
	}
	cases["strange strings"] = strange
	for name, flows := range cases {
		t.Run(name, func(t *testing.T) {
			var want, got bytes.Buffer
			if err := writeJSON(&want, flows); err != nil {
				t.Fatal(err)
			}
			if err := writeFlows(&got, slices.Values(flows)); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want.Bytes()) {
				t.Errorf("writeFlows:\n%s\nwriteJSON:\n%s", got.Bytes(), want.Bytes())
			}
		})
	}
}

// FuzzAppendJSONString: one string, as encoding/json writes it.
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "a", `"`, "\\", "<", "\u2028", "\xff", "é"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var want bytes.Buffer
		writeJSON(&want, s)
		got := append(appendJSONString(nil, s), '\n')
		if !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("appendJSONString(%q) = %s, want %s", s, got, want.Bytes())
		}
	})
}
