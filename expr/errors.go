package expr

import "strconv"

// Code classifies an expression failure. The six codes are the reference's;
// callers branch on them (an ensure records "<code>: <message>").
type Code string

const (
	// CodeParse: the source is not a well-formed expression.
	CodeParse Code = "parse_error"
	// CodeUnknownIdentifier: a name that is not bound in this context.
	CodeUnknownIdentifier Code = "unknown_identifier"
	// CodeUnknownFunction: a call to a name that is not a builtin.
	CodeUnknownFunction Code = "unknown_function"
	// CodeType: an operand or argument of the wrong type, a missing
	// member, an index out of range, a division by zero or an overflow.
	CodeType Code = "type_error"
	// CodeValidation: a value the language refuses on purpose: a blocked
	// key, a regex outside the safe dialect, a file path outside the
	// workspace, a file function without a workspace.
	CodeValidation Code = "validation_error"
	// CodeResourceLimit: a size, depth or time bound was exceeded.
	CodeResourceLimit Code = "resource_limit"
)

// Error is every failure Compile and Eval report. Error() is the reason
// string of the spec, "<code>: <message>".
type Error struct {
	Code    Code
	Message string
	// Offset is the position of a parse error in UTF-16 code units from
	// the start of the source (the unit the reference counts in), or -1
	// when the failure has no position.
	Offset int
	// Err is the underlying cause when there is one (a context error for
	// a cancelled evaluation, an I/O error from a file function).
	Err error
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// Unwrap returns the underlying cause, if any.
func (e *Error) Unwrap() error { return e.Err }

func newError(code Code, msg string) *Error {
	return &Error{Code: code, Message: msg, Offset: -1}
}

func typeErrorf(msg string) *Error { return newError(CodeType, msg) }

// parseError builds a parse error at a byte offset of src; the message gets
// the UTF-16 position appended.
func parseError(src string, byteOff int, msg string) *Error {
	pos := utf16Len(src[:byteOff])
	return &Error{Code: CodeParse, Message: msg + " at position " + strconv.Itoa(pos), Offset: pos}
}
