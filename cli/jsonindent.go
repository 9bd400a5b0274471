package cli

import (
	"bytes"
	"errors"
	"strings"
)

// errNotJSON is appendIndent's answer to input that is empty or whose
// strings or brackets do not close: it indents JSON known to be valid
// (what the engine and encoding/json produce), and says so when it sees
// that it is not.
var errNotJSON = errors.New("internal error: not a JSON value")

// appendIndent appends src, one valid JSON value, to dst laid out as
// json.Indent(dst, src, prefix, indent) lays it out: a newline, prefix
// and one indent per level after each '{' or '[' of a non-empty
// container and after each ',', before the closer of a non-empty
// container, ": " after a key; "{}" and "[]" for empty ones. Whitespace
// between tokens is dropped, trailing whitespace too (json.Indent keeps
// the trailing kind). It is a plain byte loop, several times cheaper
// than json.Indent's scanner on a long audit (docs/cli.md, "stratum
// audit"); FuzzAppendIndent holds the two to the same bytes.
//
// On input that is empty or whose strings or brackets do not close it
// returns dst as it was and errNotJSON; other invalid input is not
// detected.
func appendIndent(dst, src []byte, prefix, indent string) ([]byte, error) {
	nl := newlines{prefix: prefix, indent: indent}
	return nl.appendIndent(dst, src, 0)
}

// appendIndent is [appendIndent] with n's prefix and indent, for a value
// that begins depth levels in (its members are depth+1 indents in, its
// closer depth), reusing n's line from one call to the next.
func (n *newlines) appendIndent(dst, src []byte, depth int) ([]byte, error) {
	orig := len(dst)
	open := 0
	needIndent := false // a container just opened: indent unless it closes at once
	for i := 0; i < len(src); {
		c := src[i]
		switch c {
		case ' ', '\t', '\n', '\r':
			i++
			continue
		case '}', ']':
			if open--; open < 0 {
				return dst[:orig], errNotJSON
			}
			if needIndent {
				needIndent = false
			} else {
				depth--
				dst = n.append(dst, depth)
			}
			dst = append(dst, c)
			i++
			continue
		}
		if needIndent {
			needIndent = false
			depth++
			dst = n.append(dst, depth)
		}
		switch c {
		case '"':
			end := stringEnd(src, i)
			if end < 0 {
				return dst[:orig], errNotJSON
			}
			dst = append(dst, src[i:end]...)
			i = end
			continue
		case '{', '[':
			open++
			needIndent = true
			dst = append(dst, c)
		case ',':
			dst = append(dst, ',')
			dst = n.append(dst, depth)
		case ':':
			dst = append(dst, ':', ' ')
		default:
			// A number or a literal: up to the next delimiter.
			j := i + 1
			for j < len(src) && !isJSONDelimiter(src[j]) {
				j++
			}
			dst = append(dst, src[i:j]...)
			i = j
			continue
		}
		i++
	}
	if open != 0 || len(dst) == orig {
		return dst[:orig], errNotJSON
	}
	return dst, nil
}

// stringEnd is the index just after the closing quote of the JSON string
// that opens at src[at], or -1 when it does not close. A quote closes the
// string when an even number of backslashes precedes it.
func stringEnd(src []byte, at int) int {
	for i := at + 1; ; {
		q := bytes.IndexByte(src[i:], '"')
		if q < 0 {
			return -1
		}
		i += q
		backslashes := 0
		for j := i - 1; j > at && src[j] == '\\'; j-- {
			backslashes++
		}
		i++
		if backslashes%2 == 0 {
			return i
		}
	}
}

func isJSONDelimiter(c byte) bool {
	switch c {
	case ',', ':', '{', '}', '[', ']', '"', ' ', '\t', '\n', '\r':
		return true
	}
	return false
}

// newlines appends "\n", the prefix and depth indents, from one string
// grown as deeper levels need it; its zero line is grown on first use.
type newlines struct {
	prefix, indent string
	line           string // "\n" + prefix + indent × levels
}

func (n *newlines) append(dst []byte, depth int) []byte {
	want := 1 + len(n.prefix) + depth*len(n.indent)
	if len(n.line) < want {
		n.line = "\n" + n.prefix + strings.Repeat(n.indent, max(2*depth, 16))
	}
	return append(dst, n.line[:want]...)
}
