package ir

import "strings"

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
		group := groupEnsure
		if stage >= 0 {
			group = groupStage
		}
		switch pred.Kind {
		case EnsureExpr:
			si.leafLater(group, leaf{base: parent, rel: ensureRel(i), n: e.get("expr"), text: pred.Expr, expression: true, stage: stage})
		case EnsureFileExists, EnsureFileContains:
			v.filePredicate(&pred, e, parent, i, si, group, stage)
		}
		out = append(out, pred)
	}
	return out[:len(out):len(out)]
}

// filePredicate handles the ${...} references of a file_exists or
// file_contains predicate (docs/spec-language.md, "Ensure predicates"):
// they are checked as the references of a do text are, and the predicate
// is given the expression that reads them at run time, file_exists(input.f)
// or file_contains("src/" + str(item) + ".go", "x"), so that the engine,
// which evaluates Ensure.Expression, needs nothing else. A predicate without
// references keeps its literal form.
func (v *validator) filePredicate(pred *Ensure, e *node, parent string, i int, si *stepInfo, group leafGroup, stage int) {
	if !strings.Contains(pred.Path, "${") && !strings.Contains(pred.Text, "${") {
		return
	}
	rel := indexPath("ensure", i)
	var path, text *Template
	if pred.Kind == EnsureFileExists {
		path = si.leafLater(group, leaf{base: parent, rel: rel + ".file_exists", n: e.get("file_exists"), text: pred.Path, filePred: true, stage: stage})
	} else {
		fc := e.get("file_contains")
		path = si.leafLater(group, leaf{base: parent, rel: rel + ".file_contains.path", n: fc.get("path"), text: pred.Path, filePred: true, stage: stage})
		text = si.leafLater(group, leaf{base: parent, rel: rel + ".file_contains.text", n: fc.get("text"), text: pred.Text, filePred: true, stage: stage})
	}
	src, ok := fileCall(pred.Kind, path, text)
	if !ok {
		return // a malformed or unusable reference: reported with the leaf
	}
	pred.interpolated = src
	v.checkExpression(src, e, locOf(joinPath(parent, rel)), siteResult)
}

// fileCall builds the call a file predicate stands for; it fails when a
// template is malformed or holds a reference an ensure cannot read.
func fileCall(kind EnsureKind, path, text *Template) (string, bool) {
	p, ok := templateExpr(path)
	if !ok {
		return "", false
	}
	if kind == EnsureFileExists {
		return "file_exists(" + p + ")", true
	}
	t, ok := templateExpr(text)
	if !ok {
		return "", false
	}
	return "file_contains(" + p + ", " + t + ")", true
}

// templateExpr is the expression whose value is the rendered template: a
// single reference is read as it is (it must be a string at run time);
// text with references is joined with +, each reference converted by str().
// Only the references an ensure can read (input, item, prev) have one.
func templateExpr(t *Template) (string, bool) {
	if t.Full() != nil {
		return refExpr(t.Full())
	}
	if len(t.Parts) == 0 {
		if strings.Contains(t.Text, "${") {
			return "", false // malformed: no parts were kept
		}
		return jsonQuote(t.Text), true
	}
	var b strings.Builder
	for i, part := range t.Parts {
		if i > 0 {
			b.WriteString(" + ")
		}
		if part.Ref == nil {
			b.WriteString(jsonQuote(part.Literal))
			continue
		}
		r, ok := refExpr(part.Ref)
		if !ok {
			return "", false
		}
		b.WriteString("str(" + r + ")")
	}
	return b.String(), true
}

func refExpr(r *Ref) (string, bool) {
	switch r.Kind {
	case RefInput:
		return "input" + pathString(r.Path), true
	case RefItem:
		return "item", true
	case RefPrev:
		return "prev", true
	}
	return "", false
}

const ensureShapes = "{expr: EXPRESSION}, {file_exists: PATH}, {file_contains: {path: PATH, text: TEXT}} or {judged: {statement: TEXT, stakes: cheap|default|paranoid}}"

// ensurePredicate checks one predicate (docs/spec-language.md, "Ensure
// predicates"): a shape that
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
