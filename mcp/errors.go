package mcp

import (
	"context"
	"errors"
	"fmt"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/guard"
	"github.com/stratum-go/stratum/ir"
)

// Codes that this package adds to the engine's (engine.Code*): refusals
// decided before the engine is called.
const (
	// CodeInvalidArguments: the arguments do not match the tool's input
	// schema (a missing or wrongly typed parameter, an unknown one).
	CodeInvalidArguments = "invalid_arguments"
	// CodeCancelled: the client cancelled the call (or the server is
	// stopping) before it finished; nothing was acknowledged.
	CodeCancelled = "call_cancelled"
	// CodeInternal: a fault inside Stratum. The message says what; the
	// server keeps serving.
	CodeInternal = engine.CodeInternal
)

// ErrorBody is the error object of a refused call.
type ErrorBody struct {
	Code    string `json:"code" jsonschema:"stable error code, e.g. invalid_spec, invalid_input, invalid_arguments, run_not_found, stale_token, not_awaiting, run_terminal, run_cancelled, run_locked, checkpoint_not_found"`
	Message string `json:"message" jsonschema:"what went wrong and what to do about it"`
	RunID   string `json:"runId,omitzero" jsonschema:"the run concerned"`
	StepID  string `json:"stepId,omitzero" jsonschema:"the step concerned"`
	// Errors are the spec's diagnostics (invalid_spec) or the input's
	// problems (invalid_input).
	Errors []Problem `json:"errors,omitzero" jsonschema:"every problem found: code, path and (for a spec) line and column; fix them all before calling again"`
	// State is the run's current state for refusals that leave it
	// unchanged (stale token, not awaiting, terminal run).
	State     *currentState `json:"state,omitzero" jsonschema:"the run's current state, shaped like a stratum_resume answer (status, ready with the current dispatch tokens, waiting, ledger, ...); nothing was changed"`
	Available []string      `json:"available,omitzero" jsonschema:"the checkpoint labels that exist (checkpoint_not_found)"`
	HolderPID int           `json:"holderPid,omitzero" jsonschema:"the process holding the run's lock (run_locked)"`
	// Gate is the gate's current view on a stale gate decision.
	Gate *engine.GateView `json:"gate,omitzero" jsonschema:"the gate's current round (stale gate decision): gateToken, round, what is under review and its digest; decide again with these"`
}

// Problem is one positioned problem of a spec or a request value.
type Problem struct {
	Code    string `json:"code" jsonschema:"problem code"`
	Path    string `json:"path" jsonschema:"where: a dotted path from the document root (e.g. flows.main.steps[0].out) or the input path"`
	Line    int    `json:"line,omitzero" jsonschema:"1-based line in the spec text as sent (for a JSON object spec: in its JSON text)"`
	Column  int    `json:"column,omitzero" jsonschema:"1-based column"`
	Message string `json:"message" jsonschema:"what is wrong and what would be right"`
}

// currentState is an engine.Response inside an error. Its advertised
// schema is a plain object (see typeSchemas): the full schema is on every
// tool that returns one, and repeating it in every error would bloat
// every tool's schema.
type currentState engine.Response

// errorEnvelope is the payload of every refused call.
type errorEnvelope struct {
	Status string     `json:"status"`
	Error  *ErrorBody `json:"error"`
}

func diagnosticsProblems(ds ir.Diagnostics) []Problem {
	out := make([]Problem, len(ds))
	for i, d := range ds {
		out[i] = Problem{Code: d.Code, Path: d.Path, Line: d.Line, Column: d.Column, Message: d.Message}
	}
	return out
}

// errorBody maps an error to the wire error. Engine refusals keep their
// code and context; anything else is internal (the message is kept: it
// is for the model and the user, and holds no secret).
func errorBody(err error) *ErrorBody {
	var ee *engine.Error
	if errors.As(err, &ee) {
		b := &ErrorBody{Code: ee.Code(), Message: ee.Error(), RunID: ee.RunID, StepID: ee.StepID,
			Available: ee.Available, HolderPID: ee.HolderPID, State: (*currentState)(ee.State), Gate: ee.Gate}
		switch {
		case len(ee.Diagnostics) > 0:
			b.Errors = diagnosticsProblems(ee.Diagnostics)
		case len(ee.Details) > 0:
			b.Errors = make([]Problem, len(ee.Details))
			for i, d := range ee.Details {
				b.Errors[i] = Problem{Code: d.Code, Path: d.Path, Message: d.Message}
			}
		}
		return b
	}
	var ge *guard.Error
	if errors.As(err, &ge) {
		return &ErrorBody{Code: string(ge.Code), Message: ge.Error()}
	}
	var ce *codedError
	if errors.As(err, &ce) {
		return &ErrorBody{Code: ce.code, Message: ce.msg}
	}
	var ae *argError
	if errors.As(err, &ae) {
		return &ErrorBody{Code: CodeInvalidArguments, Message: ae.Error()}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return &ErrorBody{Code: CodeCancelled, Message: "the call was cancelled before it finished: " + err.Error()}
	}
	return &ErrorBody{Code: CodeInternal, Message: err.Error()}
}

// argError is a request argument this package refuses before calling the
// engine (beyond what the input schema checks).
type argError struct {
	param string
	msg   string
}

func (e *argError) Error() string { return fmt.Sprintf("%s: %s", e.param, e.msg) }

func argErrorf(param, format string, args ...any) error {
	return &argError{param: param, msg: fmt.Sprintf(format, args...)}
}

// codedError is a refusal a package reported as a code and a message
// (speckit's response variant) rather than as a typed Go error.
type codedError struct {
	code, msg string
}

func (e *codedError) Error() string { return e.code + ": " + e.msg }
