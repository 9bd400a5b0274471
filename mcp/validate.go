package mcp

import (
	"context"

	"github.com/stratum-go/stratum/ir"
)

type validateIn struct {
	Spec specArg `json:"spec" jsonschema:"the flow spec: YAML text (starting with version: 1) or the same document as a JSON object"`
}

// ValidateResult is the answer of stratum_validate.
type ValidateResult struct {
	Status string    `json:"status" jsonschema:"valid: the spec can be planned; invalid: see errors"`
	Errors []Problem `json:"errors,omitzero" jsonschema:"every problem of the spec, sorted by position, each with code, path, line, column and message (status invalid)"`
}

func (s *server) validateTool() tool {
	return newTool(s, toolMeta{
		name:  "stratum_validate",
		title: "Validate a Stratum flow spec",
		description: `Check a Stratum flow spec without running it: call it after writing or editing a spec, before stratum_plan. Returns {"status":"valid"}, or {"status":"invalid","errors":[...]} with every problem at once (code, path, line, column, what would be right): fix them all, validate again.
The language in brief (every construct with an example: resource stratum://docs/language):
version: 1; contracts: {Name: {field: type}}; flows: {entry: F, F: {input: {field: type}, output: {from: "${STEP.output}", contract: Name}, steps: [...]}}.
Types: string number integer boolean object array, a contract Name, T[] (list), T? (optional), a|b (enum). In a {flow: mapping} quote "T[]".
A step has id (lowercase), optional after: [ids] and when: EXPR, and one of:
- do: "task text with ${input.f} and ${STEP.output.f}", out: Name, ensure: [{expr: EXPR}, {file_exists: "dir/${input.f}"}, {file_contains: {path, text}}], attempts: N (default 2), on_fail: STEP, iterate: {max: N, until: EXPR}
- set: {field: EXPR}, out: Name
- gate: {on_approve: null|STEP, on_revise: null|an earlier STEP, on_kill: null|STEP, max_rounds: N?}; a revise needs the flow's max_rounds: N
- fanout: {over: "${input.list}", dispatch: consumer, concurrency: N, isolation: none, require: all, merge: sequential, steps: [{do: "... ${item}", out: Name}]}: its items come to you as ids FANOUT/0, FANOUT/1, ...
- run: FLOW, with: {every input of FLOW}
budget: {usd, tokens, dispatches, ms} on a flow or a step.
EXPR reads names, never ${...}: result (the output under test; in when and set, result.STEP is an earlier step's output: add after: [STEP]), input, item; == != < > && || ! in len() file_exists().
Example: stratum_validate {"spec": "version: 1\ncontracts:\n  Note: {text: string}\nflows:\n  entry: main\n  main:\n    input: {topic: string}\n    output: {from: \"${write.output}\", contract: Note}\n    steps:\n      - id: write\n        do: \"Write a note about ${input.topic}\"\n        out: Note\n"}`,
		statuses:   []string{"valid", "invalid"},
		readOnly:   true,
		idempotent: true,
	}, func(ctx context.Context, c *call, in validateIn) (*ValidateResult, error) {
		src, err := specSource(c.raw("spec"))
		if err != nil {
			return nil, err
		}
		if ds := ir.Validate(src); len(ds) > 0 {
			return &ValidateResult{Status: "invalid", Errors: diagnosticsProblems(ds)}, nil
		}
		return &ValidateResult{Status: "valid"}, nil
	})
}
