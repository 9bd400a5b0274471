package ir

import "strings"

// This file is the semantic phase (docs/spec-language.md, "How validation
// proceeds"). Unlike the reference, which stops at the first semantic
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

// pathProblem checks that path exists below contract ci (docs/spec-language.md, "How validation proceeds").
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

// ---- output.from (docs/spec-language.md, "Flows") ----

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
