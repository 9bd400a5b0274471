package ir

import (
	"strconv"
	"strings"
)

// This file proposes a flow's edges and checks the references of its
// steps' strings (docs/spec-language.md, "References" and "The graph").

// target looks up the step that after, on_fail, a gate route or a revise
// names, and reports an unknown one.
func (fc *flowCheck) target(id string, n *node, path loc, what string) *stepInfo {
	t := fc.fl.byID[id]
	if t == nil {
		fc.unknownTarget(n, path, what, id)
	}
	return t
}

// addEdge proposes an edge between two steps (docs/spec-language.md, "The
// graph"). It reports a self edge at once; cycles are decided in
// commitEdges, in proposal order. Edges are between positions, so a step
// whose own id is broken still has its dependencies and routes (the revise
// and carry checks then see them).
func (fc *flowCheck) addEdge(fs, ts *stepInfo, dep bool, path loc, n *node, what string) {
	if c := fc.cur; c != nil && c.idOK && fc.fl.byID[c.s.ID] != c {
		// A second step with a taken id: its edges would attach to the
		// first one; STEP_DUPLICATE_ID says what to fix.
		return
	}
	if fs == ts {
		fc.v.d.addAt(n, CodeSelfTarget, path, "step %s cannot %s itself", fs.label(), selfVerb(what))
		return
	}
	fi, ti := fs.s.Index, ts.s.Index
	// Each edge is proposed once. Dependencies into a step are all proposed
	// while that step is scanned, so remembering the last target per source
	// is enough; routes leave the scanned step, at most three of them.
	if dep {
		if fc.depMark[fi] == int32(ti)+1 {
			return
		}
		fc.depMark[fi] = int32(ti) + 1
	} else {
		for i := len(fc.cands) - 1; i >= 0 && i >= len(fc.cands)-3; i-- {
			if c := fc.cands[i]; !c.dep && c.from == fi && c.to == ti {
				return
			}
		}
	}
	fc.cands = append(fc.cands, edgeCand{from: fi, to: ti, dep: dep, path: path, n: n, what: what})
}

// unknownTarget reports a route or dependency naming no step, unless a
// step whose id is broken is plainly the one meant (its id differs only in
// case or characters, as "Review" for review): the id's own diagnostic
// says what to fix.
func (fc *flowCheck) unknownTarget(n *node, path loc, what, id string) {
	if fc.fl.meansUnnamed(id) {
		return
	}
	fc.v.d.addAt(n, CodeUnknownTarget, path, "%s names %q, which is not a step of flow %s%s%s", what, id, fc.fl.name, fc.fl.stepHint(), fc.fl.unnamedHint(id))
}

// meansUnnamed reports whether id is what some step with an invalid id
// was meant to be called.
func (fl *flowInfo) meansUnnamed(id string) bool {
	for _, si := range fl.unnamed {
		if si.badID != "" && (strings.EqualFold(si.badID, id) || suggestStepID(si.badID) == id) {
			return true
		}
	}
	return false
}

// unnamedHint points at a step without any id, which may be the one a
// message's unknown id was meant to name.
func (fl *flowInfo) unnamedHint(id string) string {
	for _, si := range fl.unnamed {
		if si.badID == "" {
			return "; " + si.path + " has no id: if it is the step meant, give it id: " + id
		}
	}
	return ""
}

// idOr returns the step's id, or placeholder when it has no valid one.
func (si *stepInfo) idOr(placeholder string) string {
	if si.idOK {
		return si.s.ID
	}
	return placeholder
}

// label names a step in messages: its id, quoted, or where it is when its
// id is missing or invalid.
func (si *stepInfo) label() string {
	switch {
	case si.idOK:
		return strconv.Quote(si.s.ID)
	case si.badID != "":
		return si.path + " (whose id " + strconv.Quote(si.badID) + " is invalid)"
	}
	return si.path + " (which has no id)"
}

func selfVerb(what string) string {
	switch what {
	case "after":
		return "run after"
	case "reference":
		return "read the output of"
	}
	return "route to"
}

// maxCycleSearches bounds how many further cycle-closing edges are looked
// for once the edge-by-edge check has spent its budget (a hostile spec
// with a huge cyclic graph); each search costs a few linear passes.
const maxCycleSearches = 8

// commitEdges adds the proposed edges. When they form no cycle (the usual
// case) this is linear. Otherwise the edges are added in proposal order and
// each one that would close a cycle is reported and left out, as the
// reference's edge-by-edge check does (its first report is the reference's
// one error). That check costs a graph search per edge, so it runs on a
// budget linear in the graph's size; past it, the next cycle-closing edges
// are found by bisecting on the number of edges added, which needs only
// linear acyclicity tests, and the search stops after maxCycleSearches
// more of them.
func (fc *flowCheck) commitEdges() {
	g := fc.g
	g.reserve(fc.cands)
	for _, c := range fc.cands {
		g.add(c.from, c.to, c.dep)
	}
	if g.acyclic() {
		return
	}
	g = newGraph(g.n)
	fc.g, fc.fl.g = g, g
	budget := 64*(g.n+len(fc.cands)) + 1<<16
	if fc.v.cycleBudget > 0 {
		budget = fc.v.cycleBudget
	}
	i := 0
	for ; i < len(fc.cands); i++ {
		c := fc.cands[i]
		closes, exhausted := g.reachesWithin(c.to, c.from, &budget)
		if exhausted {
			break
		}
		if closes {
			fc.reportCycle(c)
			continue
		}
		g.add(c.from, c.to, c.dep)
	}
	for searches := 0; i < len(fc.cands) && searches < maxCycleSearches; searches++ {
		rest := fc.cands[i:]
		if g.acyclicWith(rest) {
			break
		}
		// The smallest k such that the first k+1 remaining edges close a
		// cycle: edges before it are added, edge k is reported.
		lo, hi := 0, len(rest)-1
		for lo < hi {
			mid := (lo + hi) / 2
			if g.acyclicWith(rest[:mid+1]) {
				lo = mid + 1
			} else {
				hi = mid
			}
		}
		for _, c := range rest[:lo] {
			g.add(c.from, c.to, c.dep)
		}
		fc.reportCycle(rest[lo])
		i += lo + 1
	}
	if i < len(fc.cands) && g.acyclicWith(fc.cands[i:]) {
		for _, c := range fc.cands[i:] {
			g.add(c.from, c.to, c.dep)
		}
	}
}

func (fc *flowCheck) reportCycle(c edgeCand) {
	fs, ts := fc.fl.steps[c.from].label(), fc.fl.steps[c.to].label()
	fc.v.d.addAt(c.n, CodeCycle, c.path, "this %s edge %s -> %s closes a cycle (%s already leads to %s); steps must form a DAG, so route forward only", c.what, fs, ts, ts, fs)
}

// edgesAndRefs proposes the step's dependency and routing edges and checks
// the references of its strings. It runs on every step mapping, also one
// whose construct is unclear: its targets and references are problems of
// their own, and its edges keep the revise and carry checks of the steps
// around it true.
func (fc *flowCheck) edgesAndRefs(si *stepInfo) {
	s := si.s
	fc.cur = si
	an := si.present.get("after")
	for k, a := range s.After {
		pos := si.afterPos(k)
		n := an.items()[pos]
		path := locOf(indexPath(joinPath(si.path, "after"), pos))
		if src := fc.target(a, n, path, "after"); src != nil {
			fc.addEdge(src, si, true, path, n, "after")
		}
	}
	if s.OnFail != "" {
		fc.route(si, s.OnFail, "on_fail", si.present.get("on_fail"), loc{base: si.path, rel: "on_fail"})
	}
	overBad := fc.checkOver(si)
	fc.scanLeaves(si, overBad)
	if s.Gate != nil {
		gn := si.present.get("gate")
		if s.Gate.OnApprove != "" {
			fc.route(si, s.Gate.OnApprove, "on_approve", gn.get("on_approve"), loc{base: si.path, rel: "gate.on_approve"})
		}
		if s.Gate.OnKill != "" {
			fc.route(si, s.Gate.OnKill, "on_kill", gn.get("on_kill"), loc{base: si.path, rel: "gate.on_kill"})
		}
	}
}

// route proposes the routing edge from si to the step named id and marks
// that step as routed to.
func (fc *flowCheck) route(si *stepInfo, id, what string, n *node, path loc) {
	if t := fc.target(id, n, path, what); t != nil {
		fc.addEdge(si, t, false, path, n, what)
		fc.routed[t.s.Index] = true
	}
}

// checkOver checks the shape of fanout.over (exactly one reference) and
// reports whether it is broken; its references are then not checked.
func (fc *flowCheck) checkOver(si *stepInfo) bool {
	s := si.s
	if s.Fanout == nil || s.Fanout.Over == nil {
		return false // no fanout, or over missing or not a string: reported
	}
	for i := range si.leaves {
		if l := &si.leaves[i]; l.over && l.syn == templateOK && l.tmpl.Full() != nil {
			return false
		}
	}
	fc.v.d.add(si.present.get("fanout").get("over"), CodeOverSingleRef, joinPath(si.path, "fanout.over"), "over must be exactly one reference to an array, such as \"${input.items}\" or \"${plan.output.tasks}\", with no other text; got %q", s.Fanout.Over.Text)
	return true
}

// scanLeaves checks the references of the step's strings, in scanning
// order, and records the strings that have some as Sites.
func (fc *flowCheck) scanLeaves(si *stepInfo, overBad bool) {
	v, s := fc.v, si.s
	sites := 0
	for i := range si.leaves {
		if l := &si.leaves[i]; l.syn == templateOK && len(l.tmpl.Parts) > 0 && !(l.over && overBad) && !l.filePred {
			sites++
		}
	}
	if sites > 0 && s.Sites == nil {
		s.Sites = carveRoom(&v.tmpl.sites, sites)
	}
	for _, l := range si.leaves {
		if l.over && overBad {
			continue
		}
		if l.expression {
			v.checkExpression(l.text, l.n, l.loc(), l.exprSite())
		}
		t := l.tmpl
		if l.syn != templateOK {
			v.d.addAt(l.n, CodeRefInvalid, l.loc(), "malformed reference %q: a reference is ${input.FIELD...}, ${STEP.output...}, ${CARRY...}, ${item} or ${prev} with no spaces (there is no escape for a literal \"${\")", l.tok)
			continue
		}
		if len(t.Parts) == 0 {
			continue
		}
		if !l.filePred {
			// A file predicate's references are read by its expression.
			s.Sites = append(s.Sites, Site{Line: int(l.n.line), Column: int(l.n.col), Expression: l.expression, Stage: l.stage, Template: t, path: l.loc()})
		}
		for _, p := range t.Parts {
			if p.Ref != nil {
				fc.checkRef(si, l, p.Ref)
			}
		}
	}
}

func (fc *flowCheck) checkRef(si *stepInfo, l leaf, r *Ref) {
	lpath := l.loc()
	v := fc.v
	switch r.Kind {
	case RefItem, RefPrev:
		switch {
		case l.stage >= 0:
		case l.filePred:
			v.d.addAt(l.n, CodeRefScope, lpath, "%s is only available inside a fanout stage (its do, when and ensure); a file predicate here can read ${input...}", r.Text)
		default:
			v.d.addAt(l.n, CodeRefScope, lpath, "%s is only available inside a fanout stage (its do, when and ensure); here use ${input...} or ${STEP.output...}", r.Text)
		}
	case RefCarry:
		if l.filePred {
			fc.fileCarryRef(l, r)
			return
		}
		if l.expression {
			v.d.addAt(l.n, CodeCarryInExpr, lpath, "%s reads a carry variable, which expressions cannot do (expressions see result, input, item and prev); use it in a do text, with, evaluate.in or fanout.over instead", r.Text)
			return
		}
		fc.uses = append(fc.uses, carryUse{consumer: si, name: r.Name, path: lpath, n: l.n})
	case RefInput:
		if fc.fl.input == nil {
			return
		}
		if why := pathProblem(fc.fl.input, r.Path); why != "" {
			v.d.addAt(l.n, CodeUnknownPath, lpath, "%s: %s", r.Text, why)
		}
	case RefStep:
		if l.filePred {
			fc.fileStepRef(l, r)
			return
		}
		if t := fc.checkStepRef(r, lpath, l.n, false); t != nil {
			fc.addEdge(t, si, true, lpath, l.n, "reference")
		}
	}
}

// fileStepRef reports a step output read in a file predicate: an ensure
// is evaluated with result (the output under test) and input only, plus
// item and prev in a fanout stage, so another step's output cannot be read
// there. An unknown step is reported as such.
func (fc *flowCheck) fileStepRef(l leaf, r *Ref) {
	if fc.fl.byID[r.Name] == nil {
		fc.checkStepRef(r, l.loc(), l.n, false)
		return
	}
	fc.v.d.addAt(l.n, CodeRefScope, l.loc(), "%s reads the output of step %q, which a file predicate cannot: an ensure sees only result (the output under test) and input (and item, prev in a fanout stage); have this step return the path and write expr: \"file_exists(result.FIELD)\", or use ${input...}", r.Text, r.Name)
}

// fileCarryRef reports a carry-shaped reference in a file predicate, which
// cannot be read there; ${result...} is the usual meaning.
func (fc *flowCheck) fileCarryRef(l leaf, r *Ref) {
	if r.Name == "result" {
		fc.v.d.addAt(l.n, CodeCarryInExpr, l.loc(), "%s is not a reference (result is not a ${...} name); to check a path taken from the result under test write the expression form: expr: \"file_exists(result%s)\"", r.Text, pathString(r.Path))
		return
	}
	fc.v.d.addAt(l.n, CodeCarryInExpr, l.loc(), "%s reads a carry variable, which a file predicate cannot (it is evaluated as an expression, which sees result, input, item and prev); use ${input...} or the expr form", r.Text)
}

// checkStepRef type-checks a step-output reference (docs/spec-language.md, "References"
// and "Flows") and returns the referenced step when it exists.
func (fc *flowCheck) checkStepRef(r *Ref, lp loc, n *node, outputFrom bool) *stepInfo {
	v := fc.v
	t := fc.fl.byID[r.Name]
	if t == nil {
		if !outputFrom && fc.fl.declaresCarry(r.Name) {
			v.d.addAt(n, CodeCarryPathRes, lp, "%s: %s is a carry variable, and a carry path cannot start with .output (it would read as a step output); rename the field or write ${%s}", r.Text, r.Name, r.Name)
			return nil
		}
		if !fc.fl.meansUnnamed(r.Name) {
			v.d.addAt(n, CodeUnknownStep, lp, "%s refers to step %q, which is not a step of flow %s%s%s", r.Text, r.Name, fc.fl.name, fc.fl.stepHint(), fc.fl.unnamedHint(r.Name))
		}
		return nil
	}
	if !t.kindKnown || t.outPoisoned {
		return t
	}
	s := t.s
	switch s.Kind {
	case KindGate:
		v.d.addAt(n, CodeOutRequired, lp, "%s reads the output of gate %q, but gates produce no output; reference the step before the gate", r.Text, s.ID)
		return t
	case KindFanout:
		last := len(s.Fanout.Stages) - 1
		st := s.Fanout.Stages[last]
		if st.Out == "" {
			v.d.add(t.stageNodes[last], CodeFinalOut, joinPath(indexPath(joinPath(t.path, "fanout.steps"), last), "out"), "the output of fanout %q is referenced, so its last stage must declare out: the contract of each item's result", s.ID)
			return t
		}
		if outputFrom && (len(r.Path) == 0 || !r.Path[0].IsIndex) {
			v.d.addAt(n, CodeUnknownPath, lp, "%s: the output of fanout %q is an array; a flow output must select one element, as ${%s.output[0]}", r.Text, s.ID, s.ID)
			return t
		}
		if len(r.Path) > 0 && !r.Path[0].IsIndex {
			v.d.addAt(n, CodeUnknownPath, lp, "%s: the output of fanout %q is an array (one %s per item); index it first, as ${%s.output[0]%s}", r.Text, s.ID, st.Out, s.ID, pathString(r.Path))
			return t
		}
		if len(r.Path) > 1 {
			if why := pathProblem(t.outCI, r.Path[1:]); why != "" {
				v.d.addAt(n, CodeUnknownPath, lp, "%s: %s", r.Text, why)
			}
		}
		return t
	case KindDo, KindSet, KindEvaluate:
		if s.Out == "" {
			v.d.addAt(n, CodeOutRequired, lp, "%s reads the output of step %q, which declares no out contract; add out: CONTRACT to step %q", r.Text, s.ID, s.ID)
			return t
		}
	}
	if why := pathProblem(t.outCI, r.Path); why != "" {
		v.d.addAt(n, CodeUnknownPath, lp, "%s: %s", r.Text, why)
	}
	return t
}

func (fl *flowInfo) declaresCarry(name string) bool {
	for _, c := range fl.carry {
		if c.name == name {
			return true
		}
	}
	return false
}

// stepHint lists some of the flow's step ids for messages about unknown
// steps; it is computed once per flow.
func (fl *flowInfo) stepHint() string {
	if fl.hint != nil {
		return *fl.hint
	}
	var ids []string
	for _, si := range fl.steps {
		if si.idOK && fl.byID[si.s.ID] == si {
			ids = append(ids, si.s.ID)
		}
	}
	h := ""
	if len(ids) > 0 {
		h = " (steps: " + listNames(len(ids), func(i int) string { return ids[i] }) + ")"
	}
	fl.hint = &h
	return h
}
