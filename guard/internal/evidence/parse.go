package evidence

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The allow-listed builtins.
const (
	ServerFileExists    = "server_file_exists"
	ServerFileContains  = "server_file_contains"
	GitCommitExists     = "git_commit_exists"
	CommandExitZero     = "command_exit_zero"
	VerdictReceiptClean = "verdict_receipt_clean"
)

var builtins = map[string]bool{
	ServerFileExists: true, ServerFileContains: true, GitCommitExists: true,
	CommandExitZero: true, VerdictReceiptClean: true,
}

// NeedsWorkspace reports whether a builtin reads files, git or runs a
// command, and so needs a registered workspace root.
func NeedsWorkspace(name string) bool {
	return name == ServerFileExists || name == ServerFileContains || name == GitCommitExists || name == CommandExitZero
}

// maxStatement bounds the text the parser looks at.
const maxStatement = 64 << 10

// ErrParse is wrapped by every statement parse error.
var ErrParse = errors.New("cannot parse trusted statement")

// Call is one parsed statement: a builtin name and its arguments. Arity
// and argument types are not checked by Parse; Evaluate reports them as an
// unmet predicate.
type Call struct {
	Name string
	Args []Arg
}

// Arg is a string or a list of strings.
type Arg struct {
	IsList bool
	Str    string
	List   []string
}

func (a Arg) String() string {
	if !a.IsList {
		return strconv.Quote(a.Str)
	}
	parts := make([]string, len(a.List))
	for i, s := range a.List {
		parts[i] = strconv.Quote(s)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// Parse reads a statement such as `server_file_exists('docs/plan.md')`.
func Parse(statement string) (Call, error) {
	if len(statement) > maxStatement {
		return Call{}, fmt.Errorf("%w: statement longer than %d bytes", ErrParse, maxStatement)
	}
	if !utf8.ValidString(statement) {
		return Call{}, fmt.Errorf("%w: statement is not valid UTF-8", ErrParse)
	}
	p := &parser{src: statement}
	c, err := p.call()
	if err != nil {
		return Call{}, fmt.Errorf("%w %q: %v", ErrParse, truncate(statement), err)
	}
	return c, nil
}

func truncate(s string) string {
	if len(s) <= 120 {
		return s
	}
	cut := 120
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

type parser struct {
	src string
	pos int
}

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("at offset %d: %s", p.pos, fmt.Sprintf(format, args...))
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f'
}

func isIdentStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isIdentPart(c byte) bool { return isIdentStart(c) || (c >= '0' && c <= '9') }

func (p *parser) skipSpace() {
	for p.pos < len(p.src) && isSpace(p.src[p.pos]) {
		p.pos++
	}
}

func (p *parser) peek() (byte, bool) {
	if p.pos >= len(p.src) {
		return 0, false
	}
	return p.src[p.pos], true
}

func (p *parser) ident() string {
	start := p.pos
	if c, ok := p.peek(); !ok || !isIdentStart(c) {
		return ""
	}
	for p.pos < len(p.src) && isIdentPart(p.src[p.pos]) {
		p.pos++
	}
	return p.src[start:p.pos]
}

func (p *parser) call() (Call, error) {
	p.skipSpace()
	name := p.ident()
	if name == "" {
		return Call{}, p.errorf("expected a builtin name")
	}
	if !builtins[name] {
		return Call{}, fmt.Errorf("unknown trusted builtin %q", name)
	}
	p.skipSpace()
	if c, ok := p.peek(); !ok || c != '(' {
		return Call{}, p.errorf("expected ( after %s", name)
	}
	p.pos++
	call := Call{Name: name}
	p.skipSpace()
	if c, ok := p.peek(); ok && c == ')' {
		p.pos++
	} else {
		for {
			arg, err := p.arg()
			if err != nil {
				return Call{}, err
			}
			call.Args = append(call.Args, arg)
			p.skipSpace()
			c, ok := p.peek()
			if !ok {
				return Call{}, p.errorf("unterminated argument list")
			}
			if c == ')' {
				p.pos++
				break
			}
			if c != ',' {
				return Call{}, p.errorf("expected , or ) after an argument, found %q", c)
			}
			p.pos++
			p.skipSpace()
			if c, ok := p.peek(); ok && c == ')' { // trailing comma
				p.pos++
				break
			}
		}
	}
	p.skipSpace()
	if p.pos != len(p.src) {
		return Call{}, p.errorf("unexpected text after the call")
	}
	return call, nil
}

func (p *parser) arg() (Arg, error) {
	p.skipSpace()
	c, ok := p.peek()
	if !ok {
		return Arg{}, p.errorf("unterminated argument list")
	}
	switch {
	case c == '[':
		p.pos++
		return p.list()
	case c == '\'' || c == '"':
		s, err := p.stringLit()
		return Arg{Str: s}, err
	case isIdentStart(c):
		start := p.pos
		name := p.ident()
		if c, ok := p.peek(); ok && (c == '\'' || c == '"') {
			p.pos = start
			return Arg{}, p.errorf("string prefixes such as %s'' are not allowed", name)
		}
		p.skipSpace()
		if c, ok := p.peek(); ok && c == '=' {
			p.pos = start
			return Arg{}, p.errorf("keyword argument %s= is not allowed", name)
		}
		p.pos = start
		return Arg{}, p.errorf("bare name %s is not a string or list", name)
	}
	return Arg{}, p.errorf("an argument must be a quoted string or a list of strings, found %q", c)
}

func (p *parser) list() (Arg, error) {
	arg := Arg{IsList: true, List: []string{}}
	for {
		p.skipSpace()
		c, ok := p.peek()
		if !ok {
			return Arg{}, p.errorf("unterminated list")
		}
		if c == ']' {
			p.pos++
			return arg, nil
		}
		if c != '\'' && c != '"' {
			return Arg{}, p.errorf("list items must be quoted strings, found %q", c)
		}
		s, err := p.stringLit()
		if err != nil {
			return Arg{}, err
		}
		arg.List = append(arg.List, s)
		p.skipSpace()
		c, ok = p.peek()
		if !ok {
			return Arg{}, p.errorf("unterminated list")
		}
		switch c {
		case ',':
			p.pos++
		case ']':
			p.pos++
			return arg, nil
		default:
			return Arg{}, p.errorf("expected , or ] in a list, found %q", c)
		}
	}
}

// stringLit reads one Python-style quoted string and refuses an adjacent
// string (implicit concatenation).
func (p *parser) stringLit() (string, error) {
	s, err := p.quoted()
	if err != nil {
		return "", err
	}
	save := p.pos
	p.skipSpace()
	if c, ok := p.peek(); ok && (c == '\'' || c == '"') {
		return "", p.errorf("adjacent string literals are not allowed")
	}
	p.pos = save
	return s, nil
}

func hexValue(s string) (rune, bool) {
	v, err := strconv.ParseUint(s, 16, 32)
	if err != nil || strings.ContainsAny(s, "+-_") {
		return 0, false
	}
	return rune(v), true
}

func (p *parser) quoted() (string, error) {
	quote := p.src[p.pos]
	p.pos++
	var b strings.Builder
	for {
		if p.pos >= len(p.src) {
			return "", p.errorf("unterminated string")
		}
		c := p.src[p.pos]
		switch {
		case c == quote:
			p.pos++
			return b.String(), nil
		case c == '\n' || c == '\r':
			return "", p.errorf("newline inside a string")
		case c != '\\':
			b.WriteByte(c)
			p.pos++
			continue
		}
		// A backslash escape.
		p.pos++
		if p.pos >= len(p.src) {
			return "", p.errorf("unterminated string")
		}
		e := p.src[p.pos]
		p.pos++
		switch e {
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte('\v')
		case '\\', '\'', '"':
			b.WriteByte(e)
		case '\n': // line continuation yields nothing
		case '\r':
			if p.pos < len(p.src) && p.src[p.pos] == '\n' {
				p.pos++
			}
		case 'x', 'u', 'U':
			n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			if p.pos+n > len(p.src) {
				return "", p.errorf(`truncated \%c escape`, e)
			}
			r, ok := hexValue(p.src[p.pos : p.pos+n])
			if !ok {
				return "", p.errorf(`truncated \%c escape`, e)
			}
			p.pos += n
			if err := p.writeRune(&b, r); err != nil {
				return "", err
			}
		case '0', '1', '2', '3', '4', '5', '6', '7':
			r := rune(e - '0')
			for i := 0; i < 2 && p.pos < len(p.src) && p.src[p.pos] >= '0' && p.src[p.pos] <= '7'; i++ {
				r = r*8 + rune(p.src[p.pos]-'0')
				p.pos++
			}
			if err := p.writeRune(&b, r); err != nil {
				return "", err
			}
		default:
			// Python keeps an unknown escape as written.
			b.WriteByte('\\')
			p.pos-- // the escaped byte is re-read as ordinary text
		}
	}
}

func (p *parser) writeRune(b *strings.Builder, r rune) error {
	switch {
	case r > utf8.MaxRune:
		return p.errorf("escape beyond U+10FFFF")
	case r >= 0xD800 && r <= 0xDFFF:
		// Python would keep a lone surrogate; no path or text can hold one.
		return p.errorf("escape of surrogate U+%04X is not allowed", r)
	}
	b.WriteRune(r)
	return nil
}
