package store

import (
	"bytes"
	"strconv"
	"unicode/utf8"
)

// Reading and writing events costs what checking their canonical form
// costs, so the common case is checked by one scan of the bytes rather
// than by decoding and re-encoding them: [isCanonical] says yes only for
// bytes [canonicalJSON] would leave unchanged, and anything it is unsure
// of goes the slow way (FuzzIsCanonical holds it to that).

// maxCanonicalDepth bounds the nesting isCanonical follows; deeper values
// take the slow path.
const maxCanonicalDepth = 512

// isCanonical reports whether b is one JSON value already in the form
// canonicalJSON gives: no whitespace, object keys strictly increasing (by
// bytes), strings with no escapes but \" \\ \n \r \t and valid UTF-8
// without U+2028 and U+2029, numbers as JSON spells them. False means
// "not sure", never "not JSON".
func isCanonical(b []byte) bool {
	end, ok := canonicalValue(b, 0, 0)
	return ok && end == len(b)
}

// canonicalValue checks the value starting at b[i] and returns where it
// ends.
func canonicalValue(b []byte, i, depth int) (int, bool) {
	if i >= len(b) {
		return 0, false
	}
	switch c := b[i]; {
	case c == '"':
		return canonicalString(b, i)
	case c == '{':
		return canonicalObject(b, i, depth)
	case c == '[':
		return canonicalArray(b, i, depth)
	case c == 't':
		return literal(b, i, "true")
	case c == 'f':
		return literal(b, i, "false")
	case c == 'n':
		return literal(b, i, "null")
	case c == '-' || c >= '0' && c <= '9':
		return canonicalNumber(b, i)
	}
	return 0, false
}

func literal(b []byte, i int, word string) (int, bool) {
	if bytes.HasPrefix(b[i:], []byte(word)) {
		return i + len(word), true
	}
	return 0, false
}

func canonicalObject(b []byte, i, depth int) (int, bool) {
	if depth >= maxCanonicalDepth {
		return 0, false
	}
	i++ // {
	if i < len(b) && b[i] == '}' {
		return i + 1, true
	}
	var prev []byte
	for first := true; ; first = false {
		end, ok := canonicalString(b, i)
		if !ok {
			return 0, false
		}
		key := b[i+1 : end-1]
		// A key with an escape sorts by its decoded bytes; leave it to
		// the slow path.
		if bytes.IndexByte(key, '\\') >= 0 || !first && bytes.Compare(prev, key) >= 0 {
			return 0, false
		}
		prev = key
		if end >= len(b) || b[end] != ':' {
			return 0, false
		}
		if i, ok = canonicalValue(b, end+1, depth+1); !ok || i >= len(b) {
			return 0, false
		}
		switch b[i] {
		case ',':
			i++
		case '}':
			return i + 1, true
		default:
			return 0, false
		}
	}
}

func canonicalArray(b []byte, i, depth int) (int, bool) {
	if depth >= maxCanonicalDepth {
		return 0, false
	}
	i++ // [
	if i < len(b) && b[i] == ']' {
		return i + 1, true
	}
	for {
		var ok bool
		if i, ok = canonicalValue(b, i, depth+1); !ok || i >= len(b) {
			return 0, false
		}
		switch b[i] {
		case ',':
			i++
		case ']':
			return i + 1, true
		default:
			return 0, false
		}
	}
}

// plainStringByte says which bytes stand for themselves in a canonical
// string: printable ASCII but the quote and the backslash.
var plainStringByte = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// canonicalString checks the string starting at the quote b[i].
func canonicalString(b []byte, i int) (int, bool) {
	if i >= len(b) || b[i] != '"' {
		return 0, false
	}
	for i++; i < len(b); {
		// Most bytes of a string are plain: skip them a run at a time.
		for i < len(b) && plainStringByte[b[i]] {
			i++
		}
		if i >= len(b) {
			break
		}
		c := b[i]
		switch {
		case c == '"':
			return i + 1, true
		case c == '\\':
			if i+1 >= len(b) {
				return 0, false
			}
			switch b[i+1] {
			case '"', '\\', 'n', 'r', 't':
				i += 2
			default:
				return 0, false
			}
		case c < 0x20:
			return 0, false
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
				return 0, false
			}
			i += size
		}
	}
	return 0, false
}

// canonicalNumber checks a number as JSON's grammar spells it (which
// canonicalJSON keeps exactly).
func canonicalNumber(b []byte, i int) (int, bool) {
	digits := func(i int) int {
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i
	}
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(i)
	default:
		return 0, false
	}
	if i < len(b) && b[i] == '.' {
		j := digits(i + 1)
		if j == i+1 {
			return 0, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(i)
		if j == i {
			return 0, false
		}
		i = j
	}
	return i, true
}

// splitLine takes a stored event line apart by the fixed layout of its
// canonical form ([splitLayout]) into the fields encoding/json would give.
// ok is false when the line does not have that shape; the caller then
// decodes it with encoding/json, which says what is wrong.
func splitLine(line []byte) (w wireEvent, ok bool) {
	l, ok := splitLayout(line)
	if !ok {
		return w, false
	}
	n, err := strconv.ParseInt(string(l.seq), 10, 64)
	if err != nil {
		return w, false
	}
	return wireEvent{At: string(l.at), Begin: l.begin, Data: l.data, Hash: string(l.hash), PrevHash: string(l.prevHash), Seq: n, Type: string(l.typ)}, true
}

// lineLayout is an event line taken apart by its layout, every part
// aliasing the line, nothing checked but the layout.
type lineLayout struct {
	at, data, hash, prevHash, seq, typ []byte
	begin                              bool
	// hashAt is where the hash member (`,"hash":"H"`) starts: the line
	// without line[hashAt:hashAt+hashMemberLen] is the body its hash
	// covers.
	hashAt int
}

// hashMemberLen is the length of `,"hash":"H"`.
const hashMemberLen = len(`,"hash":"`) + hashHexLen + len(`"`)

// splitLayout takes a stored event line apart by the fixed layout of its
// canonical form, from the end (the members after data have no escapes):
// `{"at":"A",["begin":true,]"data":D,"hash":"H","prevHash":"P","seq":N,"type":"T"}`.
// ok is false when the line does not have that shape. N is digits not
// beginning with 0 (unless it is 0) or '-'; it may still begin with '+'
// or overflow.
func splitLayout(line []byte) (l lineLayout, ok bool) {
	rest, ok := bytes.CutSuffix(line, []byte(`"}`))
	if !ok {
		return l, false
	}
	i := bytes.LastIndex(rest, []byte(`,"type":"`))
	if i < 0 {
		return l, false
	}
	l.typ, rest = rest[i+len(`,"type":"`):], rest[:i]
	i = bytes.LastIndex(rest, []byte(`,"seq":`))
	if i < 0 {
		return l, false
	}
	seq := rest[i+len(`,"seq":`):]
	if len(seq) == 0 || len(seq) > 1 && seq[0] == '0' || seq[0] == '-' {
		return l, false
	}
	l.seq, rest = seq, rest[:i]
	const hashes = hashMemberLen + len(`,"prevHash":"`) + hashHexLen + len(`"`)
	if len(rest) < hashes {
		return l, false
	}
	tail := rest[len(rest)-hashes:]
	if !bytes.HasPrefix(tail, []byte(`,"hash":"`)) || !bytes.HasPrefix(tail[len(`,"hash":"`)+hashHexLen:], []byte(`","prevHash":"`)) || tail[len(tail)-1] != '"' {
		return l, false
	}
	l.hash = tail[len(`,"hash":"`):][:hashHexLen]
	l.prevHash = tail[len(tail)-1-hashHexLen : len(tail)-1]
	rest = rest[:len(rest)-hashes]
	l.hashAt = len(rest)
	head, ok := bytes.CutPrefix(rest, []byte(`{"at":"`))
	if !ok {
		return l, false
	}
	q := bytes.IndexByte(head, '"')
	if q < 0 {
		return l, false
	}
	l.at, head = head[:q], head[q+1:]
	if after, ok := bytes.CutPrefix(head, []byte(`,"begin":true`)); ok {
		l.begin, head = true, after
	}
	if l.data, ok = bytes.CutPrefix(head, []byte(`,"data":`)); !ok || len(l.data) == 0 {
		return l, false
	}
	return l, true
}
