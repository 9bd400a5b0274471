package mcp

import (
	"strings"
	"testing"
)

// TestResultSchemaAgreesWithEngine: every usage and telemetry value of a
// step_done result is either refused by the advertised input schema
// (invalid_arguments, nothing recorded) or accepted by it and then by the
// engine. A value the schema accepts and the engine turns into a failed
// attempt would send a model back with a reason it could not have
// foreseen from the schema.
func TestResultSchemaAgreesWithEngine(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		name      string
		usage     any
		telemetry any
		accepted  bool
	}{
		{"usd null", map[string]any{"usd": nil, "tokens": 10}, nil, true},
		{"all null", map[string]any{"usd": nil, "tokens": nil, "ms": nil}, nil, true},
		{"usage null", nil, nil, true},
		{"usd 0", map[string]any{"usd": 0}, nil, true},
		{"usd negative", map[string]any{"usd": -1}, nil, false},
		{"tokens huge", map[string]any{"tokens": 1e16}, nil, false},
		{"usd text", map[string]any{"usd": "1"}, nil, false},
		{"unknown key", map[string]any{"dollars": 1}, nil, false},
		{"dispatches", map[string]any{"dispatches": 1}, nil, false},
		{"telemetry", nil, map[string]any{"durationMs": 5, "model": "m"}, true},
		{"duration negative", nil, map[string]any{"durationMs": -5, "model": "m"}, false},
		{"model empty", nil, map[string]any{"durationMs": 5, "model": ""}, false},
		{"effort empty", nil, map[string]any{"durationMs": 5, "model": "m", "effort": ""}, false},
		{"effort null", nil, map[string]any{"durationMs": 5, "model": "m", "effort": nil}, false},
		{"no model", nil, map[string]any{"durationMs": 5}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := f.plan(linearSpec, map[string]any{"topic": "x"})
			e := entry(t, r, "outline")
			res := map[string]any{"output": outline}
			if c.usage != nil {
				res["usage"] = c.usage
			}
			if c.telemetry != nil {
				res["telemetry"] = c.telemetry
			}
			got := f.call("stratum_step_done", map[string]any{"runId": runID(t, r), "stepId": "outline", "dispatchToken": e["dispatchToken"], "result": res})
			schemaRefused := got.IsError && got.errorCode() == CodeInvalidArguments
			engineRefused := !got.IsError && strings.Contains(got.Text, `"previousFailure"`)
			switch {
			case schemaRefused && engineRefused, got.IsError && !schemaRefused:
				t.Fatalf("unexpected answer:\n%s", got.Text)
			case c.accepted && (schemaRefused || engineRefused):
				t.Fatalf("refused (schema %v, engine %v):\n%s", schemaRefused, engineRefused, got.Text)
			case !c.accepted && engineRefused:
				t.Fatalf("the schema accepted it and the engine failed the attempt (they disagree):\n%s", got.Text)
			case !c.accepted && !schemaRefused:
				t.Fatalf("accepted:\n%s", got.Text)
			}
		})
	}
}
