package expr

import (
	"context"
	"strconv"
	"strings"
)

// FileKind is what a file function found at the path it looked up.
type FileKind string

const (
	// FileRegular: a regular file (the only kind file_exists accepts).
	FileRegular FileKind = "a regular file"
	// FileDirectory: a directory.
	FileDirectory FileKind = "a directory"
	// FileOther: a FIFO, a socket or a device.
	FileOther FileKind = "not a regular file"
	// FileMissing: nothing at that path.
	FileMissing FileKind = "nothing"
	// FileDanglingLink: a symbolic link to nothing.
	FileDanglingLink FileKind = "a dangling symbolic link"
	// FileSymlinkLoop: symbolic links that lead to each other.
	FileSymlinkLoop FileKind = "a symbolic link loop"
	// FileUnreadable: the lookup failed (a permission error, for example).
	FileUnreadable FileKind = "an entry that could not be read"
)

// FileCheck is one call of file_exists or file_contains: what it was asked,
// where it looked and what it found, so that a failed predicate can say
// which path was looked up under which root (docs/expressions.md, "Files").
type FileCheck struct {
	// Func is "file_exists" or "file_contains".
	Func string
	// Path is the path as the expression gave it; Text is the text
	// file_contains looked for.
	Path, Text string
	// Root is the workspace root, made absolute ("" when there is none).
	Root string
	// Resolved is the absolute path looked up, symlinks inside the root
	// followed where it exists ("" when the path was refused before it
	// could be resolved: empty, absolute, or escaping the root).
	Resolved string
	// Found is what was at Resolved ("" when the lookup was refused).
	Found FileKind
	// Size is the file's size in bytes, for a regular file.
	Size int64
	// Result is the function's value; false when Err is set.
	Result bool
	// Err is the refusal (a *Error), when the call failed.
	Err error
}

func (fc FileCheck) refused(err *Error) FileCheck {
	fc.Result, fc.Err = false, err
	return fc
}

// maxQuoted bounds how much of a path or text an explanation quotes.
const maxQuoted = 120

func quoteShort(s string) string {
	if len(s) > maxQuoted {
		cut := maxQuoted
		for cut > 0 && s[cut]&0xC0 == 0x80 {
			cut--
		}
		return quoteJSON(s[:cut]) + "…"
	}
	return quoteJSON(s)
}

// String describes the check in one sentence, for failure texts:
//
//	file_exists("src/${input.module}.go") looked up /ws/src/${input.module}.go in workspace root /ws: found nothing (the path contains "${", which file predicates do not interpolate: it was looked up literally)
func (fc FileCheck) String() string {
	var b strings.Builder
	b.WriteString(fc.Func + "(" + quoteShort(fc.Path))
	if fc.Func == "file_contains" {
		b.WriteString(", " + quoteShort(fc.Text))
	}
	b.WriteString(")")
	if fc.Resolved != "" {
		b.WriteString(" looked up " + fc.Resolved)
	}
	if fc.Root != "" {
		b.WriteString(" in workspace root " + fc.Root)
	}
	switch {
	case fc.Err != nil:
		b.WriteString(": refused: " + fc.Err.Error())
	case fc.Found == FileRegular && fc.Func == "file_contains" && !fc.Result:
		b.WriteString(": found a regular file of " + strconv.FormatInt(fc.Size, 10) + " bytes that does not contain the text")
	case fc.Found == FileRegular && fc.Func == "file_contains":
		b.WriteString(": found the text")
	case fc.Found != "":
		b.WriteString(": found " + string(fc.Found))
	}
	if strings.Contains(fc.Path, "${") || strings.Contains(fc.Text, "${") {
		b.WriteString(` (the path or text contains "${", which file predicates do not interpolate: it was used literally)`)
	}
	return b.String()
}

// MaxFileChecks is how many file checks a [Trace] keeps; an evaluation
// may call the file functions more often, and Trace.More counts the rest.
const MaxFileChecks = 16

// Trace is the outcome of a predicate with what it looked at: the file
// checks its evaluation made, in order.
type Trace struct {
	// Holds is the predicate's verdict (false when the evaluation failed).
	Holds bool
	// Files are the file_exists and file_contains calls made, at most
	// MaxFileChecks of them; More counts the calls left out.
	Files []FileCheck
	More  int
}

// Explain describes the file checks for a failure text, one sentence
// each joined by "; ", or "" when the evaluation made none.
func (t Trace) Explain() string {
	if len(t.Files) == 0 {
		return ""
	}
	parts := make([]string, 0, len(t.Files)+1)
	for _, fc := range t.Files {
		parts = append(parts, fc.String())
	}
	if t.More > 0 {
		parts = append(parts, "and "+strconv.Itoa(t.More)+" more file checks")
	}
	return strings.Join(parts, "; ")
}

// EvalPredicateTrace is [Program.EvalPredicate] that also reports the file
// checks the evaluation made, so that a failed file predicate can say
// which path it looked up under which root. The Trace is filled even when
// the evaluation fails (a refused path is a check with Err set). It costs
// nothing more than EvalPredicate for expressions that call no file
// function.
func (p *Program) EvalPredicateTrace(ctx context.Context, b Bindings, opts *EvalOptions) (Trace, error) {
	var t *Trace
	if p.usesFiles {
		t = new(Trace) // only then: the evaluator's fields escape
	}
	v, err := p.run(ctx, b, opts, t)
	var ok bool
	if err == nil {
		var perr *Error
		if ok, perr = predicate(v); perr != nil {
			err = perr
		}
	}
	var out Trace
	if t != nil {
		out = *t
	}
	out.Holds = ok
	if err != nil {
		return out, err
	}
	return out, nil
}

func (t *Trace) record(fc FileCheck) {
	if len(t.Files) < MaxFileChecks {
		t.Files = append(t.Files, fc)
		return
	}
	t.More++
}
