package ir

import (
	"bytes"
	"encoding/binary"
	"unicode/utf8"
)

// fastParse reads the plain block-style YAML that specs are written in
// (block mappings and sequences, single-line plain and quoted scalars,
// single-line flow collections, comments) straight into the positioned
// tree, several times faster than the general parser. It gives up
// (returns nil) on anything outside that subset: anchors, aliases, tags,
// block and multi-line scalars, escapes, tabs, directives, several
// documents, duplicate keys, deep nesting, and every error. load then
// parses the document with yaml.v3, which stays the authority; the fuzz
// test FuzzFastYAML checks that both give the same tree, positions
// included, whenever the fast path accepts.
func fastParse(src []byte) *node {
	if len(src) == 0 {
		return nil
	}
	ok, ascii := fastScannable(src)
	if !ok {
		return nil
	}
	p := &fastParser{src: src, text: string(src)}
	p.splitLines(ascii)
	if p.bad {
		return nil
	}
	p.skipBlank()
	if p.li >= len(p.lines) {
		return nil
	}
	root := p.block(p.lines[p.li].indent, 1)
	if p.bad || root == nil {
		return nil
	}
	p.skipBlank()
	if p.li < len(p.lines) {
		return nil // content left over: a dedent below the root
	}
	return root
}

// fastScannable rejects bytes the fast path does not handle: control
// characters, carriage returns, tabs, a byte-order mark, characters yaml.v3
// refuses as non-printable, U+2028 and U+2029 (line breaks to YAML), and
// invalid UTF-8.
// It also reports whether the text is all ASCII.
func fastScannable(src []byte) (ok, ascii bool) {
	ascii = true
	for i := 0; i < len(src); {
		// Eight printable ASCII bytes at a time (no byte >= 0x80, < 0x20
		// or == 0x7f): most of a spec.
		if i+8 <= len(src) {
			const ones, highs = 0x0101010101010101, 0x8080808080808080
			x := binary.LittleEndian.Uint64(src[i:])
			del := x ^ (0x7f * ones)
			if (x|(x-0x20*ones)|(del-ones)&^del)&highs == 0 {
				i += 8
				continue
			}
		}
		c := src[i]
		if c < 0x80 {
			if c < 0x20 && c != '\n' || c == 0x7f {
				return false, false
			}
			i++
			continue
		}
		ascii = false
		r, size := utf8.DecodeRune(src[i:])
		if r == utf8.RuneError || r == 0xFEFF || r < 0xA0 || r == 0x2028 || r == 0x2029 || r >= 0xD800 && r < 0xE000 || r >= 0xFFFE {
			return false, false
		}
		i += size
	}
	return true, ascii
}

type fastLine struct {
	start, end int // byte range of the line (without '\n')
	indent     int // leading spaces
	pos        int // byte offset where content starts (start+indent, or later for "- key: v")
	blank      bool
	ascii      bool
}

type fastParser struct {
	src   []byte
	text  string  // src as one string: scalars are substrings of it
	slab  []node  // nodes are carved from slabs, one allocation per many
	kids  []*node // so are the children slices of collections
	stack []*node // children being collected; each collection copies its own out
	lines []fastLine
	li    int
	bad   bool
}

func (p *fastParser) splitLines(ascii bool) {
	p.lines = make([]fastLine, 0, bytes.Count(p.src, []byte{'\n'})+1)
	for start := 0; start <= len(p.src); {
		end := bytes.IndexByte(p.src[start:], '\n')
		if end < 0 {
			end = len(p.src)
		} else {
			end += start
		}
		l := fastLine{start: start, end: end, ascii: ascii}
		j := start
		for j < end && p.src[j] == ' ' {
			j++
		}
		l.indent = j - start
		l.pos = j
		l.blank = j == end || p.src[j] == '#'
		if !ascii {
			l.ascii = true
			for k := start; k < end; k++ {
				if p.src[k] >= 0x80 {
					l.ascii = false
					break
				}
			}
		}
		if !l.blank && l.indent == 0 {
			if end-start >= 3 {
				if s := p.text[start : start+3]; s == "---" || s == "..." {
					p.bad = true
				}
			}
			if p.src[j] == '%' {
				p.bad = true
			}
		}
		p.lines = append(p.lines, l)
		start = end + 1
	}
}

func (p *fastParser) skipBlank() {
	for p.li < len(p.lines) && p.lines[p.li].blank {
		p.li++
	}
}

// col returns the 1-based column (in characters) of byte offset off on
// line l.
func (p *fastParser) col(l *fastLine, off int) int {
	if l.ascii {
		return off - l.start + 1
	}
	return utf8.RuneCount(p.src[l.start:off]) + 1
}

// newNode returns a zeroed node from the current slab.
func (p *fastParser) newNode(kind nodeKind, line, col int) *node {
	if len(p.slab) == 0 {
		p.slab = make([]node, min(max(len(p.src)/24, 16), 512))
	}
	n := &p.slab[0]
	p.slab = p.slab[1:]
	n.kind, n.line, n.col = kind, int32(line), int32(col)
	return n
}

// newKids returns a slice of n children carved from the current slab; its
// capacity is n, so an append never writes into a neighbour's children.
func (p *fastParser) newKids(n int) []*node {
	if n == 0 {
		return []*node{} // empty, not nil, as yaml.v3's path builds it
	}
	if n > len(p.kids) {
		if n > 256 {
			return make([]*node, n)
		}
		p.kids = make([]*node, min(max(len(p.src)/16, 256), 4096))
	}
	k := p.kids[:n:n]
	p.kids = p.kids[n:]
	return k
}

func (p *fastParser) fail() *node {
	p.bad = true
	return nil
}

// isSeqEntry reports whether the content at line l is a sequence entry:
// "-" followed by a space or the end of the line.
func (p *fastParser) isSeqEntry(l *fastLine) bool {
	return p.src[l.pos] == '-' && (l.pos+1 == l.end || p.src[l.pos+1] == ' ')
}

// block parses the block collection starting at the current line, whose
// content sits at column indent.
func (p *fastParser) block(indent, depth int) *node {
	if depth > MaxNesting {
		return p.fail()
	}
	l := &p.lines[p.li]
	if p.isSeqEntry(l) {
		return p.sequence(indent, depth)
	}
	return p.mapping(indent, depth)
}

func (p *fastParser) sequence(indent, depth int) *node {
	first := &p.lines[p.li]
	seq := p.newNode(listNode, p.li+1, p.col(first, first.pos))
	base := len(p.stack)
	defer func() { p.stack = p.stack[:base] }()
	for !p.bad {
		p.skipBlank()
		if p.li >= len(p.lines) {
			break
		}
		l := &p.lines[p.li]
		if l.indent != indent {
			if l.indent > indent {
				return p.fail()
			}
			break
		}
		if !p.isSeqEntry(l) {
			break
		}
		dash := l.pos
		j := dash + 1
		for j < l.end && p.src[j] == ' ' {
			j++
		}
		if j == l.end || p.src[j] == '#' {
			// The entry's value is on the following lines, or null.
			lineNo := p.li + 1
			p.li++
			p.skipBlank()
			if p.li < len(p.lines) && p.lines[p.li].indent > indent && p.lines[p.li].pos == p.lines[p.li].start+p.lines[p.li].indent {
				p.stack = append(p.stack, p.block(p.lines[p.li].indent, depth+1))
				continue
			}
			p.stack = append(p.stack, p.newNode(nullNode, lineNo, p.col(l, dash)+1))
			continue
		}
		if p.src[j] == '-' && (j+1 == l.end || p.src[j+1] == ' ') {
			return p.fail() // "- - x": compact nested sequence
		}
		// "- {id: a, do: x}" is a flow collection entry (below), not the
		// "- key: value" form, although a "key: " appears inside it.
		if p.src[j] != '{' && p.src[j] != '[' && p.entryKeyEnd(l, j) >= 0 {
			// "- key: value": a mapping whose keys align with key.
			l.pos = j
			p.stack = append(p.stack, p.mapping(j-l.start, depth+1))
			continue
		}
		v := p.inlineValue(l, j, depth+1)
		if v == nil {
			return p.fail()
		}
		p.stack = append(p.stack, v)
		p.li++
		if !p.dedentAfterScalar(indent) {
			return p.fail()
		}
	}
	if p.bad {
		return nil
	}
	seq.kids = p.newKids(len(p.stack) - base)
	copy(seq.kids, p.stack[base:])
	return seq
}

// dedentAfterScalar checks that the line after a single-line value is not
// more indented than the entry (which would make it a multi-line scalar).
func (p *fastParser) dedentAfterScalar(indent int) bool {
	p.skipBlank()
	return p.li >= len(p.lines) || p.lines[p.li].indent <= indent
}

func (p *fastParser) mapping(indent, depth int) *node {
	if depth > MaxNesting {
		return p.fail()
	}
	first := &p.lines[p.li]
	m := p.newNode(mapNode, p.li+1, p.col(first, first.pos))
	base := len(p.stack) // pairs: key, value, key, value...
	var seen map[string]struct{}
	defer func() { p.stack = p.stack[:base] }()
	for !p.bad {
		p.skipBlank()
		if p.li >= len(p.lines) {
			break
		}
		l := &p.lines[p.li]
		at := l.pos - l.start
		if at != indent {
			if at > indent {
				return p.fail()
			}
			break
		}
		if p.isSeqEntry(l) {
			break // a sequence at the parent's indentation ends this mapping
		}
		key, after := p.key(l)
		if key == nil {
			return p.fail()
		}
		if p.repeated(base, &seen, key.str) {
			return p.fail() // duplicate: yaml.v3's path reports it
		}
		colon := after - 1
		j := after
		for j < l.end && p.src[j] == ' ' {
			j++
		}
		var val *node
		if j == l.end || p.src[j] == '#' {
			lineNo := p.li + 1
			p.li++
			p.skipBlank()
			if p.li < len(p.lines) {
				nl := &p.lines[p.li]
				if nl.indent > indent || nl.indent == indent && p.isSeqEntry(nl) {
					val = p.block(nl.indent, depth+1)
				}
			}
			if val == nil && !p.bad {
				val = p.newNode(nullNode, lineNo, p.col(l, colon)+1)
			}
		} else {
			val = p.inlineValue(l, j, depth+1)
			if val == nil {
				return p.fail()
			}
			p.li++
			if !p.dedentAfterScalar(indent) {
				return p.fail()
			}
		}
		if p.bad {
			return nil
		}
		p.stack = append(p.stack, key, val)
	}
	if p.bad {
		return nil
	}
	pairs := (len(p.stack) - base) / 2
	m.kids = p.newKids(2 * pairs)
	for i := range pairs {
		m.kids[i] = p.stack[base+2*i]
		m.kids[pairs+i] = p.stack[base+2*i+1]
	}
	return m
}

// repeated reports whether key is among the keys collected since base on
// the stack (pairs: key, value, ...). Small mappings are scanned; from 8
// keys on, the keys are indexed in *seen, so that a mapping with many keys
// is not checked in quadratic time.
func (p *fastParser) repeated(base int, seen *map[string]struct{}, key string) bool {
	if *seen == nil {
		if len(p.stack)-base < 16 {
			for i := base; i < len(p.stack); i += 2 {
				if p.stack[i].str == key {
					return true
				}
			}
			return false
		}
		*seen = make(map[string]struct{}, len(p.stack)-base)
		for i := base; i < len(p.stack); i += 2 {
			(*seen)[p.stack[i].str] = struct{}{}
		}
	}
	if _, dup := (*seen)[key]; dup {
		return true
	}
	(*seen)[key] = struct{}{}
	return false
}

// entryKeyEnd returns the offset of the ':' ending a mapping key that
// starts at j on line l, or -1 when the content is not "key: ...".
func (p *fastParser) entryKeyEnd(l *fastLine, j int) int {
	s := p.src
	switch s[j] {
	case '"', '\'':
		q := s[j]
		k := j + 1
		for k < l.end && s[k] != q {
			k++
		}
		if k >= l.end {
			return -1
		}
		k++
		for k < l.end && s[k] == ' ' {
			k++
		}
		if k < l.end && s[k] == ':' && (k+1 == l.end || s[k+1] == ' ') {
			return k
		}
		return -1
	}
	for k := j; k < l.end; k++ {
		if s[k] == '#' && k > j && s[k-1] == ' ' {
			return -1
		}
		if s[k] == ':' && (k+1 == l.end || s[k+1] == ' ') {
			return k
		}
	}
	return -1
}

// maxSimpleKey is the longest implicit key, from its first character to
// the ':', that yaml.v3 accepts (YAML's 1024-character limit on implicit
// keys). It counts characters; the fast path measures bytes, which is never
// fewer, so a key it accepts is always within the limit.
const maxSimpleKey = 1024

// key parses "key:" at the content of line l and returns the key node and
// the offset just after the colon.
func (p *fastParser) key(l *fastLine) (*node, int) {
	j := l.pos
	colon := p.entryKeyEnd(l, j)
	if colon < 0 || colon-j > maxSimpleKey {
		return nil, 0
	}
	s := p.src
	k := p.newNode(stringNode, p.li+1, p.col(l, j))
	switch s[j] {
	case '"', '\'':
		str, end, ok := p.quoted(l, j)
		if !ok {
			return nil, 0
		}
		for end < colon && s[end] == ' ' {
			end++
		}
		if end != colon {
			return nil, 0
		}
		k.str = str
	default:
		if !plainStart(s, j, l.end) {
			return nil, 0
		}
		e := colon
		for e > j && s[e-1] == ' ' {
			e--
		}
		k.str = plainKey(p.text[j:e])
	}
	return k, colon + 1
}

// plainStart reports whether a plain scalar may start at s[j] (YAML
// indicators may not, except -, ? and : before a non-space).
func plainStart(s []byte, j, end int) bool {
	switch s[j] {
	case ',', '[', ']', '{', '}', '#', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`':
		return false
	case '-', '?', ':':
		return j+1 < end && s[j+1] != ' '
	}
	return true
}

// quoted reads a single-line quoted scalar at s[j]. Double-quoted scalars
// with escapes are left to yaml.v3.
func (p *fastParser) quoted(l *fastLine, j int) (string, int, bool) {
	s := p.src
	q := s[j]
	if q == '"' {
		for k := j + 1; k < l.end; k++ {
			switch s[k] {
			case '\\':
				return "", 0, false
			case '"':
				return p.text[j+1 : k], k + 1, true
			}
		}
		return "", 0, false
	}
	var buf []byte
	seg := j + 1
	for k := j + 1; k < l.end; k++ {
		if s[k] != '\'' {
			continue
		}
		if k+1 < l.end && s[k+1] == '\'' {
			buf = append(buf, s[seg:k+1]...)
			k++
			seg = k + 1
			continue
		}
		if buf == nil {
			return p.text[seg:k], k + 1, true
		}
		buf = append(buf, s[seg:k]...)
		return string(buf), k + 1, true
	}
	return "", 0, false
}

// restIsEmpty reports whether only spaces and a comment follow offset k.
func (p *fastParser) restIsEmpty(l *fastLine, k int) bool {
	s := p.src
	if k < l.end && s[k] != ' ' {
		return false
	}
	for k < l.end && s[k] == ' ' {
		k++
	}
	return k == l.end || s[k] == '#'
}

// inlineValue parses the single-line value starting at s[j] of line l.
func (p *fastParser) inlineValue(l *fastLine, j, depth int) *node {
	s := p.src
	n := p.newNode(nullNode, p.li+1, p.col(l, j))
	switch s[j] {
	case '"', '\'':
		str, end, ok := p.quoted(l, j)
		if !ok || !p.restIsEmpty(l, end) {
			return nil
		}
		n.kind, n.str = stringNode, str
		return n
	case '[', '{':
		v, end := p.flow(l, j, depth)
		if v == nil || !p.restIsEmpty(l, end) {
			return nil
		}
		return v
	}
	if !plainStart(s, j, l.end) {
		return nil
	}
	e := l.end
	for k := j; k < l.end; k++ {
		if s[k] == '#' && s[k-1] == ' ' {
			e = k
			break
		}
		if s[k] == ':' && (k+1 == l.end || s[k+1] == ' ') {
			return nil // "a: b: c" is an error for yaml.v3
		}
	}
	for e > j && s[e-1] == ' ' {
		e--
	}
	n.kind, n.str = stringNode, p.text[j:e]
	resolvePlain(n.str, n)
	return n
}

// flow parses a flow collection that closes on the same line.
func (p *fastParser) flow(l *fastLine, j, depth int) (*node, int) {
	if depth > MaxNesting {
		return nil, 0
	}
	s := p.src
	isMap := s[j] == '{'
	closer := byte(']')
	n := p.newNode(listNode, p.li+1, p.col(l, j))
	if isMap {
		closer = '}'
		n.kind = mapNode
	}
	base := len(p.stack)
	defer func() { p.stack = p.stack[:base] }()
	var seen map[string]struct{}
	k := p.skipSpaces(l, j+1)
	if k < l.end && s[k] == closer {
		return n, k + 1
	}
	for {
		if k >= l.end {
			return nil, 0
		}
		var key *node
		if isMap {
			var ok bool
			keyStart := k
			key, k, ok = p.flowScalar(l, k, true)
			if !ok {
				return nil, 0
			}
			if c := p.skipSpaces(l, k); c-keyStart > maxSimpleKey {
				return nil, 0
			}
			if p.repeated(base, &seen, key.str) {
				return nil, 0
			}
			k = p.skipSpaces(l, k)
			if k+1 >= l.end || s[k] != ':' || s[k+1] != ' ' {
				return nil, 0
			}
			k = p.skipSpaces(l, k+1)
			if k >= l.end {
				return nil, 0
			}
		}
		var v *node
		if s[k] == '[' || s[k] == '{' {
			v, k = p.flow(l, k, depth+1)
			if v == nil {
				return nil, 0
			}
		} else {
			var ok bool
			v, k, ok = p.flowScalar(l, k, false)
			if !ok {
				return nil, 0
			}
		}
		if isMap {
			p.stack = append(p.stack, key, v)
		} else {
			p.stack = append(p.stack, v)
		}
		k = p.skipSpaces(l, k)
		if k >= l.end {
			return nil, 0
		}
		switch s[k] {
		case ',':
			k = p.skipSpaces(l, k+1)
			if k < l.end && (s[k] == ']' || s[k] == '}' || s[k] == ',') {
				return nil, 0 // trailing or doubled comma
			}
		case closer:
			if isMap {
				pairs := (len(p.stack) - base) / 2
				n.kids = p.newKids(2 * pairs)
				for i := range pairs {
					n.kids[i] = p.stack[base+2*i]
					n.kids[pairs+i] = p.stack[base+2*i+1]
				}
			} else {
				n.kids = p.newKids(len(p.stack) - base)
				copy(n.kids, p.stack[base:])
			}
			return n, k + 1
		default:
			return nil, 0
		}
	}
}

func (p *fastParser) skipSpaces(l *fastLine, k int) int {
	for k < l.end && p.src[k] == ' ' {
		k++
	}
	return k
}

// flowScalar reads a scalar inside a flow collection. Plain scalars stop
// at a flow indicator; any ':' in a plain value (and a key's ':' without a
// following space) is left to yaml.v3.
func (p *fastParser) flowScalar(l *fastLine, k int, isKey bool) (*node, int, bool) {
	s := p.src
	n := p.newNode(nullNode, p.li+1, p.col(l, k))
	if s[k] == '"' || s[k] == '\'' {
		str, end, ok := p.quoted(l, k)
		if !ok {
			return nil, 0, false
		}
		n.kind, n.str = stringNode, str
		return n, end, true
	}
	if !plainStart(s, k, l.end) {
		return nil, 0, false
	}
	e := k
	for e < l.end {
		c := s[e]
		if c == ',' || c == '[' || c == ']' || c == '{' || c == '}' {
			break
		}
		if c == '#' && s[e-1] == ' ' {
			return nil, 0, false
		}
		if c == ':' {
			if !isKey || e+1 >= l.end || s[e+1] != ' ' {
				return nil, 0, false
			}
			break
		}
		e++
	}
	end := e
	for e > k && s[e-1] == ' ' {
		e--
	}
	if e == k {
		return nil, 0, false
	}
	text := p.text[k:e]
	if isKey {
		n.kind, n.str = stringNode, plainKey(text)
		return n, end, true
	}
	n.kind, n.str = stringNode, text
	resolvePlain(text, n)
	return n, end, true
}
