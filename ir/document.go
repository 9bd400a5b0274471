package ir

import "github.com/stratum-go/stratum/expr"

// nodeValue is the loaded tree n as BuildDocument returns it.
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
