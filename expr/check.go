package expr

// resolve binds names in the tree once, at compile time, so evaluation does
// no string lookups: identifiers get their binding slot, calls their
// builtin, and a matches() whose pattern is a string literal gets a cache
// for the pattern (compiled on first use). Nothing here reports an error: the spec
// makes unknown names evaluation errors, raised only if reached, after the
// call's arguments. It reports whether a file function is called anywhere.
func resolve(n *node) bool {
	uses := false
	switch n.op {
	case opIdent:
		n.slot = bindNone
		for i, name := range bindingNames {
			if n.name == name {
				n.slot = binding(i)
			}
		}
	case opCall:
		n.fn = builtins[n.name]
		if n.fn != nil && (n.fn.id == fnFileExists || n.fn.id == fnFileContains) {
			uses = true
		}
		if n.fn != nil && n.fn.id == fnMatches && len(n.args) == 2 && n.args[1].op == opLiteral {
			if pattern, ok := n.args[1].val.(string); ok {
				n.re = newPattern(pattern)
			}
		}
		for _, a := range n.args {
			if resolve(a) {
				uses = true
			}
		}
	}
	if n.x != nil && resolve(n.x) {
		uses = true
	}
	if n.y != nil && resolve(n.y) {
		uses = true
	}
	return uses
}
