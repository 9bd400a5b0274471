package ir

// ensureList checks the ensure list of the step or stage at parent.
func (v *validator) ensureList(n *node, parent string, si *stepInfo, stage int) []Ensure {
	if n.kind != listNode {
		v.wrongType(n, joinPath(parent, "ensure"), "a list of predicates such as {expr: \"result.ok == true\"}")
		return nil
	}
	out := carveRoom(&v.tmpl.ensures, len(n.items()))
	for i, e := range n.items() {
		pred, ok := v.ensurePredicate(e, parent, i)
		if !ok {
			continue
		}
		if stage >= 0 {
			if si.stageEnsureAt == nil {
				si.stageEnsureAt = make(map[int][]int)
			}
			si.stageEnsureAt[stage] = append(si.stageEnsureAt[stage], i)
		}
		out = append(out, pred)
		if pred.Kind == EnsureExpr {
			group := groupEnsure
			if stage >= 0 {
				group = groupStage
			}
			si.leafLater(group, leaf{base: parent, rel: ensureRel(i), n: e.get("expr"), text: pred.Expr, expression: true, stage: stage})
		}
	}
	return out[:len(out):len(out)]
}

const ensureShapes = "{expr: EXPRESSION}, {file_exists: PATH}, {file_contains: {path: PATH, text: TEXT}} or {judged: {statement: TEXT, stakes: cheap|default|paranoid}}"

// ensurePredicate checks one predicate (spec/ir.md 6.3): a shape that
// matches except for extra keys reports those keys; otherwise the element
// is SCHEMA_INVALID.
func (v *validator) ensurePredicate(e *node, parent string, index int) (Ensure, bool) {
	ok := true
	for _, k := range e.keys() {
		if k.str != "expr" {
			ok = false
			break
		}
	}
	if e.kind == mapNode && ok && len(e.kids) == 2 && e.kids[1].kind == stringNode {
		// The common case, {expr: "..."}, needs no path at all.
		return Ensure{Kind: EnsureExpr, Expr: e.kids[1].str}, true
	}
	path := indexPath(joinPath(parent, "ensure"), index)
	if e.kind != mapNode {
		v.schema(e, path, "a predicate must be one of %s; got %s", ensureShapes, describeNode(e))
		return Ensure{}, false
	}
	type match struct {
		key   string
		pred  Ensure
		extra [][2]string // nested unknown keys: path suffix, key
	}
	var m *match
	for _, key := range [...]string{"expr", "file_exists", "file_contains", "judged"} {
		val := e.get(key)
		if e.keyNode(key) == nil {
			continue
		}
		switch key {
		case "expr":
			if val.kind == stringNode {
				m = &match{key: key, pred: Ensure{Kind: EnsureExpr, Expr: val.str}}
			}
		case "file_exists":
			if val.kind == stringNode {
				m = &match{key: key, pred: Ensure{Kind: EnsureFileExists, Path: val.str}}
			}
		case "file_contains":
			if val.kind == mapNode {
				p, t := val.get("path"), val.get("text")
				if p != nil && p.kind == stringNode && t != nil && t.kind == stringNode {
					mm := &match{key: key, pred: Ensure{Kind: EnsureFileContains, Path: p.str, Text: t.str}}
					for _, k := range val.keys() {
						if k.str != "path" && k.str != "text" {
							mm.extra = append(mm.extra, [2]string{key, k.str})
						}
					}
					m = mm
				}
			}
		case "judged":
			if val.kind == mapNode {
				st, sk := val.get("statement"), val.get("stakes")
				if st != nil && st.kind == stringNode && sk != nil && sk.kind == stringNode && (sk.str == "cheap" || sk.str == "default" || sk.str == "paranoid") {
					mm := &match{key: key, pred: Ensure{Kind: EnsureJudged, Statement: st.str, Stakes: Stakes(sk.str)}}
					for _, k := range val.keys() {
						if k.str != "statement" && k.str != "stakes" {
							mm.extra = append(mm.extra, [2]string{key, k.str})
						}
					}
					m = mm
				}
			}
		}
		if m != nil {
			break
		}
	}
	if m == nil {
		v.schema(e, path, "a predicate must be exactly one of %s", ensureShapes)
		return Ensure{}, false
	}
	ok = true
	for _, k := range e.keys() {
		if k.str != m.key {
			v.d.add(k, CodeUnknownField, joinPath(path, k.str), "this %s predicate takes only the key %q; move %q into a separate predicate or remove it", m.key, m.key, k.str)
			ok = false
		}
	}
	inner := e.get(m.key)
	for _, x := range m.extra {
		v.d.add(inner.keyNode(x[1]), CodeUnknownField, joinPath(joinPath(path, x[0]), x[1]), "unknown field %q in a %s predicate", x[1], m.key)
		ok = false
	}
	return m.pred, ok
}
