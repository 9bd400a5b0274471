package engine

import (
	"errors"
	"fmt"

	"github.com/stratum-go/stratum/ir"
)

// Sentinel errors. Every error the Engine returns for a domain outcome is an
// *Error that wraps exactly one of these, so callers branch with errors.Is
// and front ends map Error.Code to their wire codes.
var (
	// ErrInvalidSpec: the spec does not validate (Error.Diagnostics).
	ErrInvalidSpec = errors.New("spec validation failed")
	// ErrInvalidInput: the entry input violates the entry flow's input
	// contract (Error.Details), or a request argument is malformed.
	ErrInvalidInput = errors.New("entry input validation failed")
	// ErrRunNotFound: no run has this id (or the id is not a valid run id).
	ErrRunNotFound = errors.New("run not found")
	// ErrRunTerminal: the run has finished (completed, failed,
	// budget_exhausted); nothing is awaiting a result or a decision.
	ErrRunTerminal = errors.New("run is terminal")
	// ErrRunCancelled: the run was cancelled; its issuances are burnt.
	ErrRunCancelled = errors.New("run is cancelled")
	// ErrStaleToken: a dispatch or gate token is missing, superseded or
	// already accepted. Nothing changed; Error.State is the current state.
	ErrStaleToken = errors.New("stale token")
	// ErrNotAwaiting: the step is unknown, is not a client-executed step
	// or is not waiting for a result (or the gate for a decision).
	ErrNotAwaiting = errors.New("not awaiting")
	// ErrInvalidDecision: a gate decision other than approve, revise, kill.
	ErrInvalidDecision = errors.New("invalid gate decision")
	// ErrNoReviseRoute: revise on a gate whose on_revise is null. Nothing
	// changed; the gate token is still valid for approve or kill.
	ErrNoReviseRoute = errors.New("gate has no on_revise route")
	// ErrCarryReviseUnresolved: a carry on_revise value of the gate
	// resolves to nothing; the decision was refused before any change.
	ErrCarryReviseUnresolved = errors.New("carry revise value unresolved")
	// ErrRunLocked: another process held the run's lock for the whole
	// lock timeout.
	ErrRunLocked = errors.New("run is locked")
	// ErrCheckpointNotFound: no checkpoint has this label
	// (Error.Available lists the labels).
	ErrCheckpointNotFound = errors.New("checkpoint not found")
	// ErrInvalidLabel: a checkpoint label that is empty after trimming, or
	// too many checkpoints.
	ErrInvalidLabel = errors.New("invalid checkpoint label")
	// ErrFanoutInFlight: commit/revert while a fanout is running.
	ErrFanoutInFlight = errors.New("fanout in flight")
	// ErrInvalidReceipt: a usage receipt of the wrong shape.
	ErrInvalidReceipt = errors.New("invalid receipt")
	// ErrInvalidStep: a receipt names a step that does not exist.
	ErrInvalidStep = errors.New("invalid step")
	// ErrInvalidCursor: a poll or audit cursor beyond the event log, or
	// an audit's step cursor that names none of its steps.
	ErrInvalidCursor = errors.New("invalid event cursor")
	// ErrDigestMismatch: the persisted spec no longer hashes to the run's
	// revision digest.
	ErrDigestMismatch = errors.New("revision digest mismatch")
	// ErrCorrupt: the persisted run fails an integrity check.
	ErrCorrupt = errors.New("run is corrupt")
	// ErrRunLeased: another process drives the run (it holds the run's
	// lease, Error.Holder), or the run is a background run and only the
	// process holding its lease may drive it (docs/engine.md, "Leases").
	// Nothing changed.
	ErrRunLeased = errors.New("run is driven by another process")
	// ErrNotBackground: a background-flow call about a run that was not
	// started in the background.
	ErrNotBackground = errors.New("not a background run")
	// ErrBackgroundUnsupported: a spec that cannot run in the background
	// (a consumer fanout hands its items to the client).
	ErrBackgroundUnsupported = errors.New("spec cannot run in the background")
)

// ErrEffectNotAllowed is declared in policy.go.

// Error codes, stable strings for front ends (one per sentinel).
const (
	CodeInvalidSpec           = "invalid_spec"
	CodeInvalidInput          = "invalid_input"
	CodeRunNotFound           = "run_not_found"
	CodeRunTerminal           = "run_terminal"
	CodeRunCancelled          = "run_cancelled"
	CodeStaleToken            = "stale_token"
	CodeNotAwaiting           = "not_awaiting"
	CodeInvalidDecision       = "invalid_decision"
	CodeNoReviseRoute         = "missing_on_revise"
	CodeCarryReviseUnresolved = "carry_revise_unresolved"
	CodeRunLocked             = "run_locked"
	CodeCheckpointNotFound    = "checkpoint_not_found"
	CodeInvalidLabel          = "invalid_label"
	CodeFanoutInFlight        = "fanout_in_flight"
	CodeInvalidReceipt        = "invalid_receipt"
	CodeInvalidStep           = "invalid_step"
	CodeInvalidCursor         = "invalid_cursor"
	CodeDigestMismatch        = "digest_mismatch"
	CodeCorrupt               = "run_corrupt"
	CodeRunLeased             = "run_leased"
	CodeNotBackground         = "not_background"
	CodeBackgroundUnsupported = "consumer_dispatch_bg_unsupported"
	CodeInternal              = "internal"
)

var codes = []struct {
	err  error
	code string
}{
	{ErrInvalidSpec, CodeInvalidSpec},
	{ErrInvalidInput, CodeInvalidInput},
	{ErrRunNotFound, CodeRunNotFound},
	{ErrRunTerminal, CodeRunTerminal},
	{ErrRunCancelled, CodeRunCancelled},
	{ErrStaleToken, CodeStaleToken},
	{ErrNotAwaiting, CodeNotAwaiting},
	{ErrInvalidDecision, CodeInvalidDecision},
	{ErrNoReviseRoute, CodeNoReviseRoute},
	{ErrCarryReviseUnresolved, CodeCarryReviseUnresolved},
	{ErrRunLocked, CodeRunLocked},
	{ErrCheckpointNotFound, CodeCheckpointNotFound},
	{ErrInvalidLabel, CodeInvalidLabel},
	{ErrFanoutInFlight, CodeFanoutInFlight},
	{ErrInvalidReceipt, CodeInvalidReceipt},
	{ErrInvalidStep, CodeInvalidStep},
	{ErrInvalidCursor, CodeInvalidCursor},
	{ErrDigestMismatch, CodeDigestMismatch},
	{ErrCorrupt, CodeCorrupt},
	{ErrRunLeased, CodeRunLeased},
	{ErrNotBackground, CodeNotBackground},
	{ErrBackgroundUnsupported, CodeBackgroundUnsupported},
	{ErrEffectNotAllowed, CodeEffectNotAllowed},
}

// Error is a refusal or failure a front end reports to its caller. Message
// is written for a model to act on.
type Error struct {
	// Kind is the sentinel this error matches (ErrStaleToken, ...).
	Kind    error
	Message string
	RunID   string
	StepID  string
	// State is the run's current state where a refusal returns it (stale
	// tokens, terminal runs, not-awaiting steps). Nothing was changed.
	State *Response
	// Diagnostics are the spec problems of ErrInvalidSpec.
	Diagnostics ir.Diagnostics
	// Details are the value problems of ErrInvalidInput.
	Details []Detail
	// Available lists the checkpoint labels of ErrCheckpointNotFound.
	Available []string
	// HolderPID is the lock holder of ErrRunLocked, when known.
	HolderPID int
	// Holder is the lease owner of ErrRunLeased ("" when nobody holds
	// the lease of a background run right now).
	Holder string
	// Why says, for ErrNotAwaiting, which of its cases it is.
	Why NotAwaitingReason
	// Gate is the current view of the gate a stale gate decision was
	// about (token, round, what is under review, digest).
	Gate *GateView
	// Err is an underlying cause, if any.
	Err error
}

// NotAwaitingReason tells the cases of ErrNotAwaiting apart.
type NotAwaitingReason string

// The cases of ErrNotAwaiting.
const (
	// UnknownStep: the run has no step with that id.
	UnknownStep NotAwaitingReason = "unknown_step"
	// WrongKind: the step exists but is not of the kind the call is for
	// (a decision on a do step, a result for a gate).
	WrongKind NotAwaitingReason = "wrong_kind"
	// NotWaiting: the step is of the right kind but is not waiting now.
	NotWaiting NotAwaitingReason = "not_waiting"
)

// Detail is one problem with a request value.
type Detail struct {
	Code    string `json:"code"`
	Path    string `json:"path"`
	Message string `json:"message"`
}

func (e *Error) Error() string {
	if e.Err != nil && e.Message == "" {
		return e.Err.Error()
	}
	return e.Message
}

// Unwrap returns the sentinel (and the cause, when there is one).
func (e *Error) Unwrap() []error {
	if e.Err != nil {
		return []error{e.Kind, e.Err}
	}
	return []error{e.Kind}
}

// Code returns the stable code of the error's kind.
func (e *Error) Code() string { return CodeOf(e.Kind) }

// CodeOf returns the stable code of any error: the code of the engine
// sentinel it wraps, or CodeInternal.
func CodeOf(err error) string {
	for _, c := range codes {
		if errors.Is(err, c.err) {
			return c.code
		}
	}
	return CodeInternal
}

func newErr(kind error, runID, format string, args ...any) *Error {
	return &Error{Kind: kind, RunID: runID, Message: fmt.Sprintf(format, args...)}
}
