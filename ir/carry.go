package ir

import "sort"

// This file checks the loop-carried variables of the entry flow
// (docs/spec-language.md, "Carry").

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
