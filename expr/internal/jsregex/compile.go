package jsregex

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"
)

// SyntaxError is a pattern JavaScript itself refuses in u mode.
type SyntaxError struct{ Msg string }

func (e *SyntaxError) Error() string { return "invalid regex: " + e.Msg }

func syntaxErrorf(format string, args ...any) error {
	return &SyntaxError{fmt.Sprintf(format, args...)}
}

// UnsupportedError is a pattern JavaScript accepts but this implementation
// cannot reproduce exactly (a Unicode property Go has no table for).
type UnsupportedError struct{ What string }

func (e *UnsupportedError) Error() string { return "unsupported in regex: " + e.What }

// TooLargeError is a pattern whose translation would exceed MaxStates.
type TooLargeError struct{}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("regex too large: its counted repetitions expand beyond %d states", MaxStates)
}

// MaxStates bounds the size of a translated pattern, counted in atoms after
// counted repetitions are expanded. It bounds both the compiled program and
// the cost of matching (RE2 time is text length times program size).
const MaxStates = 10000

type kind uint8

const (
	kSet    kind = iota // one code point from a set
	kAssert             // ^ $ \b \B
	kConcat
	kAlt
	kGroup
	kRepeat
)

type rnode struct {
	kind     kind
	set      set
	assert   string // the Go spelling of an assertion
	subs     []*rnode
	min, max int // kRepeat; max < 0 is unbounded
}

// infinity is V8's bound on quantifier counts: larger values saturate.
const infinity = 1<<31 - 1

type parser struct {
	src []rune
	i   int
}

// Regexp is a translated pattern.
type Regexp struct {
	*regexp.Regexp
	// States is the translation's size in atoms after counted repetitions
	// are expanded (at most MaxStates). RE2 matching costs at most about
	// States steps per code point of the text.
	States int
}

// States is the size in atoms that Compile would give pattern's
// translation (Regexp.States), without compiling it: what a holder of
// patterns not yet compiled can size its memory by.
func States(pattern string, maxInput int) (int, error) {
	_, states, err := translate(pattern, maxInput)
	return states, err
}

// translate parses pattern and emits its RE2 source and size in states.
func translate(pattern string, maxInput int) (string, int, error) {
	p := &parser{src: []rune(pattern)}
	tree, err := p.disjunction()
	if err != nil {
		return "", 0, err
	}
	if p.i < len(p.src) { // only an unmatched ')' stops a top-level disjunction
		return "", 0, syntaxErrorf("unmatched ')'")
	}
	var b strings.Builder
	e := emitter{b: &b, maxInput: maxInput}
	if err := e.emit(tree); err != nil {
		return "", 0, err
	}
	return b.String(), max(e.states, 1), nil
}

// Compile checks pattern against the ECMAScript grammar in u mode and
// translates it into a Go regexp that finds a match exactly when JavaScript
// would, for texts of at most maxInput code points. It does not apply the
// shape filter; call Shape first.
func Compile(pattern string, maxInput int) (*Regexp, error) {
	src, states, err := translate(pattern, maxInput)
	if err != nil {
		return nil, err
	}
	re, err := regexp.Compile(src)
	if err != nil {
		var se *syntax.Error
		if errors.As(err, &se) && (se.Code == syntax.ErrLarge || se.Code == syntax.ErrNestingDepth) {
			return nil, &TooLargeError{}
		}
		// The translation only produces valid RE2; reaching this is a bug,
		// reported rather than hidden.
		return nil, fmt.Errorf("internal error translating regex %q: %w", pattern, err)
	}
	return &Regexp{Regexp: re, States: states}, nil
}

func (p *parser) peek() (rune, bool) {
	if p.i < len(p.src) {
		return p.src[p.i], true
	}
	return 0, false
}

func (p *parser) peekIs(r rune) bool {
	c, ok := p.peek()
	return ok && c == r
}

func (p *parser) disjunction() (*rnode, error) {
	var alts []*rnode
	for {
		a, err := p.alternative()
		if err != nil {
			return nil, err
		}
		alts = append(alts, a)
		if !p.peekIs('|') {
			break
		}
		p.i++
	}
	if len(alts) == 1 {
		return alts[0], nil
	}
	return &rnode{kind: kAlt, subs: alts}, nil
}

func (p *parser) alternative() (*rnode, error) {
	var terms []*rnode
	for {
		c, ok := p.peek()
		if !ok || c == '|' || c == ')' {
			return &rnode{kind: kConcat, subs: terms}, nil
		}
		t, err := p.term()
		if err != nil {
			return nil, err
		}
		terms = append(terms, t)
	}
}

func isQuantifierChar(c rune) bool { return c == '*' || c == '+' || c == '?' || c == '{' }

func (p *parser) term() (*rnode, error) {
	c, _ := p.peek()
	var assert string
	switch c {
	case '^':
		assert = `\A`
	case '$':
		assert = `\z`
	case '\\':
		if p.i+1 < len(p.src) {
			switch p.src[p.i+1] {
			case 'b':
				assert = `\b`
			case 'B':
				assert = `\B`
			}
		}
	}
	if assert != "" {
		if c == '\\' {
			p.i += 2
		} else {
			p.i++
		}
		if n, ok := p.peek(); ok && isQuantifierChar(n) {
			return nil, syntaxErrorf("nothing to repeat: an assertion cannot be quantified")
		}
		return &rnode{kind: kAssert, assert: assert}, nil
	}
	atom, err := p.atom()
	if err != nil {
		return nil, err
	}
	return p.quantifier(atom)
}

func (p *parser) atom() (*rnode, error) {
	c := p.src[p.i]
	switch c {
	case '.':
		p.i++
		return &rnode{kind: kSet, set: dotSet}, nil
	case '(':
		p.i++
		if p.peekIs('?') {
			return nil, &UnsupportedError{`"(?" group`}
		}
		inner, err := p.disjunction()
		if err != nil {
			return nil, err
		}
		if !p.peekIs(')') {
			return nil, syntaxErrorf("unterminated group")
		}
		p.i++
		return &rnode{kind: kGroup, subs: []*rnode{inner}}, nil
	case '[':
		p.i++
		s, err := p.class()
		if err != nil {
			return nil, err
		}
		return &rnode{kind: kSet, set: s}, nil
	case '\\':
		p.i++
		return p.atomEscape()
	case '*', '+', '?':
		return nil, syntaxErrorf("nothing to repeat")
	case '{', '}':
		return nil, syntaxErrorf("lone quantifier bracket %q", c)
	case ']':
		return nil, syntaxErrorf("lone ']'")
	}
	p.i++
	return &rnode{kind: kSet, set: single(c)}, nil
}

func (p *parser) quantifier(atom *rnode) (*rnode, error) {
	c, ok := p.peek()
	if !ok {
		return atom, nil
	}
	lo, hi := 0, 0
	switch c {
	case '*':
		lo, hi = 0, -1
		p.i++
	case '+':
		lo, hi = 1, -1
		p.i++
	case '?':
		lo, hi = 0, 1
		p.i++
	case '{':
		var ok bool
		lo, hi, ok = p.braces()
		if !ok {
			return nil, syntaxErrorf("incomplete quantifier")
		}
		if hi >= 0 && lo > hi {
			return nil, syntaxErrorf("numbers out of order in {} quantifier")
		}
	default:
		return atom, nil
	}
	if p.peekIs('?') {
		p.i++ // lazy: irrelevant to whether a match exists
	}
	return &rnode{kind: kRepeat, subs: []*rnode{atom}, min: lo, max: hi}, nil
}

// braces parses {m}, {m,} or {m,n} at p.i. Counts saturate at infinity as
// V8's do.
func (p *parser) braces() (lo, hi int, ok bool) {
	j := p.i + 1
	lo, j, ok = p.count(j)
	if !ok {
		return 0, 0, false
	}
	hi = lo
	if j < len(p.src) && p.src[j] == ',' {
		j++
		if j < len(p.src) && p.src[j] == '}' {
			hi = -1
		} else if hi, j, ok = p.count(j); !ok {
			return 0, 0, false
		}
	}
	if j >= len(p.src) || p.src[j] != '}' {
		return 0, 0, false
	}
	p.i = j + 1
	return lo, hi, true
}

func (p *parser) count(j int) (int, int, bool) {
	start, v := j, 0
	for j < len(p.src) && p.src[j] >= '0' && p.src[j] <= '9' {
		d := int(p.src[j] - '0')
		if v > (infinity-d)/10 {
			v = infinity
		} else if v != infinity {
			v = v*10 + d
		}
		j++
	}
	return v, j, j > start
}

// atomEscape parses what follows a backslash outside a class.
func (p *parser) atomEscape() (*rnode, error) {
	c, ok := p.peek()
	if !ok {
		return nil, syntaxErrorf(`\ at end of pattern`)
	}
	if s, ok, err := p.classEscape(c); ok || err != nil {
		return &rnode{kind: kSet, set: s}, err
	}
	switch {
	case c == 'k':
		return nil, syntaxErrorf(`invalid named reference \k`)
	case c >= '1' && c <= '9':
		return nil, &UnsupportedError{"backreference"}
	}
	r, err := p.characterEscape(false)
	if err != nil {
		return nil, err
	}
	return &rnode{kind: kSet, set: single(r)}, nil
}

// classEscape handles \d \D \s \S \w \W \p{..} \P{..} at the current
// position (c is the letter after the backslash).
func (p *parser) classEscape(c rune) (set, bool, error) {
	var s set
	switch c {
	case 'd':
		s = digitSet
	case 'D':
		s = complement(digitSet)
	case 's':
		s = spaceSet
	case 'S':
		s = complement(spaceSet)
	case 'w':
		s = wordSet
	case 'W':
		s = complement(wordSet)
	case 'p', 'P':
		p.i++
		if !p.peekIs('{') {
			return nil, false, syntaxErrorf(`invalid property name: \%c must be followed by {name}`, c)
		}
		start := p.i + 1
		j := start
		for j < len(p.src) && p.src[j] != '}' {
			r := p.src[j]
			if !(r == '_' || r == '=' || (r >= '0' && r <= '9') || (r|0x20 >= 'a' && r|0x20 <= 'z')) {
				return nil, false, syntaxErrorf("invalid property name")
			}
			j++
		}
		if j >= len(p.src) || j == start {
			return nil, false, syntaxErrorf("invalid property name")
		}
		ps, err := propertySet(string(p.src[start:j]))
		if err != nil {
			return nil, false, err
		}
		p.i = j + 1
		if c == 'P' {
			ps = complement(ps)
		}
		return ps, true, nil
	default:
		return nil, false, nil
	}
	p.i++
	return s, true, nil
}

// characterEscape parses a CharacterEscape after the backslash: control
// escapes, \cX, \0, \xHH, \uHHHH (surrogate pairs joined), \u{H...}, and
// identity escapes of syntax characters and '/' (plus '-' in a class).
func (p *parser) characterEscape(inClass bool) (rune, error) {
	c := p.src[p.i]
	p.i++
	switch c {
	case 'f':
		return '\f', nil
	case 'n':
		return '\n', nil
	case 'r':
		return '\r', nil
	case 't':
		return '\t', nil
	case 'v':
		return '\v', nil
	case 'c':
		if l, ok := p.peek(); ok && (l|0x20 >= 'a' && l|0x20 <= 'z') {
			p.i++
			return l % 32, nil
		}
		return 0, syntaxErrorf(`invalid escape \c`)
	case '0':
		if d, ok := p.peek(); ok && d >= '0' && d <= '9' {
			return 0, syntaxErrorf("invalid decimal escape")
		}
		return 0, nil
	case 'x':
		if v, ok := p.hex(2); ok {
			return v, nil
		}
		return 0, syntaxErrorf(`invalid escape \x`)
	case 'u':
		return p.unicodeEscape()
	case '^', '$', '\\', '.', '*', '+', '?', '(', ')', '[', ']', '{', '}', '|', '/':
		return c, nil
	case '-':
		if inClass {
			return c, nil
		}
	}
	return 0, syntaxErrorf(`invalid escape \%c`, c)
}

func (p *parser) hex(n int) (rune, bool) {
	if p.i+n > len(p.src) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(p.src[p.i:p.i+n]), 16, 32)
	if err != nil {
		return 0, false
	}
	p.i += n
	return rune(v), true
}

func (p *parser) unicodeEscape() (rune, error) {
	if p.peekIs('{') {
		j := p.i + 1
		v := 0
		for j < len(p.src) && p.src[j] != '}' {
			d, err := strconv.ParseUint(string(p.src[j]), 16, 8)
			if err != nil {
				return 0, syntaxErrorf("invalid Unicode escape")
			}
			v = v*16 + int(d)
			if v > maxRune {
				return 0, syntaxErrorf("invalid Unicode escape: above U+10FFFF")
			}
			j++
		}
		if j >= len(p.src) || j == p.i+1 {
			return 0, syntaxErrorf("invalid Unicode escape")
		}
		p.i = j + 1
		return rune(v), nil
	}
	u, ok := p.hex(4)
	if !ok {
		return 0, syntaxErrorf("invalid Unicode escape")
	}
	if u >= 0xD800 && u <= 0xDBFF && p.i+1 < len(p.src) && p.src[p.i] == '\\' && p.src[p.i+1] == 'u' {
		save := p.i
		p.i += 2
		if lo, ok := p.hex(4); ok && lo >= 0xDC00 && lo <= 0xDFFF {
			return 0x10000 + (u-0xD800)<<10 + (lo - 0xDC00), nil
		}
		p.i = save
	}
	// A lone surrogate is a valid pattern; it can only match a lone
	// surrogate, which a text here never contains.
	return u, nil
}

// class parses a character class after '['.
func (p *parser) class() (set, error) {
	negate := false
	if p.peekIs('^') {
		negate = true
		p.i++
	}
	var rs []rng
	for {
		c, ok := p.peek()
		if !ok {
			return nil, syntaxErrorf("unterminated character class")
		}
		if c == ']' {
			p.i++
			break
		}
		a, aIsSet, err := p.classAtom()
		if err != nil {
			return nil, err
		}
		if p.peekIs('-') && p.i+1 < len(p.src) && p.src[p.i+1] != ']' {
			p.i++
			b, bIsSet, err := p.classAtom()
			if err != nil {
				return nil, err
			}
			if aIsSet || bIsSet {
				return nil, syntaxErrorf("invalid character class: a class escape cannot bound a range")
			}
			if a[0].lo > b[0].lo {
				return nil, syntaxErrorf("range out of order in character class")
			}
			rs = append(rs, rng{a[0].lo, b[0].lo})
			continue
		}
		rs = append(rs, a...)
	}
	s := normalize(rs)
	if negate {
		s = complement(s)
	}
	return s, nil
}

// classAtom parses one class atom: a character (returned as a one-element
// set, isSet false) or a class escape (isSet true).
func (p *parser) classAtom() (set, bool, error) {
	c := p.src[p.i]
	if c != '\\' {
		p.i++
		return single(c), false, nil
	}
	p.i++
	e, ok := p.peek()
	if !ok {
		return nil, false, syntaxErrorf(`\ at end of pattern`)
	}
	if s, ok, err := p.classEscape(e); ok || err != nil {
		return s, true, err
	}
	if e == 'b' {
		p.i++
		return single('\b'), false, nil
	}
	if e >= '1' && e <= '9' {
		return nil, false, syntaxErrorf("invalid class escape")
	}
	r, err := p.characterEscape(true)
	if err != nil {
		return nil, false, err
	}
	return single(r), false, nil
}

// emitter writes the Go form of a tree.
type emitter struct {
	b        *strings.Builder
	maxInput int
	states   int
}

func (e *emitter) add(n int) error {
	e.states += n
	if e.states > MaxStates {
		return &TooLargeError{}
	}
	return nil
}

func (e *emitter) emit(n *rnode) error {
	switch n.kind {
	case kSet:
		writeSet(e.b, n.set)
		return e.add(1)
	case kAssert:
		e.b.WriteString(n.assert)
		return e.add(1)
	case kConcat:
		for _, s := range n.subs {
			if err := e.emit(s); err != nil {
				return err
			}
		}
	case kAlt:
		e.b.WriteString("(?:")
		for i, s := range n.subs {
			if i > 0 {
				e.b.WriteByte('|')
			}
			if err := e.emit(s); err != nil {
				return err
			}
		}
		e.b.WriteByte(')')
	case kGroup:
		e.b.WriteString("(?:")
		if err := e.emit(n.subs[0]); err != nil {
			return err
		}
		e.b.WriteByte(')')
	case kRepeat:
		return e.emitRepeat(n)
	}
	return nil
}

// emitRepeat writes a counted repetition. RE2 caps counts at 1000, so the
// counts are first reduced to ones with the same meaning for texts of at
// most maxInput code points, and what remains above 1000 is written as a
// sequence of repetitions (only match existence is asked, so how the
// iterations are split does not matter).
func (e *emitter) emitRepeat(n *rnode) error {
	sub := n.subs[0]
	var inner strings.Builder
	ie := emitter{b: &inner, maxInput: e.maxInput}
	if err := ie.emit(sub); err != nil {
		return err
	}
	body := "(?:" + inner.String() + ")"
	lo, hi := n.min, n.max
	if w := minWidth(sub); w == 0 {
		// A sub-pattern that can match empty makes the lower count
		// irrelevant, and more iterations than the text has code points
		// can add nothing.
		lo = 0
		if hi > e.maxInput {
			hi = -1
		}
	} else {
		if lo > e.maxInput/w {
			writeSet(e.b, set{}) // can never match a text this short
			return e.add(1)
		}
		if hi >= e.maxInput/w {
			// No text is long enough for more iterations: the upper
			// bound cannot bind, and an unbounded loop is far cheaper.
			hi = -1
		}
	}
	copies := lo + 1
	if hi >= 0 {
		copies = max(hi, 1)
	}
	if err := e.add(copies * max(ie.states, 1)); err != nil {
		return err
	}
	switch {
	case lo == 0 && hi < 0:
		e.b.WriteString(body + "*")
		return nil
	case lo == 1 && hi < 0:
		e.b.WriteString(body + "+")
		return nil
	case lo == 0 && hi == 1:
		e.b.WriteString(body + "?")
		return nil
	}
	for lo > 1000 {
		e.b.WriteString(body + "{1000}")
		lo -= 1000
		if hi >= 0 {
			hi -= 1000
		}
	}
	if hi < 0 {
		fmt.Fprintf(e.b, "%s{%d,}", body, lo)
		return nil
	}
	fmt.Fprintf(e.b, "%s{%d}", body, lo)
	for rest := hi - lo; rest > 0; rest -= 1000 {
		fmt.Fprintf(e.b, "%s{0,%d}", body, min(rest, 1000))
	}
	return nil
}

// minWidth is the fewest code points n can match (saturating).
func minWidth(n *rnode) int {
	switch n.kind {
	case kSet:
		return 1
	case kAssert:
		return 0
	case kConcat:
		w := 0
		for _, s := range n.subs {
			w = min(w+minWidth(s), infinity)
		}
		return w
	case kAlt:
		w := infinity
		for _, s := range n.subs {
			w = min(w, minWidth(s))
		}
		return w
	case kGroup:
		return minWidth(n.subs[0])
	case kRepeat:
		w := minWidth(n.subs[0])
		if w == 0 || n.min == 0 {
			return 0
		}
		if w > infinity/n.min {
			return infinity
		}
		return w * n.min
	}
	return 0
}

// writeSet writes a set as an RE2 class of explicit code point ranges; the
// empty set as a class that matches nothing.
func writeSet(b *strings.Builder, s set) {
	if len(s) == 0 {
		b.WriteString(`[^\x{0}-\x{10FFFF}]`)
		return
	}
	if len(s) == 1 && s[0].lo == s[0].hi {
		fmt.Fprintf(b, `\x{%X}`, s[0].lo)
		return
	}
	b.WriteByte('[')
	for _, r := range s {
		if r.lo == r.hi {
			fmt.Fprintf(b, `\x{%X}`, r.lo)
		} else {
			fmt.Fprintf(b, `\x{%X}-\x{%X}`, r.lo, r.hi)
		}
	}
	b.WriteByte(']')
}
