package expr

import "strings"

// String returns the program in canonical form: single spaces around
// binary operators, parentheses only where precedence needs them, strings
// double-quoted, numbers as JavaScript writes them. Compiling the canonical
// form gives the same program (and the same canonical form).
func (p *Program) String() string {
	var b strings.Builder
	writeNode(&b, p.root)
	return b.String()
}

// precedence of a node as an operand: binary levels 1 (||) to 5 (* /),
// 6 for unary operators, 7 for everything that binds tighter.
func precedence(n *node) int {
	switch n.op {
	case opOr:
		return 1
	case opAnd:
		return 2
	case opEq, opNe, opLt, opLe, opGt, opGe, opIn:
		return 3
	case opAdd, opSub:
		return 4
	case opMul, opDiv:
		return 5
	case opNot, opNeg:
		return 6
	}
	return 7
}

func writeOperand(b *strings.Builder, n *node, minPrec int) {
	if precedence(n) < minPrec {
		b.WriteByte('(')
		writeNode(b, n)
		b.WriteByte(')')
		return
	}
	writeNode(b, n)
}

func writeNode(b *strings.Builder, n *node) {
	switch n.op {
	case opLiteral:
		switch v := n.val.(type) {
		case float64:
			b.WriteString(FormatNumber(v))
		case string:
			b.Write(appendQuoted(nil, v))
		default:
			b.WriteString(Stringify(v))
		}
	case opIdent:
		b.WriteString(n.name)
	case opMember:
		writeOperand(b, n.x, 7)
		b.WriteByte('.')
		b.WriteString(n.name)
	case opIndex:
		writeOperand(b, n.x, 7)
		b.WriteByte('[')
		b.WriteString(FormatNumber(n.index))
		b.WriteByte(']')
	case opCall:
		b.WriteString(n.name)
		b.WriteByte('(')
		for i, a := range n.args {
			if i > 0 {
				b.WriteString(", ")
			}
			writeNode(b, a)
		}
		b.WriteByte(')')
	case opNot, opNeg:
		b.WriteString(opText[n.op])
		writeOperand(b, n.x, 6)
	default:
		p := precedence(n)
		writeOperand(b, n.x, p)
		b.WriteByte(' ')
		b.WriteString(opText[n.op])
		b.WriteByte(' ')
		writeOperand(b, n.y, p+1)
	}
}
