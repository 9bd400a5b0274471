package guard

import (
	"errors"
	"fmt"
)

// Code is an error slug: the error_type of the error envelope
// ([ErrorEnvelope.ErrorType]).
type Code string

// The guard's error codes (docs/guard.md, "Error codes").
const (
	CodeAlreadyRegistered            Code = "guard_already_registered"
	CodeNotFound                     Code = "guard_not_found"
	CodeTampered                     Code = "guard_tampered"
	CodeIllegalEdge                  Code = "illegal_edge"
	CodeStaleFromState               Code = "stale_from_state"
	CodeIdempotencyConflict          Code = "idempotency_conflict"
	CodeLedgerCorrupt                Code = "ledger_corrupt"
	CodeInvalidStateName             Code = "invalid_state_name"
	CodeInvalidWorkspaceRoot         Code = "invalid_workspace_root"
	CodeCommandExecutionDisabled     Code = "command_execution_disabled"
	CodeParanoidNeedsTrustedEvidence Code = "paranoid_edge_needs_trusted_evidence"
	CodeEvidenceParseError           Code = "evidence_parse_error"
	CodeOverrideUnavailable          Code = "override_unavailable"
	CodeResourceIDMismatch           Code = "resource_id_mismatch"
	CodeEngineOwned                  Code = "guard_engine_owned"
	CodeIncompatibleUpgrade          Code = "incompatible_policy_upgrade"
	CodeDescriptorUnavailable        Code = "upgrade_descriptor_unavailable"
	CodeDescriptorMismatch           Code = "upgrade_descriptor_mismatch"
	CodePolicyChecksumMismatch       Code = "policy_checksum_mismatch"
)

// Codes for failures that are not guard decisions (the reference used
// exception class names here; these are stable instead).
const (
	// CodeInvalidArgument: the request is malformed (not an object, an
	// unknown or missing argument, a wrong type, a value with no canonical
	// JSON form, a bad resource id).
	CodeInvalidArgument Code = "invalid_argument"
	// CodeLockTimeout: the resource lock was not acquired within the lock
	// timeout (another writer holds it).
	CodeLockTimeout Code = "lock_timeout"
	// CodeLockLost: the lock file was replaced while held (the fence
	// failed); nothing was written.
	CodeLockLost Code = "lock_lost"
	// CodeInternal: an unexpected failure (I/O error, cancelled call).
	CodeInternal Code = "internal_error"
)

// Error is a guard failure with a [Code] a caller can branch on (with
// errors.As, or [CodeOf]); [Envelope] gives its wire form.
type Error struct {
	Code    Code
	Message string
	// Err is the underlying cause, if any.
	Err error
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

func (e *Error) Unwrap() error { return e.Err }

func errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

func wrapInternal(err error, format string, args ...any) *Error {
	return &Error{Code: CodeInternal, Message: fmt.Sprintf(format, args...) + ": " + err.Error(), Err: err}
}

// CodeOf returns the code of err: its [*Error]'s code, or [CodeInternal]
// for any other non-nil error, or "" for nil.
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}

// ErrorEnvelope is the wire form of a failure on both front ends:
// {"status":"error","error_type":<code>,"message":...}.
type ErrorEnvelope struct {
	Status    string `json:"status"`
	ErrorType Code   `json:"error_type"`
	Message   string `json:"message"`
}

// Envelope turns any error into its wire form, with the code [CodeOf]
// gives.
func Envelope(err error) ErrorEnvelope {
	var e *Error
	if errors.As(err, &e) {
		return ErrorEnvelope{Status: "error", ErrorType: e.Code, Message: e.Message}
	}
	return ErrorEnvelope{Status: "error", ErrorType: CodeInternal, Message: err.Error()}
}
