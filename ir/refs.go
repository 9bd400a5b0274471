package ir

import (
	"strconv"
	"strings"

	"github.com/stratum-go/stratum/expr"
)

// RefKind is the kind of a ${...} reference (docs/spec-language.md, "References").
type RefKind uint8

// Reference kinds.
const (
	RefInput RefKind = iota + 1 // ${input.FIELD...}: the flow input
	RefStep                     // ${ID.output...}: a step's output
	RefCarry                    // ${NAME...}: a carry variable
	RefItem                     // ${item}: the current fanout item
	RefPrev                     // ${prev}: the previous fanout stage's output
)

func (k RefKind) String() string {
	switch k {
	case RefInput:
		return "input"
	case RefStep:
		return "step output"
	case RefCarry:
		return "carry"
	case RefItem:
		return "item"
	case RefPrev:
		return "prev"
	}
	return "unknown"
}

// PathSeg is one segment of a reference path: a field name or a list index.
type PathSeg struct {
	Field   string // set for ".FIELD"
	Index   int    // set for "[N]" (IsIndex true)
	IsIndex bool
}

// Ref is one parsed ${...} reference.
type Ref struct {
	Kind RefKind
	// Name is the step id (RefStep) or carry variable name (RefCarry).
	Name string
	// Path is what follows "input", "ID.output" or the carry name.
	Path []PathSeg
	// Text is the token as written, "${a.output.x}".
	Text string
}

// Lookup follows the reference's Path into v (a value in the expr model)
// and reports whether every segment was found.
func (r *Ref) Lookup(v any) (any, bool) {
	for _, seg := range r.Path {
		if seg.IsIndex {
			arr, ok := v.([]any)
			if !ok || seg.Index >= len(arr) {
				return nil, false
			}
			v = arr[seg.Index]
			continue
		}
		switch o := v.(type) {
		case *expr.Object:
			x, ok := o.Get(seg.Field)
			if !ok {
				return nil, false
			}
			v = x
		case map[string]any:
			x, ok := o[seg.Field]
			if !ok {
				return nil, false
			}
			v = x
		default:
			return nil, false
		}
	}
	return v, true
}

// Template is a string that may contain ${...} references: a task text, a
// with value, evaluate.in, fanout.over, or an expression scanned for
// references. Parts alternates literal text and references.
type Template struct {
	// Text is the string as written.
	Text string
	// Parts are the pieces in order; literal text has Ref == nil. A string
	// without references has no parts: it renders as Text.
	Parts []TemplatePart
}

// TemplatePart is literal text or one reference.
type TemplatePart struct {
	Literal string
	Ref     *Ref
}

// Full returns the reference when the template is exactly one reference
// with no surrounding text (a full-value reference), else nil.
func (t *Template) Full() *Ref {
	if t != nil && len(t.Parts) == 1 && t.Parts[0].Ref != nil {
		return t.Parts[0].Ref
	}
	return nil
}

// Refs returns the template's references in order.
func (t *Template) Refs() []*Ref {
	var out []*Ref
	for _, p := range t.Parts {
		if p.Ref != nil {
			out = append(out, p.Ref)
		}
	}
	return out
}

// Resolver supplies the value of a reference at run time. It returns an
// error when the value is unavailable.
type Resolver func(*Ref) (any, error)

// Render evaluates the template (docs/spec-language.md, "How validation proceeds"). A full-value
// reference yields the referenced value with its JSON type; otherwise each
// reference is replaced by its text (strings as-is, null as "", other
// values as compact JSON) and the result is a string.
func (t *Template) Render(resolve Resolver) (any, error) {
	if r := t.Full(); r != nil {
		return resolve(r)
	}
	if len(t.Parts) == 0 {
		return t.Text, nil
	}
	var b strings.Builder
	for _, p := range t.Parts {
		if p.Ref == nil {
			b.WriteString(p.Literal)
			continue
		}
		v, err := resolve(p.Ref)
		if err != nil {
			return nil, err
		}
		switch x := v.(type) {
		case nil:
		case string:
			b.WriteString(x)
		default:
			enc, err := expr.EncodeJSON(x)
			if err != nil {
				return nil, err
			}
			b.Write(enc)
		}
	}
	return b.String(), nil
}

// templateSyntax classifies the outcome of scanning a string.
type templateSyntax uint8

const (
	templateOK        templateSyntax = iota
	templateMalformed                // a token's content fails the grammar, or an unterminated ${
)

// parseTemplate scans s for ${...} tokens (docs/spec-language.md, "References"). On a
// malformed string it returns a template without parts and the offending
// token text (or the text from an unterminated "${").
func parseTemplate(s string) (*Template, templateSyntax, string) {
	var a tmplArena
	return a.parseTemplate(s)
}

// tmplArena carves the templates of one build, with their parts, refs and
// path segments, from a few large slabs instead of one allocation each: a
// large spec has thousands of them and they all live as long as the Plan.
// The zero value is ready to use; scratch buffers are reused between calls.
type tmplArena struct {
	tmpls []Template
	refs  []Ref
	parts []TemplatePart
	segs  []PathSeg

	// The ensure lists and sites of steps and stages live here too.
	ensures []Ensure
	sites   []Site

	partScratch []TemplatePart
	segScratch  []PathSeg
}

const arenaChunk = 128

func (a *tmplArena) newTemplate(s string) *Template {
	if len(a.tmpls) == 0 {
		a.tmpls = make([]Template, arenaChunk)
	}
	t := &a.tmpls[0]
	a.tmpls = a.tmpls[1:]
	t.Text = s
	return t
}

func (a *tmplArena) newRef(r Ref) *Ref {
	if len(a.refs) == 0 {
		a.refs = make([]Ref, arenaChunk)
	}
	p := &a.refs[0]
	a.refs = a.refs[1:]
	*p = r
	return p
}

// carve copies src into a slice of exactly its length (capacity included,
// so appending to it never touches a neighbour) taken from *slab.
func carve[T any](slab *[]T, src []T) []T {
	n := len(src)
	if n == 0 {
		return nil
	}
	if n > len(*slab) {
		if n > arenaChunk/4 {
			return append([]T(nil), src...)
		}
		*slab = make([]T, arenaChunk*2)
	}
	out := (*slab)[:n:n]
	*slab = (*slab)[n:]
	copy(out, src)
	return out
}

// carveRoom returns an empty slice with room for n elements taken from
// *slab, to be filled by appending; it is never nil.
func carveRoom[T any](slab *[]T, n int) []T {
	if n == 0 {
		return []T{}
	}
	if n > len(*slab) {
		if n > arenaChunk/4 {
			return make([]T, 0, n)
		}
		*slab = make([]T, arenaChunk*2)
	}
	out := (*slab)[:0:n]
	*slab = (*slab)[n:]
	return out
}

func (a *tmplArena) parseTemplate(s string) (*Template, templateSyntax, string) {
	t := a.newTemplate(s)
	if !strings.Contains(s, "${") {
		return t, templateOK, ""
	}
	// The last "${" must not come after the last "}".
	if strings.LastIndex(s, "${") > strings.LastIndexByte(s, '}') {
		return t, templateMalformed, s[strings.LastIndex(s, "${"):]
	}
	parts := a.partScratch[:0]
	defer func() { a.partScratch = parts[:0] }()
	rest := s
	for {
		i := strings.Index(rest, "${")
		if i < 0 {
			if rest != "" {
				parts = append(parts, TemplatePart{Literal: rest})
			}
			break
		}
		j := strings.IndexByte(rest[i+2:], '}')
		if j < 0 {
			return t, templateMalformed, rest[i:]
		}
		if i > 0 {
			parts = append(parts, TemplatePart{Literal: rest[:i]})
		}
		content := rest[i+2 : i+2+j]
		tok := rest[i : i+3+j]
		ref := a.parseRefContent(content)
		if ref == nil {
			return t, templateMalformed, tok
		}
		ref.Text = tok
		parts = append(parts, TemplatePart{Ref: ref})
		rest = rest[i+3+j:]
	}
	t.Parts = carve(&a.parts, parts)
	return t, templateOK, ""
}

// parseRefContent classifies the inside of ${...} (docs/spec-language.md, "How validation proceeds").
func parseRefContent(c string) *Ref {
	var a tmplArena
	return a.parseRefContent(c)
}

func (a *tmplArena) parseRefContent(c string) *Ref {
	switch c {
	case "item":
		return a.newRef(Ref{Kind: RefItem})
	case "prev":
		return a.newRef(Ref{Kind: RefPrev})
	}
	if strings.HasPrefix(c, "input.") {
		// The path is what follows "input", its leading '.' included.
		path, ok := a.parsePath(c[len("input"):])
		if !ok || len(path) == 0 || path[0].IsIndex {
			return nil
		}
		return a.newRef(Ref{Kind: RefInput, Path: path})
	}
	if c == "" || c[0] < 'a' || c[0] > 'z' {
		return nil
	}
	end := stepIDTail(c, 1)
	id, rem := c[:end], c[end:]
	if after, ok := strings.CutPrefix(rem, ".output"); ok && (after == "" || after[0] == '.' || after[0] == '[') {
		path, ok := a.parsePath(after)
		if !ok {
			return nil
		}
		return a.newRef(Ref{Kind: RefStep, Name: id, Path: path})
	}
	path, ok := a.parsePath(rem)
	if !ok {
		return nil
	}
	return a.newRef(Ref{Kind: RefCarry, Name: id, Path: path})
}

func (a *tmplArena) parsePath(s string) ([]PathSeg, bool) {
	out := a.segScratch[:0]
	defer func() { a.segScratch = out[:0] }()
	for i := 0; i < len(s); {
		switch s[i] {
		case '.':
			j := i + 1
			if j >= len(s) || !(s[j] == '_' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z') {
				return nil, false
			}
			j++
			for j < len(s) && isFieldChar(s[j]) {
				j++
			}
			out = append(out, PathSeg{Field: s[i+1 : j]})
			i = j
		case '[':
			j := i + 1
			for j < len(s) && s[j] >= '0' && s[j] <= '9' {
				j++
			}
			if j == i+1 || j >= len(s) || s[j] != ']' {
				return nil, false
			}
			n, err := strconv.Atoi(strings.TrimLeft(s[i+1:j], "0"))
			if s[i+1:j] != "" && strings.TrimLeft(s[i+1:j], "0") == "" {
				n, err = 0, nil
			}
			if err != nil {
				// An index too large for int can never be in bounds.
				n = int(^uint(0) >> 1)
			}
			out = append(out, PathSeg{Index: n, IsIndex: true})
			i = j + 1
		default:
			return nil, false
		}
	}
	return carve(&a.segs, out), true
}

// pathString formats a path for messages: ".a[0].b".
func pathString(p []PathSeg) string {
	var b strings.Builder
	for _, s := range p {
		if s.IsIndex {
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(s.Index))
			b.WriteByte(']')
		} else {
			b.WriteByte('.')
			b.WriteString(s.Field)
		}
	}
	return b.String()
}

// Render evaluates a with value: every string is rendered as a template
// (a full-value reference keeps its JSON type), and the result is a value
// in the expr model (nil, bool, float64, string, []any, *expr.Object).
func (v *Value) Render(resolve Resolver) (any, error) {
	switch v.Kind {
	case ValueNull:
		return nil, nil
	case ValueBool:
		return v.Bool, nil
	case ValueNumber:
		return v.Number, nil
	case ValueString:
		return v.String.Render(resolve)
	case ValueList:
		out := make([]any, len(v.Items))
		for i, it := range v.Items {
			x, err := it.Render(resolve)
			if err != nil {
				return nil, err
			}
			out[i] = x
		}
		return out, nil
	}
	obj := expr.NewObject(len(v.Keys))
	for i, k := range v.Keys {
		x, err := v.Fields[i].Render(resolve)
		if err != nil {
			return nil, err
		}
		obj.Set(k, x)
	}
	return obj, nil
}
