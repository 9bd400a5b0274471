package mcp

import (
	"context"

	"github.com/stratum-go/stratum/speckit"
)

// CompileSpeckitResult is the answer of stratum_compile_speckit.
type CompileSpeckitResult struct {
	Status   string                `json:"status" jsonschema:"ok"`
	YAML     string                `json:"yaml" jsonschema:"the compiled v1 spec (already validated): pass it to stratum_plan as spec"`
	FlowName string                `json:"flow_name" jsonschema:"the generated flow's name"`
	Steps    []speckit.StepSummary `json:"steps" jsonschema:"one step per task file, in order: id, title, parallel, the ensure predicates compiled from its acceptance criteria, and the criteria left to your judgment"`
}

func (s *server) compileSpeckitTool() tool {
	return newTool(s, toolMeta{
		name:  "stratum_compile_speckit",
		title: "Compile spec-kit tasks into a flow",
		description: `Compile a GitHub spec-kit tasks directory (one markdown file per task, with an Acceptance Criteria checklist) into a Stratum v1 flow spec: one step per task in file order, [P] tasks in parallel, criteria such as "file X exists" or "tests pass" turned into ensure predicates. Call it when the user has spec-kit tasks they want executed as a flow.
Returns ok with yaml (a validated spec: plan it with stratum_plan), flow_name and steps. A missing directory is refused with error.code directory_not_found; a task file that cannot be compiled with the compiler's error code.
Example: stratum_compile_speckit {"tasks_dir": "specs/001-login/tasks", "flow_name": "login"}`,
		statuses: []string{speckit.StatusOK},
		readOnly: true,
	}, func(ctx context.Context, c *call, in speckit.Request) (*CompileSpeckitResult, error) {
		r := speckit.CompileTool(ctx, in)
		if r.Status != speckit.StatusOK {
			return nil, &codedError{code: string(r.ErrorType), msg: r.Message}
		}
		return &CompileSpeckitResult{Status: r.Status, YAML: r.YAML, FlowName: r.FlowName, Steps: nonNil(r.Steps)}, nil
	})
}
