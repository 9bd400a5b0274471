package ir

// This file holds the rules checked on a flow's finished graph: consumer
// worktree fanouts and gate revise targets.

// ---- consumer worktree fanouts (docs/spec-language.md, "Graph and routing") ----

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

// ---- revise (docs/spec-language.md, "Steps", gate) ----

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
