package ir

import "github.com/stratum-go/stratum/expr"

// Document returns the spec as it was loaded: an ordered JSON value in
// package expr's model (*expr.Object, []any, string, float64, bool, nil),
// with aliases expanded and mapping keys in document order. It is what a
// run persists as its spec snapshot and what its revision digest covers.
// Each call builds a fresh value that the caller may keep or change.
func (p *Plan) Document() any { return nodeValue(p.root) }

func nodeValue(n *node) any {
	if n == nil {
		return nil
	}
	switch n.kind {
	case boolNode:
		return n.b
	case numberNode:
		return n.num
	case stringNode:
		return n.str
	case listNode:
		items := n.items()
		out := make([]any, len(items))
		for i, it := range items {
			out[i] = nodeValue(it)
		}
		return out
	case mapNode:
		keys, vals := n.keys(), n.vals()
		obj := expr.NewObject(len(keys))
		for i, k := range keys {
			obj.Set(k.str, nodeValue(vals[i]))
		}
		return obj
	}
	return nil
}
