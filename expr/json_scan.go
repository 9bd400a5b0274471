package expr

import (
	"errors"
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// errScan is scanJSON's refusal. It carries no detail: DecodeJSON decodes a
// refused document again with encoding/json for the message.
var errScan = errors.New("decode json: invalid document")

// scanJSON decodes data exactly as [decodeJSONTokens] does (the same values,
// down to *Object key order and float64 bits, and the same documents
// refused), reading the bytes directly instead of through encoding/json's
// tokens. Its grammar is RFC 8259's with the four whitespace bytes
// encoding/json skips; strings are unquoted as encoding/json unquotes them
// (invalid UTF-8 bytes and lone surrogate escapes become U+FFFD).
func scanJSON(data []byte) (any, error) {
	s := jsonScanner{data: data}
	v, err := s.value(0)
	if err != nil {
		return nil, err
	}
	s.skipSpace()
	if s.pos != len(s.data) {
		return nil, errScan
	}
	return v, nil
}

// UnquoteJSON decodes lit, which must be exactly one JSON string literal
// (quotes included, nothing around it), as encoding/json unquotes it:
// invalid UTF-8 bytes and lone surrogate escapes become U+FFFD. ok is false
// for anything else.
func UnquoteJSON(lit []byte) (s string, ok bool) {
	if len(lit) < 2 || lit[0] != '"' {
		return "", false
	}
	sc := jsonScanner{data: lit}
	s, err := sc.string()
	return s, err == nil && sc.pos == len(lit)
}

// UnquoteJSONBytes is UnquoteJSON giving the text as a new byte slice,
// for a caller that wants bytes (a document held as a string) without a
// second copy.
func UnquoteJSONBytes(lit []byte) ([]byte, bool) {
	if len(lit) < 2 || lit[0] != '"' {
		return nil, false
	}
	sc := jsonScanner{data: lit, text: make([]byte, 0, len(lit)-2)}
	b, err := sc.unquoteBytes(1, 1)
	return b, err == nil && sc.pos == len(lit)
}

// jsonScanner reads one document. keys, vals and elems are stacks shared by
// the open containers (each container's members sit above its parent's
// until it closes and copies them out), so that building a container does
// not grow a slice of its own.
type jsonScanner struct {
	data  []byte
	pos   int
	keys  []string
	vals  []any
	elems []any
	text  []byte // scratch for strings that need unescaping
}

func (s *jsonScanner) skipSpace() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// value reads the value at s.pos, inside depth open containers.
func (s *jsonScanner) value(depth int) (any, error) {
	s.skipSpace()
	if s.pos >= len(s.data) {
		return nil, errScan
	}
	switch c := s.data[s.pos]; c {
	case '{':
		if depth >= MaxJSONDepth {
			return nil, ErrJSONTooDeep
		}
		return s.object(depth)
	case '[':
		if depth >= MaxJSONDepth {
			return nil, ErrJSONTooDeep
		}
		return s.array(depth)
	case '"':
		return s.string()
	case 't':
		return true, s.literal("true")
	case 'f':
		return false, s.literal("false")
	case 'n':
		return nil, s.literal("null")
	default:
		if c == '-' || ('0' <= c && c <= '9') {
			return s.number()
		}
		return nil, errScan
	}
}

func (s *jsonScanner) literal(word string) error {
	if len(s.data)-s.pos < len(word) || string(s.data[s.pos:s.pos+len(word)]) != word {
		return errScan
	}
	s.pos += len(word)
	return nil
}

// object reads an object whose '{' is at s.pos. Members are collected first
// and ordered once at the end, as decodeJSONTokens does (see there why).
func (s *jsonScanner) object(depth int) (any, error) {
	s.pos++ // '{'
	base := len(s.keys)
	var seen map[string]int // position above base, once the object outgrows a scan
	s.skipSpace()
	if s.pos < len(s.data) && s.data[s.pos] == '}' {
		s.pos++
		return objectFromMembers(nil, nil), nil
	}
	for {
		s.skipSpace()
		if s.pos >= len(s.data) || s.data[s.pos] != '"' {
			return nil, errScan
		}
		key, err := s.string()
		if err != nil {
			return nil, err
		}
		s.skipSpace()
		if s.pos >= len(s.data) || s.data[s.pos] != ':' {
			return nil, errScan
		}
		s.pos++
		v, err := s.value(depth + 1)
		if err != nil {
			return nil, err
		}
		at := -1
		if seen != nil {
			if i, ok := seen[key]; ok {
				at = i
			}
		} else {
			for i, k := range s.keys[base:] {
				if k == key {
					at = i
					break
				}
			}
		}
		if at >= 0 {
			s.vals[base+at] = v // a repeated key keeps its first position
		} else {
			s.keys = append(s.keys, key)
			s.vals = append(s.vals, v)
			if n := len(s.keys) - base; seen != nil {
				seen[key] = n - 1
			} else if n > smallObject {
				seen = make(map[string]int, 2*n)
				for i, k := range s.keys[base:] {
					seen[k] = i
				}
			}
		}
		s.skipSpace()
		if s.pos >= len(s.data) {
			return nil, errScan
		}
		switch s.data[s.pos] {
		case ',':
			s.pos++
		case '}':
			s.pos++
			o := objectFromMembers(s.keys[base:], s.vals[base:])
			clear(s.vals[base:]) // the stack must not keep values alive
			s.keys, s.vals = s.keys[:base], s.vals[:base]
			return o, nil
		default:
			return nil, errScan
		}
	}
}

// array reads an array whose '[' is at s.pos.
func (s *jsonScanner) array(depth int) (any, error) {
	s.pos++ // '['
	s.skipSpace()
	if s.pos < len(s.data) && s.data[s.pos] == ']' {
		s.pos++
		return []any{}, nil
	}
	base := len(s.elems)
	for {
		v, err := s.value(depth + 1)
		if err != nil {
			return nil, err
		}
		s.elems = append(s.elems, v)
		s.skipSpace()
		if s.pos >= len(s.data) {
			return nil, errScan
		}
		switch s.data[s.pos] {
		case ',':
			s.pos++
		case ']':
			s.pos++
			arr := make([]any, len(s.elems)-base)
			copy(arr, s.elems[base:])
			clear(s.elems[base:])
			s.elems = s.elems[:base]
			return arr, nil
		default:
			return nil, errScan
		}
	}
}

// number reads a number literal at s.pos and converts its exact text as
// json.Number.Float64 does (strconv.ParseFloat); a literal out of float64's
// range is refused, as decodeJSONTokens refuses it.
func (s *jsonScanner) number() (any, error) {
	d, start := s.data, s.pos
	i := start
	neg := d[i] == '-'
	if neg {
		i++
	}
	intStart := i
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && '1' <= d[i] && d[i] <= '9':
		for i < len(d) && '0' <= d[i] && d[i] <= '9' {
			i++
		}
	default:
		return nil, errScan
	}
	intEnd := i
	if i < len(d) && d[i] == '.' {
		i++
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			return nil, errScan
		}
		for i < len(d) && '0' <= d[i] && d[i] <= '9' {
			i++
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			return nil, errScan
		}
		for i < len(d) && '0' <= d[i] && d[i] <= '9' {
			i++
		}
	}
	s.pos = i
	// An integer of at most 15 digits is below 2^53, so its float64 is
	// exact and equals what ParseFloat rounds to.
	if i == intEnd && intEnd-intStart <= 15 {
		var n uint64
		for _, c := range d[intStart:intEnd] {
			n = n*10 + uint64(c-'0')
		}
		f := float64(n)
		if neg {
			f = -f // "-0" is negative zero, as ParseFloat gives it
		}
		return f, nil
	}
	f, err := strconv.ParseFloat(string(d[start:i]), 64)
	if err != nil || math.IsInf(f, 0) {
		return nil, errScan
	}
	return f, nil
}

// string reads a string whose opening quote is at s.pos.
func (s *jsonScanner) string() (string, error) {
	d := s.data
	start := s.pos + 1
	i := start
	for i < len(d) {
		c := d[i]
		if c == '"' {
			s.pos = i + 1
			return string(d[start:i]), nil
		}
		if c == '\\' || c < ' ' || c >= utf8.RuneSelf {
			break
		}
		i++
	}
	return s.unquote(start, i)
}

// unquote finishes a string begun at start whose bytes before i are
// printable ASCII, unescaping as encoding/json does: a surrogate escape
// followed by the escape of its partner is one character, and any other
// surrogate escape becomes U+FFFD (the next escape then read on its own);
// each byte that is not part of valid UTF-8 becomes U+FFFD.
func (s *jsonScanner) unquote(start, i int) (string, error) {
	b, err := s.unquoteBytes(start, i)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// unquoteBytes is unquote leaving the text in s.text (reused by the next
// string that needs unescaping).
func (s *jsonScanner) unquoteBytes(start, i int) ([]byte, error) {
	d := s.data
	b := append(s.text[:0], d[start:i]...)
	for i < len(d) {
		c := d[i]
		switch {
		case c == '"':
			s.pos = i + 1
			s.text = b
			return b, nil
		case c < ' ':
			return nil, errScan
		case c == '\\':
			if i+1 >= len(d) {
				return nil, errScan
			}
			switch d[i+1] {
			case '"', '\\', '/':
				b = append(b, d[i+1])
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				r := hexEscape(d[i:])
				if r < 0 {
					return nil, errScan
				}
				i += 6
				if utf16.IsSurrogate(r) {
					if pair := utf16.DecodeRune(r, hexEscape(d[i:])); pair != utf8.RuneError {
						b = utf8.AppendRune(b, pair)
						i += 6
						continue
					}
					r = utf8.RuneError
				}
				b = utf8.AppendRune(b, r)
				continue
			default:
				return nil, errScan
			}
			i += 2
		case c < utf8.RuneSelf:
			// Copy the run of plain ASCII at once: a nested document
			// held as a string is mostly such runs between escapes.
			j := i + 1
			for j < len(d) && d[j] >= ' ' && d[j] != '"' && d[j] != '\\' && d[j] < utf8.RuneSelf {
				j++
			}
			b = append(b, d[i:j]...)
			i = j
		default:
			r, n := utf8.DecodeRune(d[i:])
			if r == utf8.RuneError && n == 1 {
				b = utf8.AppendRune(b, utf8.RuneError)
			} else {
				b = append(b, d[i:i+n]...)
			}
			i += n
		}
	}
	return nil, errScan
}

// hexEscape returns the code unit of a \uXXXX escape at the start of d, or
// -1 if d does not start with one.
func hexEscape(d []byte) rune {
	if len(d) < 6 || d[0] != '\\' || d[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range d[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}
