package expr

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

type tokKind uint8

const (
	tokEOF tokKind = iota
	tokNumber
	tokString
	tokIdent // includes true, false and null, which the parser turns into literals
	tokOp    // == != <= >= && || < > + - * / ! in
	tokPunct // ( ) . [ ] ,
)

type token struct {
	kind tokKind
	pos  int    // byte offset in the source
	text string // the source text of an identifier, operator or punctuation
	num  float64
	str  string // the decoded value of a string literal
}

// lexer produces tokens on demand, so a limit the parser hits early stops
// the work before the rest of a huge input is scanned.
type lexer struct {
	src string
	pos int
}

// isJSSpace reports whether r is in JavaScript's \s set (which, unlike
// unicode.IsSpace, includes U+FEFF and excludes U+0085).
func isJSSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0xA0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF:
		return true
	}
	return r >= 0x2000 && r <= 0x200A
}

func isDigit(c byte) bool      { return c >= '0' && c <= '9' }
func isIdentStart(c byte) bool { return c == '_' || (c|0x20 >= 'a' && c|0x20 <= 'z') }
func isIdentPart(c byte) bool  { return isIdentStart(c) || isDigit(c) }

func (l *lexer) errorf(at int, format string, args ...any) *Error {
	return parseError(l.src, at, fmt.Sprintf(format, args...))
}

func (l *lexer) skipSpace() *Error {
	for l.pos < len(l.src) {
		c := l.src[l.pos]
		if c < utf8.RuneSelf {
			if c == ' ' || (c >= '\t' && c <= '\r') {
				l.pos++
				continue
			}
			return nil
		}
		r, size := utf8.DecodeRuneInString(l.src[l.pos:])
		if r == utf8.RuneError && size == 1 {
			return l.errorf(l.pos, "invalid UTF-8 byte 0x%02X", c)
		}
		if !isJSSpace(r) {
			return nil
		}
		l.pos += size
	}
	return nil
}

var twoCharOps = [...]string{"==", "!=", "<=", ">=", "&&", "||"}

func (l *lexer) next() (token, *Error) {
	if err := l.skipSpace(); err != nil {
		return token{}, err
	}
	start := l.pos
	if start >= len(l.src) {
		return token{kind: tokEOF, pos: start}, nil
	}
	c := l.src[start]
	switch {
	case c == '"' || c == '\'':
		return l.lexString(c)
	case isDigit(c):
		return l.lexNumber()
	case isIdentStart(c):
		l.pos++
		for l.pos < len(l.src) && isIdentPart(l.src[l.pos]) {
			l.pos++
		}
		text := l.src[start:l.pos]
		if text == "in" {
			return token{kind: tokOp, pos: start, text: text}, nil
		}
		return token{kind: tokIdent, pos: start, text: text}, nil
	}
	for _, op := range twoCharOps {
		if strings.HasPrefix(l.src[start:], op) {
			l.pos += 2
			return token{kind: tokOp, pos: start, text: op}, nil
		}
	}
	switch c {
	case '<', '>', '+', '-', '*', '/', '!':
		l.pos++
		return token{kind: tokOp, pos: start, text: l.src[start:l.pos]}, nil
	case '(', ')', '.', '[', ']', ',':
		l.pos++
		return token{kind: tokPunct, pos: start, text: l.src[start:l.pos]}, nil
	}
	if c < utf8.RuneSelf {
		return token{}, l.errorf(start, "unexpected character %q", rune(c))
	}
	r, size := utf8.DecodeRuneInString(l.src[start:])
	if r == utf8.RuneError && size == 1 {
		return token{}, l.errorf(start, "invalid UTF-8 byte 0x%02X", c)
	}
	return token{}, l.errorf(start, "unexpected character %q (U+%04X); only ASCII is allowed outside strings", r, r)
}

// lexNumber scans 0 or a non-zero digit run, an optional fraction with at
// least one digit and an optional exponent with at least one digit. What
// does not fit is left for the next token: "1." is 1 then ".", "1e" is 1
// then the identifier e, "01" is 0 then 1.
func (l *lexer) lexNumber() (token, *Error) {
	s, start := l.src, l.pos
	i := start
	if s[i] == '0' {
		i++
	} else {
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	}
	if i+1 < len(s) && s[i] == '.' && isDigit(s[i+1]) {
		i += 2
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		j := i + 1
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		if j < len(s) && isDigit(s[j]) {
			for j < len(s) && isDigit(s[j]) {
				j++
			}
			i = j
		}
	}
	text := s[start:i]
	f, err := strconv.ParseFloat(text, 64)
	if err != nil && !math.IsInf(f, 0) {
		return token{}, l.errorf(start, "invalid number %s", text)
	}
	if math.IsInf(f, 0) {
		return token{}, l.errorf(start, "number %s is too large (not finite)", text)
	}
	l.pos = i
	return token{kind: tokNumber, pos: start, text: text, num: f}, nil
}

func (l *lexer) lexString(quote byte) (token, *Error) {
	s, start := l.src, l.pos
	i := start + 1
	var b strings.Builder
	plainFrom := i // start of the run not yet copied into b
	escaped := false
	for i < len(s) {
		c := s[i]
		switch {
		case c == quote:
			var val string
			if escaped {
				b.WriteString(s[plainFrom:i])
				val = b.String()
			} else {
				val = s[plainFrom:i]
			}
			l.pos = i + 1
			return token{kind: tokString, pos: start, str: val}, nil
		case c < 0x20:
			return token{}, l.errorf(i, "raw control character %q in a string; escape it", rune(c))
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				return token{}, l.errorf(i, "invalid UTF-8 byte 0x%02X in a string", c)
			}
			i += size
			continue
		case c != '\\':
			i++
			continue
		}
		// An escape sequence.
		if !escaped {
			b.Grow(len(s) - start)
			escaped = true
		}
		b.WriteString(s[plainFrom:i])
		if i+1 >= len(s) {
			break // a backslash at the end: unterminated
		}
		e := s[i+1]
		switch e {
		case '"', '\'', '\\', '/':
			b.WriteByte(e)
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
		case 'u':
			u, ok := hex4(s, i+2)
			if !ok {
				return token{}, l.errorf(i, `\u must be followed by exactly four hex digits`)
			}
			r := rune(u)
			switch {
			case u >= 0xD800 && u <= 0xDBFF:
				lo, ok := 0, false
				if i+7 < len(s) && s[i+6] == '\\' && s[i+7] == 'u' {
					lo, ok = hex4(s, i+8)
				}
				if !ok || lo < 0xDC00 || lo > 0xDFFF {
					return token{}, l.errorf(i, `lone surrogate \u%04X: write a surrogate pair or the character itself`, u)
				}
				r = 0x10000 + rune(u-0xD800)<<10 + rune(lo-0xDC00)
				i += 6
			case u >= 0xDC00 && u <= 0xDFFF:
				return token{}, l.errorf(i, `lone surrogate \u%04X: write a surrogate pair or the character itself`, u)
			}
			b.WriteRune(r)
			i += 4
		default:
			r, _ := utf8.DecodeRuneInString(s[i+1:])
			return token{}, l.errorf(i, `invalid escape \%c`, r)
		}
		i += 2
		plainFrom = i
	}
	return token{}, l.errorf(start, "unterminated string")
}

// hex4 reads exactly four hex digits at s[i:].
func hex4(s string, i int) (int, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	v := 0
	for _, c := range []byte(s[i : i+4]) {
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c|0x20 >= 'a' && c|0x20 <= 'f':
			d = c | 0x20 - 'a' + 10
		default:
			return 0, false
		}
		v = v<<4 | int(d)
	}
	return v, true
}
