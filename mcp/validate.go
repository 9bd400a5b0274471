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
		description: `Check a Stratum flow spec (version: 1) without starting a run. Call it after writing or editing a spec and before stratum_plan.
Returns {"status":"valid"} or {"status":"invalid","errors":[...]} listing every problem at once, each with a code, a path such as flows.main.steps[0].out, a line and column, and a message saying what would be right. Fix them all, then validate again.
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
