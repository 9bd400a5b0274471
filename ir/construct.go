package ir

import "math"

// This file checks the nested mappings of the constructs (gate, fanout and
// its stages, evaluate) and the with value of a run step.

// gate checks a gate mapping. The routes that are well-formed are kept
// even when another part is broken, so that the semantic phase still checks
// their targets; si.reviseBad records a present but malformed on_revise
// (which must not read as null).
func (v *validator) gate(n *node, path string, si *stepInfo) *Gate {
	if n.kind != mapNode {
		v.wrongType(n, path, "a mapping {on_approve, on_revise, on_kill} (each a step id or null)")
		return nil
	}
	g := &Gate{}
	for _, key := range [...]string{"on_approve", "on_revise", "on_kill"} {
		rp := joinPath(path, key)
		if n.keyNode(key) == nil {
			v.missing(n, path, key, key+": null or a step id")
			si.reviseBad = si.reviseBad || key == "on_revise"
			continue
		}
		r := n.get(key)
		switch {
		case r.kind == nullNode:
		case r.kind == stringNode && !isStepID(r.str):
			v.rejected(r, rp, "%s must be null or a step id (lowercase letters, digits, _ and -), got %q", key, r.str)
			si.reviseBad = si.reviseBad || key == "on_revise"
		case r.kind == stringNode:
			switch key {
			case "on_approve":
				g.OnApprove = r.str
			case "on_revise":
				g.OnRevise = r.str
			case "on_kill":
				g.OnKill = r.str
			}
		default:
			v.wrongType(r, rp, "null or a step id (lowercase letters, digits, _ and -)")
			si.reviseBad = si.reviseBad || key == "on_revise"
		}
	}
	if mr, good := v.posInt(n, path, "max_rounds", false); good {
		g.MaxRounds = mr
	}
	v.unknownKeys(n, path, " on_approve on_revise on_kill max_rounds ", "a gate")
	return g
}

func (v *validator) fanout(n *node, path string, si *stepInfo) *Fanout {
	if n.kind != mapNode {
		v.wrongType(n, path, "a fanout mapping with over, steps, concurrency, isolation, require and merge")
		return nil
	}
	f := &Fanout{Dispatch: DispatchEngine}
	if o, on, ok := v.str(n, path, "over", true, "a single reference to an array, such as \"${input.items}\""); ok {
		f.Over = si.leafLater(groupOver, leaf{base: path, rel: "over", n: on, text: o, stage: -1, over: true})
	}
	if sn := n.get("steps"); n.keyNode("steps") == nil {
		v.missing(n, path, "steps", "a list of at least one stage, each {do: TASK, ...}")
	} else if sn.kind != listNode {
		v.wrongType(sn, joinPath(path, "steps"), "a list of at least one stage")
	} else if len(sn.items()) == 0 {
		v.rejected(sn, joinPath(path, "steps"), "a fanout needs at least one stage: steps: [{do: TASK}]")
	} else {
		for i, st := range sn.items() {
			stage, outOK := v.stage(st, indexPath(joinPath(path, "steps"), i), si, i)
			si.stageNodes = append(si.stageNodes, st)
			si.stageOK = append(si.stageOK, outOK)
			f.Stages = append(f.Stages, stage)
		}
	}
	if c, ok := v.posInt(n, path, "concurrency", true); ok {
		f.Concurrency = c
	}
	if iso, isoN, ok := v.str(n, path, "isolation", true, "worktree or none"); ok {
		if Isolation(iso) != IsolationWorktree && Isolation(iso) != IsolationNone {
			v.schema(isoN, joinPath(path, "isolation"), "isolation must be worktree or none, got %q", iso)
		} else {
			f.Isolation = Isolation(iso)
		}
	}
	if rn := n.get("require"); n.keyNode("require") == nil {
		v.missing(n, path, "require", "require: all, any, or a number of items (at least 1)")
	} else {
		switch {
		case rn.kind == stringNode && rn.str == "all":
			f.Require.All = true
		case rn.kind == stringNode && rn.str == "any":
			f.Require.Any = true
		case rn.kind == numberNode:
			if c, ok := v.posIntValue(rn, joinPath(path, "require")); ok {
				f.Require.Count = c
			}
		default:
			v.wrongType(rn, joinPath(path, "require"), "all, any, or an integer of at least 1")
		}
	}
	if m, mn, ok := v.str(n, path, "merge", true, "sequential"); ok {
		if Merge(m) != MergeSequential {
			v.schema(mn, joinPath(path, "merge"), "merge must be sequential, got %q", m)
		} else {
			f.Merge = MergeSequential
		}
	}
	if pm := n.get("pre_merge"); n.keyNode("pre_merge") != nil {
		if pm.kind != listNode {
			v.wrongType(pm, joinPath(path, "pre_merge"), "a list of strings")
		} else {
			for i, e := range pm.items() {
				if e.kind != stringNode {
					v.wrongType(e, indexPath(joinPath(path, "pre_merge"), i), "a string")
					continue
				}
				f.PreMerge = append(f.PreMerge, e.str)
			}
		}
	}
	if d, dn, ok := v.str(n, path, "dispatch", false, "engine or consumer"); ok {
		if Dispatch(d) != DispatchEngine && Dispatch(d) != DispatchConsumer {
			v.schema(dn, joinPath(path, "dispatch"), "dispatch must be engine or consumer, got %q", d)
		} else {
			f.Dispatch = Dispatch(d)
		}
	}
	v.unknownKeys(n, path, " over steps concurrency isolation require merge pre_merge dispatch ", "a fanout")
	// A broken part (a concurrency, a stage's ensure...) leaves its field
	// zero; the rest is kept so that the semantic phase still checks over,
	// the stages' references and out contracts (independent problems).
	return f
}

// stage checks one fanout stage. It returns the stage with its broken
// fields left zero, and whether the stage's out is usable (the stage is a
// mapping whose out, if present, is a string): a broken ensure or attempts
// does not make the stage's output contract uncertain.
func (v *validator) stage(n *node, path string, si *stepInfo, index int) (*Stage, bool) {
	st := &Stage{Index: index}
	if n.kind != mapNode {
		v.wrongType(n, path, "a stage mapping {do: TASK, out: CONTRACT, ...}")
		return st, false
	}
	outOK := true
	if d, dn, ok := v.str(n, path, "do", true, "the stage's task text"); ok {
		st.Do = si.leafLater(groupStage, leaf{base: path, rel: "do", n: dn, text: d, stage: index})
	}
	if an := n.get("agent"); an != nil {
		if a, ok := v.agent(an, path, "agent"); ok {
			st.Agent = a
		}
	}
	if o, _, ok := v.str(n, path, "out", false, "the name of a declared contract"); ok {
		st.Out = o
	} else if n.keyNode("out") != nil {
		outOK = false
	}
	// The stage's when is scanned before its ensures (docs/spec-language.md, "How validation proceeds").
	if w, wn, ok := v.str(n, path, "when", false, "an expression string"); ok {
		st.When, st.HasWhen = w, true
		si.leafLater(groupStage, leaf{base: path, rel: "when", n: wn, text: w, expression: true, stage: index})
	}
	if en := n.get("ensure"); n.keyNode("ensure") != nil {
		st.Ensure = v.ensureList(en, path, si, index)
	}
	if a, ok := v.posInt(n, path, "attempts", false); ok {
		st.Attempts = a
	}
	v.unknownKeys(n, path, " do agent out ensure attempts when ", "a fanout stage (stages have no id)")
	return st, outOK
}

func (v *validator) evaluate(n *node, path string, si *stepInfo) *Evaluate {
	if n.kind != mapNode {
		v.wrongType(n, path, "a mapping {command: CMD, timeout_ms: N, in: TEMPLATE}")
		return nil
	}
	before := v.schemaErrs
	e := &Evaluate{}
	if c, cn, ok := v.str(n, path, "command", true, "the command to run (a non-empty string)"); ok {
		if c == "" {
			v.rejected(cn, joinPath(path, "command"), "command must not be empty")
		}
		e.Command = c
	}
	if in, inN, ok := v.str(n, path, "in", false, "a template string"); ok {
		e.In = si.leafLater(groupEvalIn, leaf{base: path, rel: "in", n: inN, text: in, stage: -1})
	}
	if t, ok := v.posInt(n, path, "timeout_ms", true); ok {
		e.TimeoutMS = t
	}
	v.unknownKeys(n, path, " command in timeout_ms ", "evaluate")
	if v.schemaErrs != before {
		return nil
	}
	return e
}

// withValue converts a with mapping, recording every string as a leaf.
func (v *validator) withValue(n *node, at *pathPart, si *stepInfo) *Value {
	switch n.kind {
	case nullNode:
		return &Value{Kind: ValueNull}
	case boolNode:
		return &Value{Kind: ValueBool, Bool: n.b}
	case numberNode:
		if math.IsNaN(n.num) || math.IsInf(n.num, 0) {
			v.schemaErrs++
			v.d.addAt(n, CodeSchemaInvalid, loc{at: at}, "expected a finite number (JSON has no infinity or NaN), got %s", describeNode(n))
		}
		return &Value{Kind: ValueNumber, Number: n.num}
	case stringNode:
		t := si.leafLater(groupWith, leaf{at: at, n: n, text: n.str, stage: -1})
		return &Value{Kind: ValueString, String: t}
	case listNode:
		out := &Value{Kind: ValueList, Items: make([]*Value, len(n.items()))}
		for i, e := range n.items() {
			out.Items[i] = v.withValue(e, &pathPart{parent: at, index: i}, si)
		}
		return out
	default:
		out := &Value{Kind: ValueObject, Keys: make([]string, len(n.keys())), Fields: make([]*Value, len(n.keys()))}
		for i, k := range n.keys() {
			out.Keys[i] = k.str
			out.Fields[i] = v.withValue(n.vals()[i], &pathPart{parent: at, key: k.str, isKey: true}, si)
		}
		return out
	}
}
