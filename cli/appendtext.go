package cli

import (
	"unicode"
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
	fields := 0
	for i := 0; i < len(s); {
		if size := spaceAt(s, i); size > 0 {
			i += size
			continue
		}
		j := i
		for j < len(s) && spaceAt(s, j) == 0 {
			if s[j] < utf8.RuneSelf {
				j++
			} else {
				_, size := utf8.DecodeRuneInString(s[j:])
				j += size
			}
		}
		if fields > 0 {
			b = append(b, ' ')
		}
		fields++
		b = append(b, s[i:j]...)
		i = j
	}
	return b
}

// spaceAt is the size of the white-space rune at s[i], 0 when it is not
// one.
func spaceAt(s string, i int) int {
	if c := s[i]; c < utf8.RuneSelf {
		switch c {
		case '\t', '\n', '\v', '\f', '\r', ' ':
			return 1
		}
		return 0
	}
	r, size := utf8.DecodeRuneInString(s[i:])
	if unicode.IsSpace(r) {
		return size
	}
	return 0
}

// appendPrintableOneLine appends printable(eventtext.OneLine(s)).
func appendPrintableOneLine(b []byte, s string) []byte {
	start := len(b)
	b = appendOneLine(b, s)
	return printableFrom(b, start)
}
