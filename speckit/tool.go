package speckit

import (
	"context"
	"errors"
)

// Request is the argument of the MCP tool stratum_compile_speckit.
type Request struct {
	// TasksDir is the directory holding the task files.
	TasksDir string `json:"tasks_dir" jsonschema:"directory holding the spec-kit task files (*.md), read in file-name order"`
	// FlowName names the generated flow; empty means DefaultFlowName.
	FlowName string `json:"flow_name,omitempty" jsonschema:"name of the generated flow (default tasks; entry is reserved)"`
}

// Response is the result of the MCP tool: {status: "ok", yaml, flow_name,
// steps} or {status: "error", error_type, message}. Exactly the fields of
// its variant are non-empty, so the JSON encoding carries no others.
type Response struct {
	Status    string        `json:"status"`
	YAML      string        `json:"yaml,omitempty"`
	FlowName  string        `json:"flow_name,omitempty"`
	Steps     []StepSummary `json:"steps,omitempty"`
	ErrorType ErrorType     `json:"error_type,omitempty"`
	Message   string        `json:"message,omitempty"`
}

// StepSummary describes one compiled task.
type StepSummary struct {
	ID       string `json:"id" jsonschema:"the step id in the compiled spec"`
	Title    string `json:"title" jsonschema:"the task's title"`
	Parallel bool   `json:"parallel" jsonschema:"the task is marked [P]: it runs in parallel with its neighbours"`
	// Ensures are the predicates compiled from the task's criteria (the
	// step's ensure list without the closing result.done check).
	Ensures []Predicate `json:"ensures" jsonschema:"the ensure predicates compiled from the acceptance criteria"`
	// Judgment are the criteria left to the agent's judgment.
	Judgment []string `json:"judgment" jsonschema:"the criteria left to your judgment (not checked by Stratum)"`
}

// Response statuses.
const (
	StatusOK    = "ok"
	StatusError = "error"
)

// CompileTool runs [Compile] with the MCP tool's request and response
// shapes.
// Failures are responses with status "error", never Go errors.
func CompileTool(ctx context.Context, req Request) Response {
	res, err := Compile(ctx, req.TasksDir, req.FlowName)
	if err != nil {
		var ce *Error
		if !errors.As(err, &ce) {
			ce = &Error{Type: CompileFailed, Message: err.Error()}
		}
		return Response{Status: StatusError, ErrorType: ce.Type, Message: ce.Message}
	}
	steps := make([]StepSummary, len(res.Tasks))
	for i, t := range res.Tasks {
		steps[i] = StepSummary{ID: t.ID, Title: t.Title, Parallel: t.Parallel, Ensures: t.Ensures, Judgment: t.Judgment}
	}
	return Response{Status: StatusOK, YAML: string(res.YAML), FlowName: res.FlowName, Steps: steps}
}
