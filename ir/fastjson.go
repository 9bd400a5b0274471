package ir

import (
	"bytes"
	"unicode/utf16"
	"unicode/utf8"
)

// fastJSON reads a JSON document straight into the positioned tree, as
// fastParse does for block YAML. It exists for the spec snapshot a run
// persists (compact JSON, one line of about 650 KB for 10,000 steps, see
// docs/decisions/0002-yaml-fast-path.md), which every other process that
// reads the run compiles again, and which yaml.v3 takes about 0.12 s to
// parse. JSON text is YAML and yaml.v3 stays the authority: fastJSON gives
// up (returns nil) wherever yaml.v3's reading of the text could differ
// from JSON's or fail, and load then tries the other paths:
//
//   - whitespace other than spaces and newlines (a tab or carriage return);
//   - a raw character that yaml.v3 refuses or reads as a line break, or
//     a byte-order mark (see yamlTextRune), and invalid UTF-8;
//   - an escaped UTF-16 surrogate that is not half of a pair;
//   - a key whose ':' is not on its line within 1024 characters of its
//     start (YAML's rule on implicit keys);
//   - a repeated key, nesting deeper than MaxNesting, more than MaxNodes
//     values;
//   - anything that is not JSON.
//
// Two escapes of JSON yaml.v3 lacks are read as JSON reads them, so
// that a JSON spec is accepted as it is (docs/spec-language.md): \/ (a
// slash; YAML 1.2 has it, yaml.v3 does not) and a UTF-16 surrogate pair
// (one character outside the BMP, which Python's json.dumps writes so by
// default). yaml.v3 refuses both, so for a text holding them this path
// is the only one that loads it; elsewhere in the text the rules above
// still hold.
//
// Positions are yaml.v3's: the line, and the column in characters, of the
// first character of each value and key. FuzzFastJSON and the tests in
// fastjson_test.go require the same tree, positions included, as yaml.v3
// whenever fastJSON accepts, and the same plan or diagnostics from Build;
// for a text with the two escapes above, the same values as yaml.v3 reads
// from it with them written its way (checkJSONAgrees).
func fastJSON(src []byte) *node {
	start := 0
	for start < len(src) && (src[start] == ' ' || src[start] == '\n') {
		start++
	}
	if !jsonStart(src[start:]) {
		return nil // not JSON: told before any work for a YAML spec
	}
	p := &jsonParser{fastParser: fastParser{src: src, text: string(src)}, line: 1}
	p.space()
	root := p.value(1)
	if root == nil {
		return nil
	}
	p.space()
	if p.i != len(src) {
		return nil
	}
	return root
}

// jsonStart reports whether s (after leading whitespace) may start a JSON
// document, from its first bytes: a YAML spec ("version: 1", "flows:",
// "- x", "{a: 1}") is told apart there.
func jsonStart(s []byte) bool {
	if len(s) == 0 {
		return false
	}
	switch s[0] {
	case '[', '"':
		return true
	case '{':
		rest := bytes.TrimLeft(s[1:], " \n")
		return len(rest) > 0 && (rest[0] == '"' || rest[0] == '}')
	case '-':
		return len(s) > 1 && s[1] >= '0' && s[1] <= '9'
	case 't':
		return bytes.HasPrefix(s, []byte("true"))
	case 'f':
		return bytes.HasPrefix(s, []byte("false"))
	case 'n':
		return bytes.HasPrefix(s, []byte("null"))
	}
	return s[0] >= '0' && s[0] <= '9'
}

// jsonParser shares fastParser's node slabs, child stack and duplicate-key
// check.
type jsonParser struct {
	fastParser
	i         int // the next byte to read
	line      int // 1-based line of src[i]
	lineStart int // offset of the first byte of that line
	// lineCont counts the UTF-8 continuation bytes between lineStart and
	// i, so that a column counts characters: valid JSON has non-ASCII
	// bytes only inside strings, where str counts them.
	lineCont int
	values   int // keys and values read, against MaxNodes
}

func (p *jsonParser) col() int { return p.i - p.lineStart - p.lineCont + 1 }

// space skips spaces and newlines, the only whitespace the fast path takes.
func (p *jsonParser) space() {
	for p.i < len(p.src) {
		switch p.src[p.i] {
		case ' ':
		case '\n':
			p.line++
			p.lineStart, p.lineCont = p.i+1, 0
		default:
			return
		}
		p.i++
	}
}

// counted reports whether one more value keeps the document within
// MaxNodes (yaml.v3's path counts keys and values alike).
func (p *jsonParser) counted() bool {
	p.values++
	return p.values <= MaxNodes
}

// value reads the value at src[i] (after whitespace), at nesting depth.
func (p *jsonParser) value(depth int) *node {
	if p.i >= len(p.src) || !p.counted() {
		return nil
	}
	n := p.newNode(nullNode, p.line, p.col())
	switch c := p.src[p.i]; c {
	case '{':
		return p.object(n, depth)
	case '[':
		return p.array(n, depth)
	case '"':
		s, ok := p.str()
		if !ok {
			return nil
		}
		n.kind, n.str = stringNode, s
		return n
	case 't':
		return p.literal(n, "true")
	case 'f':
		return p.literal(n, "false")
	case 'n':
		return p.literal(n, "null")
	default:
		if c == '-' || c >= '0' && c <= '9' {
			return p.number(n)
		}
	}
	return nil
}

func (p *jsonParser) object(n *node, depth int) *node {
	if depth > MaxNesting {
		return nil
	}
	n.kind = mapNode
	p.i++
	p.space()
	base := len(p.stack) // pairs: key, value, key, value...
	var seen map[string]struct{}
	if p.i < len(p.src) && p.src[p.i] == '}' {
		p.i++
		n.kids = p.newKids(0)
		return n
	}
	for {
		if p.i >= len(p.src) || p.src[p.i] != '"' || !p.counted() {
			return nil
		}
		key := p.newNode(stringNode, p.line, p.col())
		start, line := p.i, p.line
		s, ok := p.str()
		if !ok {
			return nil
		}
		key.str = s
		p.space()
		// Bytes are never fewer than characters, so a key within the
		// limit in bytes is within yaml.v3's limit in characters.
		if p.line != line || p.i >= len(p.src) || p.src[p.i] != ':' || p.i-start > maxSimpleKey {
			return nil
		}
		if p.repeated(base, &seen, s) {
			return nil // yaml.v3's path reports the duplicate
		}
		p.i++
		p.space()
		v := p.value(depth + 1)
		if v == nil {
			return nil
		}
		p.stack = append(p.stack, key, v)
		p.space()
		if p.i >= len(p.src) {
			return nil
		}
		switch p.src[p.i] {
		case ',':
			p.i++
			p.space()
		case '}':
			p.i++
			pairs := (len(p.stack) - base) / 2
			n.kids = p.newKids(2 * pairs)
			for i := range pairs {
				n.kids[i] = p.stack[base+2*i]
				n.kids[pairs+i] = p.stack[base+2*i+1]
			}
			p.stack = p.stack[:base]
			return n
		default:
			return nil
		}
	}
}

func (p *jsonParser) array(n *node, depth int) *node {
	if depth > MaxNesting {
		return nil
	}
	n.kind = listNode
	p.i++
	p.space()
	base := len(p.stack)
	if p.i < len(p.src) && p.src[p.i] == ']' {
		p.i++
		n.kids = p.newKids(0)
		return n
	}
	for {
		v := p.value(depth + 1)
		if v == nil {
			return nil
		}
		p.stack = append(p.stack, v)
		p.space()
		if p.i >= len(p.src) {
			return nil
		}
		switch p.src[p.i] {
		case ',':
			p.i++
			p.space()
		case ']':
			p.i++
			n.kids = p.newKids(len(p.stack) - base)
			copy(n.kids, p.stack[base:])
			p.stack = p.stack[:base]
			return n
		default:
			return nil
		}
	}
}

// endsScalar reports whether a number or literal may end before src[k]:
// at the end of the text, whitespace or a flow indicator.
func (p *jsonParser) endsScalar(k int) bool {
	if k >= len(p.src) {
		return true
	}
	switch p.src[k] {
	case ' ', '\n', ',', ']', '}':
		return true
	}
	return false
}

// literal reads true, false or null, which YAML resolves as JSON does.
func (p *jsonParser) literal(n *node, word string) *node {
	end := p.i + len(word)
	if end > len(p.src) || p.text[p.i:end] != word || !p.endsScalar(end) {
		return nil
	}
	p.i = end
	n.kind, n.str = stringNode, word
	resolvePlain(word, n)
	return n
}

// number reads a JSON number. Every JSON number is a YAML 1.2 core
// schema number, resolved here by the same code as on yaml.v3's path.
func (p *jsonParser) number(n *node) *node {
	s := p.src
	k := p.i
	if s[k] == '-' {
		k++
	}
	digits := func() bool {
		start := k
		for k < len(s) && s[k] >= '0' && s[k] <= '9' {
			k++
		}
		return k > start
	}
	switch {
	case k < len(s) && s[k] == '0':
		k++
	case !digits():
		return nil
	}
	if k < len(s) && s[k] == '.' {
		k++
		if !digits() {
			return nil
		}
	}
	if k < len(s) && (s[k] == 'e' || s[k] == 'E') {
		k++
		if k < len(s) && (s[k] == '+' || s[k] == '-') {
			k++
		}
		if !digits() {
			return nil
		}
	}
	if !p.endsScalar(k) {
		return nil // "01", "1x": not JSON
	}
	text := p.text[p.i:k]
	p.i = k
	n.kind, n.str = stringNode, text
	resolvePlain(text, n)
	return n
}

// str reads the string at src[i], decoding its escapes as yaml.v3 does.
func (p *jsonParser) str() (string, bool) {
	s := p.src
	var buf []byte
	seg := p.i + 1
	cont := 0
	for k := seg; k < len(s); k++ {
		c := s[k]
		switch {
		case c == '"':
			p.i = k + 1
			p.lineCont += cont
			if buf == nil {
				return p.text[seg:k], true
			}
			buf = append(buf, s[seg:k]...)
			return string(buf), true
		case c == '\\':
			if k+1 >= len(s) {
				return "", false
			}
			buf = append(buf, s[seg:k]...)
			switch e := s[k+1]; e {
			case '"', '\\':
				buf = append(buf, e)
			case 'b':
				buf = append(buf, '\b')
			case 'f':
				buf = append(buf, '\f')
			case 'n':
				buf = append(buf, '\n')
			case 'r':
				buf = append(buf, '\r')
			case 't':
				buf = append(buf, '\t')
			case '/': // JSON's, which yaml.v3 lacks (see fastJSON)
				buf = append(buf, '/')
			case 'u':
				r, ok := hex4(s, k+2)
				if !ok {
					return "", false
				}
				if utf16.IsSurrogate(r) {
					// Only a pair, high then low: one character.
					if r > 0xDBFF || k+7 >= len(s) || s[k+6] != '\\' || s[k+7] != 'u' {
						return "", false
					}
					lo, ok := hex4(s, k+8)
					if !ok || lo < 0xDC00 || lo > 0xDFFF {
						return "", false
					}
					r = utf16.DecodeRune(r, lo)
					k += 6
				}
				buf = utf8.AppendRune(buf, r)
				k += 4
			default:
				return "", false
			}
			k++
			seg = k + 1
		case c < 0x20 || c == 0x7f:
			return "", false // DEL: JSON allows it raw, YAML does not
		case c >= 0x80:
			r, size := utf8.DecodeRune(s[k:])
			if !yamlTextRune(r, size) {
				return "", false
			}
			cont += size - 1
			k += size - 1
		}
	}
	return "", false
}

// yamlTextRune reports whether yaml.v3 reads the non-ASCII character r
// (of size bytes) in a double-quoted scalar as itself: valid UTF-8 that
// its reader accepts (no C1 control, no U+FFFE or U+FFFF) and that is not
// a line break to YAML (U+0085, U+2028, U+2029) or a byte-order mark.
func yamlTextRune(r rune, size int) bool {
	switch {
	case r == utf8.RuneError && size == 1, r < 0xA0, r == 0x2028, r == 0x2029, r == 0xFEFF, r == 0xFFFE, r == 0xFFFF:
		return false
	}
	return true
}

// hex4 reads the four hexadecimal digits at s[k:].
func hex4(s []byte, k int) (rune, bool) {
	if k+4 > len(s) {
		return 0, false
	}
	var r rune
	for _, c := range s[k : k+4] {
		v := digitVal(rune(c))
		if v < 0 {
			return 0, false
		}
		r = r<<4 | rune(v)
	}
	return r, true
}
