package ir

import (
	"errors"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/stratum-go/stratum/expr"
)

// This file parses the expressions of a spec at validation, a deliberate
// difference from the reference, which parses none and so lets a broken
// expression burn every attempt at run time (docs/decisions/0020).

// compiled is the outcome of compiling one expression source.
type compiled struct {
	prog *expr.Program
	err  *expr.Error
}

// compileExpr compiles src once per validation: a spec often repeats an
// expression, and the consumer-worktree rule asks again.
func (v *validator) compileExpr(src string) compiled {
	if c, ok := v.exprs[src]; ok {
		return c
	}
	var c compiled
	p, err := expr.Compile(src)
	if err != nil {
		if !errors.As(err, &c.err) {
			c.err = &expr.Error{Code: expr.CodeParse, Message: err.Error(), Offset: -1}
		}
	} else {
		c.prog = p
	}
	if v.exprs == nil {
		v.exprs = make(map[string]compiled)
	}
	v.exprs[src] = c
	return c
}

// usesFileFunctions reports whether an expression calls file_exists or
// file_contains anywhere (the consumer-worktree rule, docs/spec-language.md
// "Graph and routing"). An expression that does not parse counts as
// calling neither: its EXPR_SYNTAX diagnostic says what is wrong.
func (v *validator) usesFileFunctions(src string) bool {
	c := v.compileExpr(src)
	return c.prog != nil && c.prog.UsesFileFunctions()
}

// exprSite tells what result is bound to where an expression is evaluated
// (docs/expressions.md, "Names").
type exprSite uint8

const (
	// siteOutputs: step and stage when, set values: result maps step ids
	// to their outputs.
	siteOutputs exprSite = iota
	// siteResult: ensure and iterate.until: result is the output under
	// test.
	siteResult
)

// checkExpression reports an expression that does not compile, at the
// field that holds it (n, at), with the offset within the expression and
// what would be right.
func (v *validator) checkExpression(src string, n *node, at loc, site exprSite) {
	c := v.compileExpr(src)
	if c.err == nil {
		return
	}
	msg := "expression " + quoteShort(src) + " does not parse: " + c.err.Message
	if c.err.Code == expr.CodeResourceLimit {
		msg = "expression " + quoteShort(src) + " is too large or too deeply nested: " + c.err.Message
	}
	if i := byteOffset(src, c.err.Offset); c.err.Offset > 0 && i < len(src) {
		msg += ", which starts " + quoteShort(src[i:])
	}
	if hint := exprHint(src, c.err.Offset, site); hint != "" {
		msg += "; " + hint
	}
	v.d.addAt(n, CodeExprSyntax, at, "%s", msg)
}

// maxExcerpt bounds the text quoted from an expression.
const maxExcerpt = 60

func quoteShort(s string) string {
	if utf8.RuneCountInString(s) > maxExcerpt {
		r := []rune(s)
		s = string(r[:maxExcerpt]) + "…"
	}
	return "\"" + s + "\""
}

// byteOffset converts an offset in UTF-16 code units (expr's unit) into a
// byte offset of src.
func byteOffset(src string, units int) int {
	for i, r := range src {
		if units <= 0 {
			return i
		}
		units -= len(utf16.Encode([]rune{r}))
	}
	return len(src)
}

// exprHint says what would be right for the mistakes expressions are
// commonly written with.
func exprHint(src string, offset int, site exprSite) string {
	rest := src[byteOffset(src, max(offset, 0)):]
	switch {
	case offset >= 0 && rest == "":
		return "it ends too early: complete it, closing every parenthesis and string"
	case strings.HasPrefix(rest, "${"):
		return "expressions read values by name, not with ${...}: " + refHint(rest, site)
	case strings.Contains(src, "===") || strings.Contains(src, "!=="):
		return "compare with == and != (there is no === or !==)"
	case strings.HasPrefix(rest, "=") && !strings.HasPrefix(rest, "=="):
		return "compare with == (= is not an operator)"
	case hasWordPrefix(rest, "and"), hasWordPrefix(rest, "or"), hasWordPrefix(rest, "not"):
		return "write the logical operators as &&, || and !"
	case strings.HasPrefix(rest, "?"):
		return "there is no conditional operator ?:; split the condition into several predicates"
	case strings.HasPrefix(rest, "%"):
		return "there is no % operator"
	case strings.HasPrefix(rest, "'") || strings.HasPrefix(rest, "\""):
		return "close the string with the quote it starts with"
	}
	return ""
}

func hasWordPrefix(s, w string) bool {
	return strings.HasPrefix(s, w) && (len(s) == len(w) || s[len(w)] == ' ' || s[len(w)] == '(')
}

// refHint suggests the name that reads what the ${...} at the start of s
// refers to, at this site.
func refHint(s string, site exprSite) string {
	end := strings.IndexByte(s, '}')
	if end < 0 {
		return "write input.FIELD or result.FIELD"
	}
	r := parseRefContent(s[2:end])
	switch {
	case r == nil:
	case r.Kind == RefInput:
		return "write input" + pathString(r.Path) + " for " + s[:end+1]
	case r.Kind == RefCarry:
		return "a carry variable cannot be read in an expression (only result, input, item and prev can); use ${" + r.Name + "} in a do text, with, evaluate.in or fanout.over"
	case r.Kind == RefItem || r.Kind == RefPrev:
		return "write " + r.Kind.String() + " for " + s[:end+1] + " (in a fanout stage)"
	case r.Kind == RefStep && site == siteOutputs:
		return "write result." + r.Name + pathString(r.Path) + " for " + s[:end+1] + " (result maps step ids to their outputs here; order the step after " + r.Name + ")"
	case r.Kind == RefStep:
		return "here result is the output under test, and other steps' outputs cannot be read; write result.FIELD or input.FIELD"
	}
	return "write input.FIELD or result.FIELD"
}
