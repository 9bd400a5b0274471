package expr

import (
	"fmt"
	"math"
	"strconv"
)

// Parse limits (docs/expressions.md, "Limits"). Both are enforced while parsing, so a
// hostile source is refused before it can build a deep tree or a large one.
const (
	// MaxDepth bounds nesting: each parenthesised group, each unary
	// operator and each call argument is one level.
	MaxDepth = 128
	// MaxNodes bounds the syntax tree: every literal, identifier, member
	// access, index, call, unary and binary operation is a node.
	MaxNodes = 4096
)

type opcode uint8

const (
	opLiteral opcode = iota
	opIdent
	opMember
	opIndex
	opCall
	opNot
	opNeg
	opOr
	opAnd
	opEq
	opNe
	opLt
	opLe
	opGt
	opGe
	opIn
	opAdd
	opSub
	opMul
	opDiv
)

var binaryOps = map[string]opcode{
	"||": opOr, "&&": opAnd,
	"==": opEq, "!=": opNe, "<": opLt, "<=": opLe, ">": opGt, ">=": opGe, "in": opIn,
	"+": opAdd, "-": opSub, "*": opMul, "/": opDiv,
}

var opText = [...]string{
	opNot: "!", opNeg: "-", opOr: "||", opAnd: "&&", opEq: "==", opNe: "!=", opLt: "<", opLe: "<=",
	opGt: ">", opGe: ">=", opIn: "in", opAdd: "+", opSub: "-", opMul: "*", opDiv: "/",
}

// node is one syntax tree node. Which fields are used depends on op.
type node struct {
	op    opcode
	pos   int     // byte offset of the node's first token
	val   any     // opLiteral: the value
	name  string  // opIdent, opMember (the key), opCall (the function)
	index float64 // opIndex: a non-negative integer
	x, y  *node   // operands: unary x; binary x, y; member and index target x
	args  []*node // opCall

	// Filled by resolve (check.go).
	slot binding       // opIdent: which binding, or bindNone
	fn   *builtin      // opCall: the builtin, or nil for an unknown name
	re   *patternCache // opCall of matches with a literal pattern
}

// blockedMember reports the member names the language refuses (they are
// JavaScript prototype machinery in the reference).
func blockedMember(name string) bool {
	return name == "__proto__" || name == "constructor" || name == "prototype"
}

// parser is a recursive-descent parser with one token of lookahead over
// the lazy lexer. Levels, lowest first: || then && then comparisons (all
// one level, with in) then + - then * / then prefix ! - then postfix . [].
type parser struct {
	lex   lexer
	cur   token
	depth int
	nodes int
}

func parse(src string) (*node, *Error) {
	p := &parser{lex: lexer{src: src}}
	if err := p.advance(); err != nil {
		return nil, err
	}
	n, err := p.parseBinary(0)
	if err != nil {
		return nil, err
	}
	if p.cur.kind != tokEOF {
		return nil, p.failf("unexpected %s after the end of the expression", p.describe())
	}
	return n, nil
}

func (p *parser) advance() *Error {
	t, err := p.lex.next()
	if err != nil {
		return err
	}
	p.cur = t
	return nil
}

func (p *parser) failf(format string, args ...any) *Error {
	return parseError(p.lex.src, p.cur.pos, fmt.Sprintf(format, args...))
}

func (p *parser) describe() string {
	switch p.cur.kind {
	case tokEOF:
		return "end of input"
	case tokNumber:
		return "number " + p.cur.text
	case tokString:
		return "string"
	}
	return strconv.Quote(p.cur.text)
}

func (p *parser) at(punct string) bool {
	return p.cur.kind == tokPunct && p.cur.text == punct
}

func (p *parser) expect(punct string) *Error {
	if !p.at(punct) {
		return p.failf("expected %q, found %s", punct, p.describe())
	}
	return p.advance()
}

// count registers one more syntax node.
func (p *parser) count(n *node) (*node, *Error) {
	p.nodes++
	if p.nodes > MaxNodes {
		return nil, &Error{Code: CodeResourceLimit, Message: fmt.Sprintf("expression has more than %d syntax nodes", MaxNodes), Offset: -1}
	}
	return n, nil
}

// enter and leave bracket one nesting level.
func (p *parser) enter() *Error {
	p.depth++
	if p.depth > MaxDepth {
		return &Error{Code: CodeResourceLimit, Message: fmt.Sprintf("expression nests deeper than %d levels", MaxDepth), Offset: -1}
	}
	return nil
}

func (p *parser) leave() { p.depth-- }

// binaryLevels lists the binary operators of each precedence level,
// lowest first.
var binaryLevels = [...][]string{
	{"||"},
	{"&&"},
	{"==", "!=", "<", "<=", ">", ">=", "in"},
	{"+", "-"},
	{"*", "/"},
}

func (p *parser) binaryAt(level int) (opcode, bool) {
	if p.cur.kind != tokOp {
		return 0, false
	}
	for _, op := range binaryLevels[level] {
		if p.cur.text == op {
			return binaryOps[op], true
		}
	}
	return 0, false
}

// parseBinary parses one left-associative level; the recursion depth of
// this function is bounded by the number of levels, not by the input.
func (p *parser) parseBinary(level int) (*node, *Error) {
	next := func() (*node, *Error) {
		if level+1 < len(binaryLevels) {
			return p.parseBinary(level + 1)
		}
		return p.parseUnary()
	}
	left, err := next()
	if err != nil {
		return nil, err
	}
	for {
		op, ok := p.binaryAt(level)
		if !ok {
			return left, nil
		}
		pos := p.cur.pos
		if err := p.advance(); err != nil {
			return nil, err
		}
		right, err := next()
		if err != nil {
			return nil, err
		}
		if left, err = p.count(&node{op: op, pos: pos, x: left, y: right}); err != nil {
			return nil, err
		}
	}
}

func (p *parser) parseUnary() (*node, *Error) {
	if p.cur.kind == tokOp && (p.cur.text == "!" || p.cur.text == "-") {
		op, pos := opNot, p.cur.pos
		if p.cur.text == "-" {
			op = opNeg
		}
		if err := p.advance(); err != nil {
			return nil, err
		}
		if err := p.enter(); err != nil {
			return nil, err
		}
		operand, err := p.parseUnary()
		if err != nil {
			return nil, err
		}
		p.leave()
		return p.count(&node{op: op, pos: pos, x: operand})
	}
	return p.parsePostfix()
}

func (p *parser) parsePostfix() (*node, *Error) {
	target, err := p.parsePrimary()
	if err != nil {
		return nil, err
	}
	for {
		switch {
		case p.at("."):
			pos := p.cur.pos
			if err := p.advance(); err != nil {
				return nil, err
			}
			if p.cur.kind != tokIdent {
				return nil, p.failf("expected a member name after '.', found %s", p.describe())
			}
			name := p.cur.text
			if blockedMember(name) {
				return nil, p.failf("member name %q is not allowed", name)
			}
			if err := p.advance(); err != nil {
				return nil, err
			}
			if target, err = p.count(&node{op: opMember, pos: pos, x: target, name: name}); err != nil {
				return nil, err
			}
		case p.at("["):
			pos := p.cur.pos
			if err := p.advance(); err != nil {
				return nil, err
			}
			if p.cur.kind != tokNumber || p.cur.num != math.Trunc(p.cur.num) {
				return nil, p.failf("an index must be a non-negative integer literal, found %s", p.describe())
			}
			idx := p.cur.num
			if err := p.advance(); err != nil {
				return nil, err
			}
			if err := p.expect("]"); err != nil {
				return nil, err
			}
			if target, err = p.count(&node{op: opIndex, pos: pos, x: target, index: idx}); err != nil {
				return nil, err
			}
		default:
			return target, nil
		}
	}
}

func (p *parser) parsePrimary() (*node, *Error) {
	t := p.cur
	switch {
	case t.kind == tokNumber || t.kind == tokString:
		if err := p.advance(); err != nil {
			return nil, err
		}
		var v any = t.str
		if t.kind == tokNumber {
			v = t.num
		}
		return p.count(&node{op: opLiteral, pos: t.pos, val: v})
	case t.kind == tokIdent:
		if err := p.advance(); err != nil {
			return nil, err
		}
		switch t.text {
		case "true":
			return p.count(&node{op: opLiteral, pos: t.pos, val: true})
		case "false":
			return p.count(&node{op: opLiteral, pos: t.pos, val: false})
		case "null":
			return p.count(&node{op: opLiteral, pos: t.pos, val: nil})
		}
		if !p.at("(") {
			return p.count(&node{op: opIdent, pos: t.pos, name: t.text})
		}
		if err := p.advance(); err != nil {
			return nil, err
		}
		var args []*node
		if !p.at(")") {
			for {
				if err := p.enter(); err != nil {
					return nil, err
				}
				arg, err := p.parseBinary(0)
				if err != nil {
					return nil, err
				}
				p.leave()
				args = append(args, arg)
				if !p.at(",") {
					break
				}
				if err := p.advance(); err != nil {
					return nil, err
				}
			}
		}
		if err := p.expect(")"); err != nil {
			return nil, err
		}
		return p.count(&node{op: opCall, pos: t.pos, name: t.text, args: args})
	case p.at("("):
		if err := p.advance(); err != nil {
			return nil, err
		}
		if err := p.enter(); err != nil {
			return nil, err
		}
		inner, err := p.parseBinary(0)
		if err != nil {
			return nil, err
		}
		p.leave()
		if err := p.expect(")"); err != nil {
			return nil, err
		}
		return inner, nil
	}
	if t.kind == tokEOF {
		return nil, p.failf("expected a value (literal, name, call or parenthesised expression), found end of input")
	}
	return nil, p.failf("expected a value (literal, name, call or parenthesised expression), found %s", p.describe())
}
