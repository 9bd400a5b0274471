package ir

import (
	"sort"
	"strconv"
	"strings"
)

// This file is the semantic phase (spec/ir.md sections 4.2-8, checking
// order 10.2). Unlike the reference, which stops at the first semantic
// error, it reports every problem; values already found broken are marked
// (poisoned, loose types, outPoisoned) so that one mistake is reported
// once, not again through everything that depends on it.

func (v *validator) semantic() {
	v.checkContracts()
	if v.entryNode != nil && !v.entryOK {
		v.d.add(v.entryNode, CodeUnknownEntry, "flows.entry", "entry names %q, which is not a flow of this spec; use one of: %s", v.entry, v.flowNames())
	}
	v.checkRuns()
	for _, fl := range v.flows {
		v.checkFlow(fl)
	}
	v.checkSubflowRecursion()
	v.checkSubflowBodies()
}

func (v *validator) flowNames() string {
	if len(v.flows) == 0 {
		return "(no flows are declared)"
	}
	return listNames(len(v.flows), func(i int) string { return v.flows[i].name })
}

// ---- contracts and types ----

// looseType stands for a type that failed to parse or resolve: paths
// through it are accepted so that the one error is not repeated.
func looseType(src string) *Type { return &Type{Kind: TypeObject, Source: src, loose: true} }

func (v *validator) checkContracts() {
	for _, ci := range v.contracts {
		v.parseFieldTypes(ci)
	}
	for _, ci := range v.contracts {
		v.resolveFieldTypes(ci)
	}
	// Recursion: depth-first over contracts in declaration order.
	state := make(map[*contractInfo]uint8, len(v.contracts))
	var visit func(ci *contractInfo)
	visit = func(ci *contractInfo) {
		state[ci] = 1
		if ci.c != nil {
			for i, f := range ci.c.Fields {
				for _, ref := range contractRefs(f.Type) {
					target := v.contractByName[ref]
					if target == nil || target.c == nil {
						continue
					}
					switch state[target] {
					case 1:
						v.d.add(ci.fieldNodes[i], CodeContractRecur, joinPath(ci.path, f.Name),
							"field %s.%s refers back to contract %s, which is being defined: contracts cannot be recursive; flatten the shape or use object/array", ci.name, f.Name, ref)
					case 0:
						visit(target)
					}
				}
			}
		}
		state[ci] = 2
	}
	for _, ci := range v.contracts {
		if state[ci] == 0 {
			visit(ci)
		}
	}
}

// contractRefs lists the contract names a type refers to.
func contractRefs(t *Type) []string {
	for t != nil && t.Kind == TypeList {
		t = t.Elem
	}
	if t != nil && t.Kind == TypeContract && !t.loose {
		return []string{t.Name}
	}
	return nil
}

func (v *validator) parseFieldTypes(ci *contractInfo) {
	if ci == nil || ci.c == nil {
		return
	}
	for i := range ci.c.Fields {
		src := ci.fieldSrc[i]
		t, why := parseType(src)
		if t == nil && isName(src) && v.contractByName[src] != nil {
			why = "inside a type, a contract name must start with a capital letter; rename contract " + src + " (for example to " + strings.ToUpper(src[:1]) + src[1:] + ")"
		}
		if t == nil {
			v.d.add(ci.fieldNodes[i], CodeContractType, joinPath(ci.path, ci.c.Fields[i].Name), "type %q is invalid: %s", src, why)
			t = looseType(src)
		}
		ci.c.Fields[i].Type = t
	}
}

func (v *validator) resolveFieldTypes(ci *contractInfo) {
	if ci == nil || ci.c == nil {
		return
	}
	for i := range ci.c.Fields {
		t := ci.c.Fields[i].Type
		for t.Kind == TypeList {
			t = t.Elem
		}
		if t.Kind != TypeContract || t.loose {
			continue
		}
		target := v.contractByName[t.Name]
		switch {
		case target == nil && !v.contractsOK:
			t.loose = true
		case target == nil:
			v.d.add(ci.fieldNodes[i], CodeContractRef, joinPath(ci.path, ci.c.Fields[i].Name), "type %q names contract %s, which is not declared; declare it under contracts or use one of: %s", ci.fieldSrc[i], t.Name, v.contractNames())
			t.loose = true
		case target.c == nil:
			t.loose = true // the target's own problem is reported at the target
		default:
			t.Contract = target.c
		}
	}
}

func (v *validator) contractNames() string {
	if len(v.contracts) == 0 {
		return "(none declared)"
	}
	return listNames(len(v.contracts), func(i int) string { return v.contracts[i].name })
}

// lookupContract finds a contract by name for out/output.contract.
// When contracts itself is missing or broken, every name is accepted (as
// an unknown shape): that one problem is already reported.
func (v *validator) lookupContract(name string) (*contractInfo, bool) {
	ci, ok := v.contractByName[name]
	if !ok && !v.contractsOK {
		return &contractInfo{name: name, poisoned: true}, true
	}
	return ci, ok
}

// pathProblem checks that path exists below contract ci (spec/ir.md 7.6).
// It returns "" when it does, else what is wrong.
func pathProblem(ci *contractInfo, path []PathSeg) string {
	if ci == nil || ci.poisoned || ci.c == nil || len(path) == 0 {
		return ""
	}
	return contractPathProblem(ci.c, path, "")
}

func contractPathProblem(c *Contract, path []PathSeg, at string) string {
	seg := path[0]
	where := "contract " + c.Name
	if c.Name == "" {
		where = "the flow input"
	}
	if seg.IsIndex {
		return where + " is an object, so " + at + "[" + itoa(seg.Index) + "] cannot index it; name a field: " + fieldList(c)
	}
	f, ok := c.Field(seg.Field)
	if !ok {
		return where + " has no field " + seg.Field + " (declared: " + fieldList(c) + ")"
	}
	return typePathProblem(f.Type, path[1:], at+"."+seg.Field)
}

func typePathProblem(t *Type, path []PathSeg, at string) string {
	for i := 0; i < len(path); i++ {
		seg := path[i]
		if t.loose {
			return ""
		}
		switch t.Kind {
		case TypeContract:
			if t.Contract == nil {
				return ""
			}
			return contractPathProblem(t.Contract, path[i:], at)
		case TypeList:
			if !seg.IsIndex {
				return at + " is an array (" + t.Source + "); index it first, as " + at + "[0]." + seg.Field
			}
			at += "[" + itoa(seg.Index) + "]"
			t = t.Elem
		case TypeObject:
			if seg.IsIndex {
				return at + " is an object, not an array"
			}
			return ""
		case TypeArray:
			if !seg.IsIndex {
				return at + " is an array; index it first, as " + at + "[0]"
			}
			return ""
		default:
			return at + " is " + describeType(t) + " and has no fields or elements"
		}
	}
	return ""
}

// ---- subflow calls ----

func (v *validator) checkRuns() {
	for _, fl := range v.flows {
		for _, si := range fl.steps {
			if !si.kindKnown || si.s.Kind != KindRun {
				continue
			}
			callee := v.flowByName[si.s.Run]
			if callee == nil {
				v.d.add(si.present.get("run"), CodeSubflowUnknown, joinPath(si.path, "run"), "run names %q, which is not a flow of this spec; use one of: %s", si.s.Run, v.flowNames())
				si.outPoisoned = true
				continue
			}
			if callee.input == nil || si.s.With == nil {
				continue
			}
			want := make(map[string]bool, len(callee.input.c.Fields))
			for _, f := range callee.input.c.Fields {
				want[f.Name] = true
			}
			var extra, missing []string
			have := make(map[string]bool, len(si.s.With.Keys))
			for _, k := range si.s.With.Keys {
				have[k] = true
				if !want[k] {
					extra = append(extra, k)
				}
			}
			for _, f := range callee.input.c.Fields {
				if !have[f.Name] {
					missing = append(missing, f.Name)
				}
			}
			if len(extra)+len(missing) > 0 {
				var parts []string
				if len(missing) > 0 {
					parts = append(parts, "missing "+listNames(len(missing), func(i int) string { return missing[i] }))
				}
				if len(extra) > 0 {
					parts = append(parts, "not inputs of "+callee.name+": "+listNames(len(extra), func(i int) string { return extra[i] }))
				}
				v.d.add(si.present.get("with"), CodeWithMismatch, joinPath(si.path, "with"), "with must give exactly the inputs of flow %s (%s); %s", callee.name, fieldListOrNone(callee.input.c), strings.Join(parts, "; "))
			}
		}
	}
}

func fieldListOrNone(c *Contract) string {
	if len(c.Fields) == 0 {
		return "it has none: use with: {}"
	}
	return fieldList(c)
}

func (v *validator) checkSubflowRecursion() {
	state := make(map[*flowInfo]uint8, len(v.flows))
	var visit func(fl *flowInfo)
	visit = func(fl *flowInfo) {
		state[fl] = 1
		for _, si := range fl.steps {
			if !si.kindKnown || si.s.Kind != KindRun {
				continue
			}
			callee := v.flowByName[si.s.Run]
			if callee == nil {
				continue
			}
			switch state[callee] {
			case 1:
				v.d.add(si.present.get("run"), CodeSubflowRecur, joinPath(si.path, "run"), "running flow %s from flow %s closes a cycle of subflow calls; flows cannot call themselves, directly or indirectly", callee.name, fl.name)
			case 0:
				visit(callee)
			}
		}
		state[fl] = 2
	}
	for _, fl := range v.flows {
		if state[fl] == 0 {
			visit(fl)
		}
	}
}

func (v *validator) checkSubflowBodies() {
	if !v.entryOK {
		return
	}
	for _, fl := range v.flows {
		if fl.name == v.entry {
			continue
		}
		for _, si := range fl.steps {
			if !si.kindKnown {
				continue
			}
			switch si.s.Kind {
			case KindFanout:
				v.d.add(si.n.keyNode("fanout"), CodeSubflowBody, joinPath(si.path, "fanout"), "flow %s is not the entry flow, so it cannot contain a fanout step; move the fanout into the entry flow %s", fl.name, v.entry)
			case KindRun:
				v.d.add(si.n.keyNode("run"), CodeSubflowBody, joinPath(si.path, "run"), "flow %s is not the entry flow, so it cannot run another flow; subflows are one level deep: call %s from the entry flow %s", fl.name, si.s.Run, v.entry)
			}
		}
	}
}

// ---- per flow ----

// flowCheck is the state of checking one flow.
type flowCheck struct {
	v      *validator
	fl     *flowInfo
	g      *graph
	cands  []edgeCand
	uses   []carryUse
	routed []bool // step is some route's target
	// depMark[from] is 1 + the step whose dependency on from was last
	// proposed (deduplication).
	depMark []int32
	cur     *stepInfo // the step whose edges are being proposed
	entry   bool
}

type carryUse struct {
	consumer *stepInfo
	name     string
	path     loc
	n        *node
}

func (v *validator) checkFlow(fl *flowInfo) {
	fc := &flowCheck{v: v, fl: fl, entry: v.entryOK && fl.name == v.entry}
	fl.f.IsEntry = fc.entry
	// 1. output contract.
	if fl.contractOK {
		if _, ok := v.lookupContract(fl.outputContrct); !ok {
			v.d.add(fl.contractNode, CodeContractRef, joinPath(fl.path, "output.contract"), "output contract %q is not declared; declare it under contracts or use one of: %s", fl.outputContrct, v.contractNames())
		}
	}
	// 2. input types.
	v.parseFieldTypes(fl.input)
	v.resolveFieldTypes(fl.input)
	if !fl.stepsOK {
		return
	}
	// 3. step table.
	fc.stepTable()
	// 4. edges and references.
	fc.g = newGraph(len(fl.steps))
	fl.g = fc.g
	fc.routed = make([]bool, len(fl.steps))
	fc.depMark = make([]int32, len(fl.steps))
	fc.cands = make([]edgeCand, 0, len(fl.steps))
	for _, si := range fl.steps {
		if si.present != nil {
			fc.edgesAndRefs(si)
		}
	}
	fc.commitEdges()
	// 5. consumer worktree rules.
	if fc.entry {
		fc.consumerWorktree()
	}
	// 6. carry.
	fc.carry()
	// 7. revise.
	fc.revise()
	// 8. output.from.
	fc.outputFrom()
}

func (fc *flowCheck) stepTable() {
	v, fl := fc.v, fc.fl
	for _, si := range fl.steps {
		if si.idOK {
			if first, dup := fl.byID[si.s.ID]; dup {
				v.d.add(si.present.get("id"), CodeDuplicateID, joinPath(si.path, "id"), "step id %q is already used by %s in this flow; step ids must be unique within a flow", si.s.ID, first.path)
			} else {
				fl.byID[si.s.ID] = si
			}
		}
		if !si.kindKnown {
			fc.unclearOut(si)
			continue
		}
		s := si.s
		if s.Kind == KindFanout && s.Fanout != nil {
			for j, st := range s.Fanout.Stages {
				// out: "" names no contract; only an absent out is no out.
				if !si.stageOK[j] || si.stageNodes[j].keyNode("out") == nil {
					continue
				}
				ci, ok := v.lookupContract(st.Out)
				if !ok {
					v.d.add(si.stageNodes[j].get("out"), CodeContractRef, joinPath(indexPath(joinPath(si.path, "fanout.steps"), j), "out"), "out names contract %q, which is not declared; use one of: %s", st.Out, v.contractNames())
					continue
				}
				if ci.c != nil {
					st.OutContract = ci.c
				}
			}
		}
		switch s.Kind {
		case KindDo, KindSet, KindEvaluate:
			if si.present.keyNode("out") == nil || si.outPoisoned {
				// No out, or an out that is not a string (already reported).
				continue
			}
			ci, ok := v.lookupContract(s.Out)
			if !ok {
				v.d.add(si.present.get("out"), CodeContractRef, joinPath(si.path, "out"), "out names contract %q, which is not declared; use one of: %s", s.Out, v.contractNames())
				si.outPoisoned = true
				continue
			}
			s.OutContract = ci.c
			si.outCI = ci
		case KindFanout:
			if s.Fanout == nil || len(s.Fanout.Stages) == 0 {
				si.outPoisoned = true
				continue
			}
			last := len(s.Fanout.Stages) - 1
			st := s.Fanout.Stages[last]
			if !si.stageOK[last] {
				si.outPoisoned = true
				continue
			}
			if si.stageNodes[last].keyNode("out") == nil {
				continue
			}
			ci, ok := v.lookupContract(st.Out)
			if !ok {
				si.outPoisoned = true
				continue
			}
			si.outCI = ci
			s.OutContract = ci.c
		case KindRun:
			callee := v.flowByName[s.Run]
			if callee == nil || !callee.contractOK {
				si.outPoisoned = true
				continue
			}
			ci, ok := v.lookupContract(callee.outputContrct)
			if !ok {
				v.d.add(si.present.get("run"), CodeContractRef, joinPath(si.path, "out"), "this run step's output contract is flow %s's output contract %q, which is not declared; declare it under contracts", callee.name, callee.outputContrct)
				si.outPoisoned = true
				continue
			}
			si.outCI = ci
			s.OutContract = ci.c
		}
	}
}

// unclearOut checks the out contract named by a step whose construct is
// unclear: an undeclared name is a problem of its own, but the step's
// output is not known, so nothing reads it.
func (fc *flowCheck) unclearOut(si *stepInfo) {
	on := si.present.get("out")
	if on == nil || on.kind != stringNode {
		return
	}
	if _, ok := fc.v.lookupContract(on.str); !ok {
		fc.v.d.add(on, CodeContractRef, joinPath(si.path, "out"), "out names contract %q, which is not declared; use one of: %s", on.str, fc.v.contractNames())
	}
}

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

// checkStepRef type-checks a step-output reference (spec/ir.md 7.5 and
// 8.9) and returns the referenced step when it exists.
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

// ---- consumer worktree fanouts (spec/ir.md 8.6) ----

func (fc *flowCheck) consumerWorktree() {
	v, fl := fc.v, fc.fl
	// gated[i]: step i is a direct dependency of a gate that always opens
	// (no when, not a route target).
	var gated []bool
	for _, si := range fl.steps {
		s := si.s
		if !si.kindKnown || s.Kind != KindFanout || s.Fanout == nil || s.Fanout.Dispatch != "consumer" || s.Fanout.Isolation != "worktree" {
			continue
		}
		for j, st := range s.Fanout.Stages {
			// A stage's broken fields are left zero; the rest is checked.
			sp := indexPath(joinPath(si.path, "fanout.steps"), j)
			for i, e := range st.Ensure {
				if e.Kind == EnsureFileExists || e.Kind == EnsureFileContains || e.Kind == EnsureExpr && v.usesFileFunctions(e.Expr) {
					k := si.stageEnsureAt[j][i]
					v.d.add(si.stageNodes[j].get("ensure").items()[k], CodeWorktreeFS, indexPath(joinPath(sp, "ensure"), k), "a consumer-dispatched worktree fanout cannot check files in its stages (the files live in the consumer's worktrees, out of the engine's reach); drop this predicate or check the files in a step after the merge")
					break
				}
			}
			if st.HasWhen && v.usesFileFunctions(st.When) {
				v.d.add(si.stageNodes[j].get("when"), CodeWorktreeFS, joinPath(sp, "when"), "a consumer-dispatched worktree fanout cannot call file functions in a stage when (the files live in the consumer's worktrees)")
			}
		}
		if gated == nil {
			gated = make([]bool, len(fl.steps))
			for _, gi := range fl.steps {
				if !gi.kindKnown || gi.s.Kind != KindGate || gi.s.HasWhen || fc.routed[gi.s.Index] {
					continue
				}
				for _, p := range fc.g.dpred[gi.s.Index] {
					gated[p] = true
				}
			}
		}
		if !gated[s.Index] {
			v.d.add(si.present.get("fanout").get("isolation"), CodeWorktreeGate, joinPath(si.path, "fanout.isolation"),
				"a consumer-dispatched worktree fanout needs a gate that directly follows it (a gate step with after: [%s], no when, and not the target of any route) so that the merged worktrees are reviewed", si.idOr("FANOUT_ID"))
		}
	}
}

// ---- carry (spec/ir.md 8.8) ----

func (fc *flowCheck) carry() {
	v, fl := fc.v, fc.fl
	if fl.hasCarry && v.entryOK && !fc.entry {
		v.d.add(fl.carryNode, CodeCarryRootOnly, joinPath(fl.path, "carry"), "carry is only allowed on the entry flow %s; flow %s is a subflow: pass the value through with instead", v.entry, fl.name)
	}
	visible := fl.hasCarry && (fc.entry || !v.entryOK)
	// Sources: index of the initial step per variable (-1 for input or
	// unknown).
	type source struct {
		ok   bool // initial checked and usable for ordering
		step int  // -1: input-sourced
	}
	sources := make(map[string]*source)
	if visible {
		for _, ci := range fl.carry {
			src := &source{step: -1}
			sources[ci.name] = src
			if ci.name == "item" || ci.name == "prev" || ci.name == "input" || fl.byID[ci.name] != nil {
				v.d.add(ci.keyNode, CodeCarryName, ci.path, "carry variable %q clashes with %s; rename it", ci.name, clashWhat(ci.name))
			}
			if !ci.initialOK {
				continue
			}
			ref, ok := fc.carryValue(ci.initial, joinPath(ci.path, "initial"), ci.initialNode, true)
			if !ok || ref == nil {
				continue
			}
			ci.c = &Carry{Name: ci.name, Initial: ref}
			if ref.Kind == RefStep {
				src.step = fl.byID[ref.Name].s.Index
			}
			src.ok = true
		}
	}
	// Uses. The ordering questions are answered together (reachAll).
	consumers := make(map[string][]*stepInfo)
	type orderCheck struct {
		u   carryUse
		src int
	}
	var checks []orderCheck
	var qs []reachQuery
	for _, u := range fc.uses {
		src, declared := sources[u.name]
		if !declared {
			if !(visible && !fl.carryOK) {
				hint := fc.carryHint(visible)
				if fl.byID[u.name] != nil {
					hint = "; to read step " + u.name + "'s output write ${" + u.name + ".output...}"
				}
				v.d.addAt(u.n, CodeUnknownCarry, u.path, "${%s...} reads carry variable %q, which is not declared%s", u.name, u.name, hint)
			}
			continue
		}
		list := consumers[u.name]
		if len(list) == 0 || list[len(list)-1] != u.consumer {
			consumers[u.name] = append(list, u.consumer)
		}
		if !src.ok || src.step < 0 {
			continue
		}
		checks = append(checks, orderCheck{u: u, src: src.step})
		qs = append(qs, reachQuery{From: src.step, To: u.consumer.s.Index})
	}
	fc.g.reachAll(qs)
	for i, c := range checks {
		if c.u.consumer.s.Index == c.src || !qs[i].Reaches {
			src := fl.steps[c.src].s.ID
			v.d.addAt(c.u.n, CodeCarryBefore, c.u.path, "step %s reads carry variable %s before its initial source %q has run; add after: [%s] (carry creates no dependency, and routes do not order)", c.u.consumer.label(), c.u.name, src, src)
		}
	}
	if !visible {
		return
	}
	// on_revise entries. The reset and ordering questions of a variable's
	// entries are answered together (reviseCoverage), then reported.
	type reviseEntry struct {
		e      *carryReviseInfo
		gate   *stepInfo
		target *stepInfo
	}
	for _, ci := range fl.carry {
		var entries []reviseEntry
		for i := range ci.revise {
			e := &ci.revise[i]
			if !e.ok {
				continue
			}
			gi := fl.byID[e.gate]
			if gi == nil || !gi.kindKnown || gi.s.Kind != KindGate {
				if gi == nil || gi.kindKnown {
					v.d.add(e.keyNode, CodeCarryGate, e.path, "on_revise key %q is not a gate step of flow %s; on_revise maps gate ids to the variable's new value", e.gate, fl.name)
				}
				continue
			}
			if ref, ok := fc.carryValue(e.value, e.path, e.valNode, false); ok && ref != nil && ci.c != nil {
				ci.c.OnRevise = append(ci.c.OnRevise, CarryRevise{Gate: e.gate, Value: ref})
			}
			g := gi.s.Gate
			if g == nil {
				continue
			}
			if g.OnRevise == "" {
				if gi.reviseBad {
					continue // the malformed on_revise is the problem
				}
				v.d.add(e.keyNode, CodeCarryNull, e.path, "gate %q rewrites carry variable %s on revise, but its on_revise is null; give the gate an on_revise target or drop this entry", e.gate, ci.name)
				continue
			}
			target := fl.byID[g.OnRevise]
			rp := joinPath(gi.path, "gate.on_revise")
			if target == nil {
				fc.unknownTarget(gi.present.get("gate").get("on_revise"), locOf(rp), "on_revise", g.OnRevise)
				continue
			}
			if target == gi {
				v.d.add(gi.present.get("gate").get("on_revise"), CodeSelfTarget, rp, "gate %q cannot revise to itself; name a step before it", gi.s.ID)
				continue
			}
			entries = append(entries, reviseEntry{e: e, gate: gi, target: target})
		}
		readers := consumers[ci.name]
		idx := make([]int, len(readers))
		for i, c := range readers {
			idx[i] = c.s.Index
		}
		pairs := make([][2]int, len(entries))
		for i, re := range entries {
			pairs[i] = [2]int{re.target.s.Index, re.gate.s.Index}
		}
		fc.g.reviseCoverage(idx, pairs, func(i, k int, missed bool) bool {
			if v.d.full() {
				v.d.dropped++ // and stop looking: the report is full
				return false
			}
			e, re, c := entries[i].e, entries[i], readers[k]
			if missed {
				v.d.add(e.keyNode, CodeCarryMisses, e.path, "gate %q rewrites %s on revise, but its revise target %q does not reset consumer %s; revise to a step that consumer depends on, so it reruns with the new value", e.gate, ci.name, re.target.s.ID, c.label())
			} else {
				v.d.add(e.keyNode, CodeCarryNotAfter, e.path, "gate %q rewrites %s, so it must come after every step that reads it; add %s to the gate's after list", e.gate, ci.name, c.label())
			}
			return true
		})
	}
	for _, ci := range fl.carry {
		if ci.c != nil {
			for _, c := range consumers[ci.name] {
				ci.c.Consumers = append(ci.c.Consumers, c.s.Index)
			}
			sort.Ints(ci.c.Consumers)
			fl.f.Carry = append(fl.f.Carry, ci.c)
		}
	}
}

func clashWhat(name string) string {
	switch name {
	case "item", "prev", "input":
		return "the reserved reference ${" + name + "}"
	}
	return "the step of the same id"
}

func (fc *flowCheck) carryHint(visible bool) string {
	if !visible {
		if fc.entry || !fc.v.entryOK {
			return "; declare it under carry: on the flow"
		}
		return "; carry variables exist only in the entry flow " + fc.v.entry
	}
	if len(fc.fl.carry) == 0 {
		return ""
	}
	return " (declared: " + listNames(len(fc.fl.carry), func(i int) string { return fc.fl.carry[i].name }) + ")"
}

// carryValue checks a carry initial or on_revise value: one full step or
// input reference, then (for initial) the unconditional-source rule, then
// the type check.
func (fc *flowCheck) carryValue(text, path string, n *node, initial bool) (*Ref, bool) {
	v, fl := fc.v, fc.fl
	t, syn, _ := v.tmpl.parseTemplate(text)
	var ref *Ref
	if syn == templateOK {
		ref = t.Full()
	}
	if ref == nil || (ref.Kind != RefStep && ref.Kind != RefInput) {
		v.d.add(n, CodeCarryRef, path, "a carry value must be exactly one reference to a step output or the flow input, such as \"${plan.output.tasks}\" or \"${input.items}\"; got %q", text)
		return nil, false
	}
	if ref.Kind == RefInput {
		if fl.input != nil {
			if why := pathProblem(fl.input, ref.Path); why != "" {
				v.d.add(n, CodeUnknownPath, path, "%s: %s", ref.Text, why)
				return ref, false
			}
		}
		return ref, true
	}
	if initial {
		if si := fl.byID[ref.Name]; si != nil {
			var why string
			switch {
			case si.s.HasWhen:
				why = "it has a when condition"
			case si.kindKnown && si.s.Kind == KindGate:
				why = "it is a gate"
			case fc.routed[si.s.Index]:
				why = "it is the target of a route (on_fail, on_approve or on_kill) and may never run"
			}
			if why != "" {
				v.d.add(n, CodeCarryCond, path, "the initial value of a carry variable must come from a step that always runs; step %q cannot be the source because %s", si.s.ID, why)
				return ref, false
			}
		}
	}
	t2 := fc.checkStepRefCount(ref, path, n)
	return ref, t2
}

// checkStepRefCount runs checkStepRef and reports whether it added no
// diagnostic.
func (fc *flowCheck) checkStepRefCount(ref *Ref, path string, n *node) bool {
	before := len(fc.v.d.list)
	si := fc.checkStepRef(ref, locOf(path), n, false)
	return si != nil && len(fc.v.d.list) == before && si.kindKnown && !si.outPoisoned
}

// ---- revise (spec/ir.md 8.5) ----

func (fc *flowCheck) revise() {
	v, fl := fc.v, fc.fl
	first := true
	type ancestorCheck struct {
		gate, target *stepInfo
		rn           *node
		rp           string
	}
	var checks []ancestorCheck
	var qs []reachQuery
	for _, gi := range fl.steps {
		if !gi.kindKnown || gi.s.Kind != KindGate || gi.s.Gate == nil || gi.s.Gate.OnRevise == "" {
			continue
		}
		g := gi.s.Gate
		rn := gi.present.get("gate").get("on_revise")
		rp := joinPath(gi.path, "gate.on_revise")
		if first && fl.maxRounds == 0 && fl.n.keyNode("max_rounds") == nil {
			v.d.add(rn, CodeReviseRounds, rp, "a gate that can revise needs a flow-level limit: add max_rounds: N to flow %s (a gate's own max_rounds does not count)", fl.name)
		}
		first = false
		target := fl.byID[g.OnRevise]
		switch {
		case target == nil:
			fc.unknownTarget(rn, locOf(rp), "on_revise", g.OnRevise)
		case target == gi:
			v.d.add(rn, CodeSelfTarget, rp, "gate %q cannot revise to itself; name a step before it", gi.s.ID)
		default:
			checks = append(checks, ancestorCheck{gate: gi, target: target, rn: rn, rp: rp})
			qs = append(qs, reachQuery{From: target.s.Index, To: gi.s.Index, All: true})
		}
	}
	fc.g.reachAll(qs)
	for i, c := range checks {
		if !qs[i].Reaches {
			v.d.add(c.rn, CodeReviseAncestor, c.rp, "on_revise target %q is not an ancestor of gate %s: revise goes back to a step the gate comes after (through after, references or routes); add %q to the gate's after list or revise to a step it already follows", c.target.s.ID, c.gate.label(), c.target.s.ID)
		}
	}
}

// ---- output.from (spec/ir.md 8.9) ----

func (fc *flowCheck) outputFrom() {
	v, fl := fc.v, fc.fl
	if !fl.fromOK {
		return
	}
	path := joinPath(fl.path, "output.from")
	t, syn, _ := v.tmpl.parseTemplate(fl.fromText)
	var ref *Ref
	if syn == templateOK {
		ref = t.Full()
	}
	if ref == nil || ref.Kind != RefStep {
		v.d.add(fl.fromNode, CodeRefInvalid, path, "output.from must be exactly one step output reference, such as \"${STEP.output}\" or \"${fan.output[0]}\", with no other text; got %q", fl.fromText)
		return
	}
	if fc.checkStepRef(ref, locOf(path), fl.fromNode, true) != nil {
		fl.f.Output.From = ref
	}
}
