package cli

import (
	"strings"
	"unicode/utf8"
)

// Appending forms of printable and eventtext.OneLine, for the audit's
// text (auditsteps.go, audittext.go): the same bytes, without a string
// per call. TestAppendText and FuzzAppendText hold them to the two.

// appendPrintable appends printable(s).
func appendPrintable[T string | []byte](b []byte, s T) []byte {
	start := len(b)
	b = append(b, s...)
	return printableFrom(b, start)
}

// printableFrom makes b[start:] printable(string(b[start:])): b as it is
// unless that part holds a control character.
func printableFrom(b []byte, start int) []byte {
	if !hasControl(b[start:]) {
		return b
	}
	s := string(b[start:])
	b = b[:start]
	for _, r := range s {
		if isControl(r) { // at most U+009F: \u and four digits, as printable's %04x
			const hex = "0123456789abcdef"
			b = append(b, '\\', 'u', '0', '0', hex[r>>4&0xf], hex[r&0xf])
			continue
		}
		b = utf8.AppendRune(b, r)
	}
	return b
}

// hasControl says whether s holds a rune isControl refuses: a byte
// below 0x20 but \n and \t, DEL, or (in UTF-8) U+0080 to U+009F.
func hasControl(s []byte) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c < 0x20 && c != '\n' && c != '\t', c == 0x7f:
			return true
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(s[i:])
			if isControl(r) {
				return true
			}
			i += size - 1
		}
	}
	return false
}

// appendOneLine appends eventtext.OneLine(s): its fields (runs without
// Unicode white space) joined by single spaces.
func appendOneLine(b []byte, s string) []byte {
	first := true
	for f := range strings.FieldsSeq(s) {
		if !first {
			b = append(b, ' ')
		}
		first = false
		b = append(b, f...)
	}
	return b
}

// appendPrintableOneLine appends printable(eventtext.OneLine(s)).
func appendPrintableOneLine(b []byte, s string) []byte {
	start := len(b)
	b = appendOneLine(b, s)
	return printableFrom(b, start)
}
