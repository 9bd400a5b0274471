package expr

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Strings are Go strings (UTF-8) but measured and ordered as the reference
// does, in UTF-16 code units.

// utf16Len is the length of s in UTF-16 code units. Bytes that are not valid
// UTF-8 count as one unit each (they stand for U+FFFD).
func utf16Len(s string) int {
	n := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			n++
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
		i += size
	}
	return n
}

// firstUnit is the first UTF-16 code unit of r.
func firstUnit(r rune) rune {
	if r >= 0x10000 {
		return 0xD800 + (r-0x10000)>>10
	}
	return r
}

// compareStrings orders a and b by UTF-16 code units, as JavaScript's < does.
// UTF-8 byte order is code point order, which differs from code unit order
// only when a BMP character at or above U+E000 meets an astral one.
func compareStrings(a, b string) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	if i == n {
		switch {
		case len(a) < len(b):
			return -1
		case len(a) > len(b):
			return 1
		}
		return 0
	}
	diff := i
	for i > 0 && !utf8.RuneStart(a[i]) {
		i--
	}
	ra, _ := utf8.DecodeRuneInString(a[i:])
	rb, _ := utf8.DecodeRuneInString(b[i:])
	ka, kb := firstUnit(ra), firstUnit(rb)
	if ka == kb {
		ka, kb = ra, rb // same high surrogate: the low ones follow code point order
	}
	if ka == kb {
		// Both are U+FFFD standing for different invalid bytes: order
		// by the bytes, so that the order stays antisymmetric.
		ka, kb = rune(a[diff]), rune(b[diff])
	}
	if ka < kb {
		return -1
	}
	return 1
}

// FormatNumber writes f as JavaScript's Number.prototype.toString does: the
// shortest digits that round-trip, in plain notation for decimal exponents
// from -6 to 21 and in exponent form ("1e+21", "1e-7") outside it. -0 is "0".
func FormatNumber(f float64) string {
	var buf [32]byte
	return string(appendNumber(buf[:0], f))
}

func appendNumber(b []byte, f float64) []byte {
	switch {
	case f != f:
		return append(b, "NaN"...)
	case f == 0:
		return append(b, '0')
	case f > 1.7976931348623157e308:
		return append(b, "Infinity"...)
	case f < -1.7976931348623157e308:
		return append(b, "-Infinity"...)
	}
	if f < 0 {
		b = append(b, '-')
		f = -f
	}
	// Integers below 2^53 print as themselves; the common case, kept fast.
	if f < 1<<53 && f == float64(int64(f)) {
		return strconv.AppendInt(b, int64(f), 10)
	}
	var tmp [32]byte
	e := strconv.AppendFloat(tmp[:0], f, 'e', -1, 64) // d[.ddd]e±XX
	mant, exp, _ := strings.Cut(string(e), "e")
	digits := strings.Replace(mant, ".", "", 1)
	x, _ := strconv.Atoi(exp)
	k, n := len(digits), x+1 // value = 0.d1..dk × 10^n
	switch {
	case k <= n && n <= 21:
		b = append(b, digits...)
		for range n - k {
			b = append(b, '0')
		}
	case 0 < n && n <= 21:
		b = append(b, digits[:n]...)
		b = append(b, '.')
		b = append(b, digits[n:]...)
	case -6 < n && n <= 0:
		b = append(b, "0."...)
		for range -n {
			b = append(b, '0')
		}
		b = append(b, digits...)
	default:
		b = append(b, digits[0])
		if k > 1 {
			b = append(b, '.')
			b = append(b, digits[1:]...)
		}
		b = append(b, 'e')
		if n-1 >= 0 {
			b = append(b, '+')
		}
		b = strconv.AppendInt(b, int64(n-1), 10)
	}
	return b
}

// appendQuoted writes s as a JSON string the way JSON.stringify does:
// only '"', '\\' and control characters are escaped; everything else,
// including '<', '>', '&', U+2028, U+2029 and all non-ASCII text, is raw.
// Bytes that are not valid UTF-8 are written as U+FFFD.
func appendQuoted(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				b = append(b, s[start:i]...)
				b = append(b, "\uFFFD"...)
				i++
				start = i
				continue
			}
			i += size
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"':
			b = append(b, '\\', '"')
		case '\\':
			b = append(b, '\\', '\\')
		case '\b':
			b = append(b, '\\', 'b')
		case '\f':
			b = append(b, '\\', 'f')
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
		}
		i++
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// Stringify converts v to text as the language's str() does: a string is
// returned unchanged; null, booleans and numbers as JavaScript's String()
// writes them ("null", "true", "2.5", "1e+21"); arrays and objects as
// compact JSON (JSON.stringify). Values outside the model print as their
// compact JSON attempt, with "null" for what JSON cannot carry.
func Stringify(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case nil:
		return "null"
	case bool:
		if v {
			return "true"
		}
		return "false"
	case float64:
		return FormatNumber(v)
	}
	b, err := EncodeJSON(v)
	if err != nil {
		return "null"
	}
	return string(b)
}

// RenderString is the text a ${...} reference interpolated into a larger
// string becomes (docs/spec-language.md, "References"): a string as-is,
// null as the empty string, any other value as Stringify writes it.
func RenderString(v any) string {
	if v == nil {
		return ""
	}
	return Stringify(v)
}
