package yamlerr

import (
	"fmt"
	"strings"
)

// flowProblem places an error inside a flow collection ({...} or [...]).
// yaml.v3 names the line where the innermost collection opens; the
// offending token may be further on, so the collections opening on that
// line are scanned; then those of the line before (at the end of the text
// yaml.v3 names the line after) and of line 1 (when the collection opened
// on the first line, yaml.v3 names the offending token's line instead).
func (l *lines) flowProblem(p *Problem) {
	for i, n := range []int{p.Line, p.Line - 1, 1} {
		if n < 1 || i == 2 && n >= p.Line-1 {
			continue
		}
		for _, open := range openers(l.text(n)) {
			s, _ := l.scan(l.offset(n) + open)
			if s == nil {
				continue
			}
			if s.unclosed() {
				// yaml.v3 names the innermost collection; when one around
				// it is not closed either, that one is the mistake.
				if outer := l.outerUnclosed(s.opener); outer != nil {
					s = outer
				}
			}
			s.explain(l, p)
			return
		}
	}
}

// scan reads the flow collection opening at off and returns the scanner
// when it found a problem (else nil), and how far it read.
func (l *lines) scan(off int) (*flowScanner, int) {
	s := &flowScanner{src: l.src, pos: off, lastPlain: -1}
	if s.node() || !s.found {
		return nil, s.pos
	}
	return s, s.pos
}

// outerUnclosed returns the first collection opening before off that is
// not closed, or nil. It scans at most maxProbeBytes in all.
func (l *lines) outerUnclosed(off int) *flowScanner {
	budget := maxProbeBytes
	for n := 1; n <= l.count() && l.offset(n) < off; n++ {
		for _, open := range openers(l.text(n)) {
			start := l.offset(n) + open
			if start >= off {
				return nil
			}
			s, end := l.scan(start)
			if s != nil && s.unclosed() {
				return s
			}
			if budget -= end - start + 1; budget < 0 {
				return nil
			}
		}
	}
	return nil
}

// unclosed reports whether the problem found is a collection left open:
// the text ended, or a new block entry began below it.
func (s *flowScanner) unclosed() bool { return s.at >= len(s.src) || s.newEntryBelow() }

// openers returns the byte offsets in line t of the '{' and '[' outside
// quotes and comments.
func openers(t []byte) []int {
	var out []int
	quote := byte(0)
	for i, c := range t {
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '#' && (i == 0 || t[i-1] == ' '):
			return out
		case c == '"' || c == '\'':
			if i == 0 || strings.IndexByte(" [{,:", t[i-1]) >= 0 {
				quote = c
			}
		case c == '{' || c == '[':
			out = append(out, i)
		}
	}
	return out
}

// flowScanner reads flow collections the way yaml.v3's scanner and parser
// do, far enough to find the first token where the parser wanted ',' or
// the collection's closer: it records that token and the collection.
type flowScanner struct {
	src []byte
	pos int
	// lastPlain and lastPlainEnd delimit the last plain scalar read
	// (lastPlain is -1 before the first).
	lastPlain, lastPlainEnd int
	// jsonLike: the last node read was quoted or a collection, after which
	// ':' is a value indicator even without a following space.
	jsonLike bool

	found  bool
	at     int  // the offending token (len(src) when the text ended)
	opener int  // the innermost open collection at that point
	isMap  bool // whether that collection is a mapping
}

func isFlowIndicator(c byte) bool { return c == ',' || c == '[' || c == ']' || c == '{' || c == '}' }

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// space skips white space, line breaks and comments.
func (s *flowScanner) space() {
	for s.pos < len(s.src) {
		c := s.src[s.pos]
		switch {
		case isSpace(c):
			s.pos++
		case c == '#' && (s.pos == 0 || isSpace(s.src[s.pos-1])):
			for s.pos < len(s.src) && s.src[s.pos] != '\n' {
				s.pos++
			}
		default:
			return
		}
	}
}

// valueIndicator reports whether the ':' at pos separates a key from its
// value.
func (s *flowScanner) valueIndicator() bool {
	if s.pos >= len(s.src) || s.src[s.pos] != ':' {
		return false
	}
	if s.jsonLike || s.pos+1 == len(s.src) {
		return true
	}
	next := s.src[s.pos+1]
	return isSpace(next) || isFlowIndicator(next)
}

func (s *flowScanner) fail(isMap bool, opener int) bool {
	s.found, s.at, s.isMap, s.opener = true, s.pos, isMap, opener
	return false
}

// node reads one node at pos (white space already skipped); it may be
// empty. It returns false when a problem was found.
func (s *flowScanner) node() bool {
	s.jsonLike = false
	if s.pos >= len(s.src) {
		return true
	}
	switch c := s.src[s.pos]; c {
	case '{', '[':
		return s.collection(c == '{')
	case '"', '\'':
		s.quoted(c)
		s.jsonLike = true
		return true
	case '&', '!':
		// An anchor or a tag, then the node it applies to.
		s.word()
		s.space()
		return s.node()
	case '*':
		s.word()
		return true
	case ',', ']', '}', '#':
		return true // an empty node
	case ':':
		if s.valueIndicator() {
			return true
		}
	case '?', '-':
		if s.pos+1 < len(s.src) && (isSpace(s.src[s.pos+1]) || isFlowIndicator(s.src[s.pos+1])) {
			return true
		}
	case '|', '>', '%', '@', '`':
		return true // not a node start; the caller reports what follows
	}
	s.plain()
	return true
}

// word skips an anchor, alias or tag.
func (s *flowScanner) word() {
	for s.pos < len(s.src) && !isSpace(s.src[s.pos]) && !isFlowIndicator(s.src[s.pos]) {
		s.pos++
	}
}

func (s *flowScanner) quoted(q byte) {
	s.pos++
	for s.pos < len(s.src) {
		c := s.src[s.pos]
		s.pos++
		switch {
		case q == '"' && c == '\\':
			s.pos++
		case c == q && q == '\'' && s.pos < len(s.src) && s.src[s.pos] == '\'':
			s.pos++
		case c == q:
			return
		}
	}
}

// plain reads a plain scalar: it ends before a flow indicator, a ':' that
// indicates a value, or white space followed by a comment or by such an
// end; it may continue over line breaks.
func (s *flowScanner) plain() {
	s.lastPlain = s.pos
	end := s.pos
	for s.pos < len(s.src) {
		c := s.src[s.pos]
		if isFlowIndicator(c) || s.valueIndicator() {
			break
		}
		if isSpace(c) {
			q := s.pos
			for q < len(s.src) && isSpace(s.src[q]) {
				q++
			}
			if q == len(s.src) || s.src[q] == '#' || isFlowIndicator(s.src[q]) {
				break
			}
			s.pos = q
			if s.valueIndicator() {
				break
			}
			continue
		}
		s.pos++
		end = s.pos
	}
	s.lastPlainEnd = end
	s.pos = end
}

// collection reads a flow mapping or sequence whose opener is at pos.
func (s *flowScanner) collection(isMap bool) bool {
	opener := s.pos
	closer := byte(']')
	if isMap {
		closer = '}'
	}
	// atEnd skips space and reports whether the collection ends here;
	// ok is false when the text ends first.
	atEnd := func() (end, ok bool) {
		s.space()
		if s.pos >= len(s.src) {
			return false, false
		}
		if s.src[s.pos] == closer {
			s.pos++
			s.jsonLike = true
			return true, true
		}
		return false, true
	}
	s.pos++
	for first := true; ; first = false {
		end, ok := atEnd()
		if !ok {
			return s.fail(isMap, opener)
		}
		if end {
			return true
		}
		if !first {
			if s.src[s.pos] != ',' {
				return s.fail(isMap, opener)
			}
			s.pos++
			// A trailing comma before the closer is allowed.
			if end, ok := atEnd(); !ok {
				return s.fail(isMap, opener)
			} else if end {
				return true
			}
		}
		if s.src[s.pos] == '?' && s.pos+1 < len(s.src) && isSpace(s.src[s.pos+1]) {
			s.pos++ // an explicit key
			s.space()
		}
		if !s.node() {
			return false
		}
		s.space()
		if s.valueIndicator() {
			s.pos++
			s.space()
			if !s.node() {
				return false
			}
		}
	}
}

// explain turns the problem found into a position and a hint.
func (s *flowScanner) explain(l *lines, p *Problem) {
	closer, what := "]", "list [...]"
	if s.isMap {
		closer, what = "}", "mapping {...}"
	}
	if s.unclosed() {
		line, col := l.position(s.opener)
		p.Line, p.Column = line, col
		p.Hint = fmt.Sprintf("this %s is never closed: add %s (check the quotes and brackets inside it)", what, closer)
		return
	}
	c := s.src[s.at]
	if (c == '[' || c == '{') && s.lastPlain >= 0 && s.lastPlainEnd == s.at {
		// A bracket glued to a plain scalar: string[], (a|b)[] or ${x}
		// written without quotes.
		value := s.valueFrom(s.lastPlain)
		p.Line, p.Column = l.position(s.lastPlain)
		switch {
		case strings.HasSuffix(value, "[]"):
			p.Hint = fmt.Sprintf("quote the type: %s (inside a flow %s, [ starts a list, so a type such as T[] must be in quotes)", quoteYAML(value), what)
		case strings.Contains(value, "${"):
			p.Hint = fmt.Sprintf("quote the text: %s (inside a flow %s, { starts a mapping, so text with ${...} must be in quotes)", quoteYAML(value), what)
		default:
			p.Hint = fmt.Sprintf("quote the value: %s (inside a flow %s, the characters [ ] { } and , are syntax)", quoteYAML(value), what)
		}
		return
	}
	p.Line, p.Column = l.position(s.at)
	if c == ':' {
		p.Hint = fmt.Sprintf("a \":\" follows a complete value: separate the entries of the %s with \",\" and quote a value that contains \": \"", what)
		return
	}
	p.Hint = fmt.Sprintf("separate the entries of the %s with \",\" and close it with %s; quote a value that contains [ ] { } or ,", what, closer)
}

// newEntryBelow reports whether the problem token, or the plain scalar
// run into it, begins a line below the collection's opener the way a new
// block entry or key does ("- {id: b...", "key: ..."): then the collection
// was meant to close before that line.
func (s *flowScanner) newEntryBelow() bool {
	off := s.at
	if s.lastPlain >= 0 && s.lastPlainEnd <= s.at && strings.TrimLeft(string(s.src[s.lastPlainEnd:s.at]), " ") == "" {
		if nl := strings.LastIndexByte(string(s.src[s.lastPlain:s.at]), '\n'); nl >= 0 {
			off = s.lastPlain + nl + 1
			for off < s.at && s.src[off] == ' ' {
				off++
			}
		}
	}
	return s.lineOf(off) != s.lineOf(s.opener) && s.startsLine(off)
}

// startsLine reports whether only spaces and block indicators ("- ", "? ")
// precede off on its line: a token there begins a new block entry, so the
// flow collection before it was meant to end on an earlier line.
func (s *flowScanner) startsLine(off int) bool {
	for i := off - 1; i >= 0 && s.src[i] != '\n'; i-- {
		if c := s.src[i]; c != ' ' && c != '-' && c != '?' {
			return false
		}
	}
	return true
}

// lineOf returns the offset where the line holding off starts.
func (s *flowScanner) lineOf(off int) int {
	for off > 0 && s.src[off-1] != '\n' {
		off--
	}
	return off
}

// valueFrom returns the text of the value starting at off, up to the
// next ',' or closing bracket at its own nesting level (or the line end).
func (s *flowScanner) valueFrom(off int) string {
	depth := 0
	end := off
	for ; end < len(s.src); end++ {
		c := s.src[end]
		if c == '\n' || c == ',' && depth == 0 {
			break
		}
		if c == '[' || c == '{' {
			depth++
		}
		if c == ']' || c == '}' {
			if depth == 0 {
				break
			}
			depth--
		}
	}
	return strings.TrimRight(string(s.src[off:end]), " \t\r")
}

// quoteYAML quotes a value for YAML: double quotes, unless it contains a
// double quote or a backslash, then single quotes.
func quoteYAML(v string) string {
	if !strings.ContainsAny(v, "\"\\") {
		return "\"" + v + "\""
	}
	return "'" + strings.ReplaceAll(v, "'", "''") + "'"
}
