package ir

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Error codes. The structural and semantic codes are the reference
// validator's (docs/spec-language.md, "Error codes"); the YAML_* codes are this port's, for
// problems found before validation can start.
const (
	// Loading.
	CodeYAMLSyntax       = "YAML_SYNTAX"        // the text is not one well-formed YAML document
	CodeYAMLDuplicateKey = "YAML_DUPLICATE_KEY" // a mapping repeats a key
	CodeYAMLLimit        = "YAML_LIMIT"         // size, nesting or alias expansion over the bound

	// CodeExprSyntax: an expression (ensure expr, when, iterate.until, a
	// set value, or the expression a file predicate stands for) does not
	// parse. This port's: the reference parses no expression at validation.
	CodeExprSyntax = "EXPR_SYNTAX"

	// Structural phase.
	CodeSchemaInvalid  = "SCHEMA_INVALID"
	CodeUnknownField   = "E2_UNKNOWN_FIELD"
	CodeConstructMix   = "E2_CONSTRUCT_MIX"
	CodeFieldForKind   = "E2_FIELD_FOR_KIND"
	CodeReservedField  = "E2_RESERVED_FIELD"
	CodeContractType   = "CONTRACT_INVALID_TYPE"
	CodeContractRef    = "CONTRACT_UNKNOWN_REF"
	CodeContractRecur  = "CONTRACT_RECURSIVE_REF"
	CodeUnknownEntry   = "FLOW_UNKNOWN_ENTRY"
	CodeSubflowUnknown = "SUBFLOW_UNKNOWN"
	CodeWithMismatch   = "SUBFLOW_WITH_MISMATCH"
	CodeDuplicateID    = "STEP_DUPLICATE_ID"
	CodeUnknownTarget  = "ROUTING_UNKNOWN_TARGET"
	CodeSelfTarget     = "ROUTING_SELF_TARGET"
	CodeCycle          = "ROUTING_CYCLE"
	CodeOverSingleRef  = "FANOUT_OVER_SINGLE_REF"
	CodeRefInvalid     = "REF_INVALID"
	CodeRefScope       = "REF_INVALID_SCOPE"
	CodeCarryInExpr    = "CARRY_REF_IN_EXPRESSION"
	CodeCarryPathRes   = "CARRY_PATH_RESERVED"
	CodeUnknownStep    = "REF_UNKNOWN_STEP"
	CodeFinalOut       = "FANOUT_OUTPUT_REQUIRES_FINAL_OUT"
	CodeOutRequired    = "REF_OUTPUT_CONTRACT_REQUIRED"
	CodeUnknownPath    = "REF_UNKNOWN_PATH"
	CodeWorktreeFS     = "CONSUMER_WORKTREE_FILESYSTEM_UNSUPPORTED"
	CodeWorktreeGate   = "CONSUMER_WORKTREE_GATE_REQUIRED"
	CodeCarryRootOnly  = "CARRY_ROOT_ONLY"
	CodeCarryName      = "CARRY_NAME_CONFLICT"
	CodeCarryRef       = "CARRY_REF_INVALID"
	CodeCarryCond      = "CARRY_INITIAL_SOURCE_CONDITIONAL"
	CodeUnknownCarry   = "REF_UNKNOWN_CARRY"
	CodeCarryBefore    = "CARRY_REF_BEFORE_INITIAL"
	CodeCarryGate      = "CARRY_UNKNOWN_GATE"
	CodeCarryNull      = "CARRY_REVISE_TARGET_NULL"
	CodeCarryMisses    = "CARRY_REVISE_MISSES_CONSUMER"
	CodeCarryNotAfter  = "CARRY_REVISE_GATE_NOT_AFTER_CONSUMER"
	CodeReviseRounds   = "GATE_REVISE_REQUIRES_MAX_ROUNDS"
	CodeReviseAncestor = "GATE_REVISE_NOT_ANCESTOR"
	CodeSubflowRecur   = "SUBFLOW_RECURSIVE"
	CodeSubflowBody    = "SUBFLOW_BODY_RESTRICTED"
)

// Diagnostic is one problem found in a spec.
type Diagnostic struct {
	// Code is one of the Code* constants.
	Code string `json:"code"`
	// Path locates the offending value from the document root, in the
	// reference's form: "flows.main.steps[0].ensure[0].expr". The root is "".
	Path string `json:"path"`
	// Line and Column are 1-based positions in the source text of the value
	// (or key) at Path; for a missing field, of the mapping that lacks it.
	Line   int `json:"line"`
	Column int `json:"column"`
	// Message says what is wrong and what would be right.
	Message string `json:"message"`
}

// String formats the diagnostic as "LINE:COL: CODE: message (at PATH)".
func (d Diagnostic) String() string {
	return fmt.Sprintf("%d:%d: %s: %s (at %s)", d.Line, d.Column, d.Code, d.Message, displayPath(d.Path))
}

func displayPath(p string) string {
	if p == "" {
		return "document root"
	}
	return p
}

// Diagnostics is the list of problems found in one spec, sorted by position.
// A non-empty Diagnostics is also an error.
type Diagnostics []Diagnostic

// Error summarises the list: the first diagnostic and how many follow.
func (ds Diagnostics) Error() string {
	switch len(ds) {
	case 0:
		return "no diagnostics"
	case 1:
		return "invalid spec: " + ds[0].String()
	}
	return fmt.Sprintf("invalid spec: %s (and %d more)", ds[0].String(), len(ds)-1)
}

// Has reports whether some diagnostic has the code (and, unless path is
// "*", the path).
func (ds Diagnostics) Has(code, path string) bool {
	for _, d := range ds {
		if d.Code == code && (path == "*" || d.Path == path) {
			return true
		}
	}
	return false
}

// MaxDiagnostics bounds the problems listed for one spec. A spec with more
// gets the first ones found and a final YAML_LIMIT diagnostic saying so: a
// hostile document cannot make the report itself enormous.
const MaxDiagnostics = 1000

// diags collects diagnostics during one validation.
type diags struct {
	list    []Diagnostic
	seen    map[string]struct{}
	dropped int // diagnostics beyond MaxDiagnostics
}

// full reports whether no further diagnostic will be kept.
func (d *diags) full() bool { return len(d.list) >= MaxDiagnostics }

// addAt is add for a location built into a string only if it is kept.
func (d *diags) addAt(n *node, code string, at loc, format string, args ...any) {
	if d.full() {
		d.dropped++
		return
	}
	d.add(n, code, at.String(), format, args...)
}

// add records a diagnostic at node n (which may be nil when the position is
// unknown). An exact repeat (same code, path and message, as when several
// references meet the same broken producer) is dropped.
func (d *diags) add(n *node, code, path, format string, args ...any) {
	if d.full() {
		d.dropped++
		return
	}
	msg := format
	if len(args) > 0 {
		msg = fmt.Sprintf(format, args...)
	}
	key := code + "\x00" + path + "\x00" + msg
	if d.seen == nil {
		d.seen = make(map[string]struct{})
	}
	if _, dup := d.seen[key]; dup {
		return
	}
	d.seen[key] = struct{}{}
	line, col := 1, 1
	if n != nil {
		line, col = int(n.line), int(n.col)
	}
	d.list = append(d.list, Diagnostic{Code: code, Path: path, Line: line, Column: col, Message: msg})
}

func (d *diags) empty() bool { return len(d.list) == 0 }

// sorted returns the diagnostics ordered by position, then path, then code.
func (d *diags) sorted() Diagnostics {
	out := Diagnostics(d.list)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		if a.Column != b.Column {
			return a.Column < b.Column
		}
		if a.Path != b.Path {
			return a.Path < b.Path
		}
		return a.Code < b.Code
	})
	if d.dropped > 0 {
		out = append(out, Diagnostic{Code: CodeYAMLLimit, Line: 1, Column: 1,
			Message: fmt.Sprintf("at least %d more problems were found; only the first %d are listed: fix these and validate again", d.dropped, MaxDiagnostics)})
	}
	return out
}

// joinPath appends a mapping key to a path.
func joinPath(base, key string) string {
	if base == "" {
		return key
	}
	return base + "." + key
}

// indexPath appends a list position to a path.
func indexPath(base string, i int) string {
	var b strings.Builder
	b.Grow(len(base) + 6)
	b.WriteString(base)
	b.WriteByte('[')
	b.WriteString(itoa(i))
	b.WriteByte(']')
	return b.String()
}

func itoa(i int) string { return strconv.Itoa(i) }

// maxListedNames bounds the names a message lists (declared contracts,
// flows, fields, carry variables): enough to point at the right one, and a
// spec with thousands of names cannot make every message that large.
const maxListedNames = 12

// listNames joins up to maxListedNames of n names, name(i) giving each,
// and says how many more there are.
func listNames(n int, name func(int) string) string {
	var b strings.Builder
	for i := range min(n, maxListedNames) {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(name(i))
	}
	if n > maxListedNames {
		fmt.Fprintf(&b, " and %d more", n-maxListedNames)
	}
	return b.String()
}
