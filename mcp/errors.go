package mcp

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/stratum-go/stratum/driver"
	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/guard"
	"github.com/stratum-go/stratum/ir"
	"github.com/stratum-go/stratum/speckit"
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
	// CodeBackgroundUnavailable: the server was built without background
	// work (Deps.Background or Deps.Agents is nil).
	CodeBackgroundUnavailable = "background_unavailable"
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
	Holder    string        `json:"holder,omitzero" jsonschema:"the process driving the run, which holds its lease (run_leased)"`
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

// errorBody maps an error of a tool to the wire error. Engine refusals
// keep their code and context; anything else is internal (the message is
// kept: it is for the model and the user, and holds no secret). Every
// message says what to do next (refusalHint), and none repeats its code
// (the code is error.code).
func errorBody(tool string, err error) *ErrorBody {
	b := wireError(err)
	b.Message = withHint(stripCode(b.Code, b.Message), refusalHint(tool, b.Code))
	return b
}

func wireError(err error) *ErrorBody {
	// An agent run's refusal comes first: it may wrap the engine's error
	// of the flow it was tagged with.
	var are *driver.AgentRunError
	if errors.As(err, &are) {
		b := &ErrorBody{Code: are.Code, Message: are.Message}
		if are.Path != "" {
			b.Errors = []Problem{{Code: are.Code, Path: are.Path, Message: are.Message}}
		}
		return b
	}
	var ee *engine.Error
	if errors.As(err, &ee) {
		b := &ErrorBody{Code: ee.Code(), Message: ee.Error(), RunID: ee.RunID, StepID: ee.StepID,
			Available: ee.Available, HolderPID: ee.HolderPID, Holder: ee.Holder, State: (*currentState)(ee.State), Gate: ee.Gate}
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
		return &ErrorBody{Code: string(ge.Code), Message: ge.Message}
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

// stripCode drops a leading "code: " that a message repeats (a guard or a
// wrapped error prints its code first; the code is already error.code).
func stripCode(code, msg string) string {
	for code != "" && strings.HasPrefix(msg, code+": ") {
		msg = strings.TrimPrefix(msg, code+": ")
	}
	return msg
}

// withHint appends what to do to a message, as its own sentence.
func withHint(msg, hint string) string {
	if hint == "" {
		return msg
	}
	msg = strings.TrimRight(msg, " ")
	if !strings.HasSuffix(msg, ".") {
		msg += "."
	}
	return msg + " " + hint
}

// refusalHints say what to do after a refusal, by error code; the engine's
// and the guard's messages say what went wrong. A code missing here has a
// message that already says what to do (run_locked: "retry shortly",
// missing_on_revise: "decide approve or kill", invalid_cursor: "use 0..N").
var refusalHints = map[string]string{
	engine.CodeInvalidSpec:                "Fix every problem in error.errors (each has a line, a column and what would be right), check the spec with stratum_validate, then plan again; nothing was created.",
	engine.CodeInvalidInput:               "Pass input with exactly the entry flow's input fields and types (error.errors lists each problem); nothing was created.",
	engine.CodeRunNotFound:                "Use the runId that stratum_plan returned.",
	engine.CodeRunTerminal:                "The run is over: stratum_audit shows how it ended; start a new run with stratum_plan if the work must be done again.",
	engine.CodeRunCancelled:               "The run was cancelled for good: start a new run with stratum_plan if the work must still be done.",
	engine.CodeStaleToken:                 "Nothing changed: error.state is the run's current state; report a step only with the dispatchToken of its entry in error.state.ready (a step not listed there needs nothing from you).",
	engine.CodeNotAwaiting:                "Nothing changed: report only the ids listed in ready, and decide only the gates listed in waiting with kind gate (stratum_resume returns both).",
	engine.CodeInvalidDecision:            "decision is approve, revise or kill.",
	engine.CodeCheckpointNotFound:         "Use one of the labels in error.available, or save one first with stratum_commit.",
	engine.CodeInvalidLabel:               "Pass a non-empty label.",
	engine.CodeFanoutInFlight:             "Wait until the fanout settles (poll with stratum_flow_poll), then call again.",
	engine.CodeInvalidReceipt:             "Nothing was recorded: fix the receipt and report it again.",
	engine.CodeInvalidStep:                "Use a step id of the run (stratum_audit lists them under steps), or leave stepId out.",
	engine.CodeDigestMismatch:             "The stored spec of this run no longer matches its digest: tell the user; the run cannot continue.",
	engine.CodeCorrupt:                    "The run's stored record is damaged: tell the user (stratum audit --verify RUN shows where); the run cannot continue.",
	engine.CodeEffectNotAllowed:           "This server does not allow that effect: change the spec (or ask the user to change the server's policy); nothing was created.",
	engine.CodeRunLeased:                  "Nothing changed: the process in error.holder drives this run; for a background run watch it with stratum_flow_bg_poll (its gates are still yours to resolve with stratum_gate_resolve when the user decides).",
	engine.CodeNotBackground:              "Use the tool for runs you drive yourself (stratum_flow_poll, stratum_flow_cancel).",
	engine.CodeBackgroundUnsupported:      "Nothing was created: run this flow with stratum_plan and do its steps yourself, or change the fanout as the message says.",
	driver.CodeFlowNotRunning:             "Tag the agent run only with a running flow (stratum_flow_poll shows its status), or leave flow out.",
	driver.CodeFlowAdmissionFailed:        "The flow's record cannot be read now: tell the user; or leave flow out.",
	driver.CodeAgentRunFailed:             "The agent did not run: the message says why (a missing CLI, a login); tell the user.",
	CodeBackgroundUnavailable:             "This server does not run work in the background: use stratum_plan and do the steps yourself.",
	CodeInvalidArguments:                  "Nothing changed: call again with the arguments fixed.",
	CodeInternal:                          "This is a fault in Stratum, not in your call: tell the user; the server keeps serving.",
	string(guard.CodeInvalidArgument):     "Nothing changed: call again with the arguments fixed (the tool's input schema lists them).",
	string(guard.CodeNotFound):            "Register the resource first with stratum_guard_register, or check resource_id.",
	string(guard.CodeStaleFromState):      "Read the current state with stratum_guard_history and ask for a move from it.",
	string(guard.CodeIllegalEdge):         "Only the edges of the registered graph can be taken (stratum_guard_history shows the state; the graph is the one you registered).",
	string(guard.CodeLockTimeout):         "Another process holds the resource: call again in a moment.",
	string(guard.CodeLockLost):            "Nothing was written: call again.",
	string(guard.CodeTampered):            "The resource's record was changed outside Stratum: tell the user; nothing was written.",
	string(guard.CodeLedgerCorrupt):       "The resource's ledger is damaged: tell the user; nothing was written.",
	string(guard.CodeOverrideUnavailable): "Only a person can authorize this: ask the user for a signature; never make one up.",
	string(speckit.DirectoryNotFound):     "Pass the path of the spec-kit tasks directory (absolute, or relative to the server's working directory).",
	string(speckit.NoTasks):               "The directory holds no task files (*.md): point tasks_dir at the tasks directory itself.",
	string(guard.CodeInternal):            "This is a fault in Stratum, not in your call: tell the user.",
}

// toolHints override refusalHints for one tool.
var toolHints = map[[2]string]string{
	{"stratum_gate_resolve", engine.CodeStaleToken}:  "Nothing changed: check that the person decided on what error.gate reviews now (its underReview and digest), then call again with its gateToken.",
	{"stratum_gate_resolve", engine.CodeNotAwaiting}: "Nothing changed: decide only a gate listed in waiting with kind gate (stratum_resume lists them).",
}

func refusalHint(tool, code string) string {
	if h, ok := toolHints[[2]string{tool, code}]; ok {
		return h
	}
	return refusalHints[code]
}

// argError is a request argument this package refuses before calling the
// engine (beyond what the input schema checks): a whole sentence naming
// the argument, what it must be, and what to write instead.
type argError struct {
	msg string
}

func (e *argError) Error() string { return e.msg }

func argErrorf(format string, args ...any) error {
	return &argError{msg: fmt.Sprintf(format, args...)}
}

// codedError is a refusal a package reported as a code and a message
// (speckit's response variant) rather than as a typed Go error.
type codedError struct {
	code, msg string
}

func (e *codedError) Error() string { return e.code + ": " + e.msg }
