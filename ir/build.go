package ir

import "sort"

// Build loads, validates and compiles a spec. It returns the Plan when the
// spec is valid, else nil and every problem found, sorted by position.
// Build never panics on bad input; the input is bounded (MaxSpecBytes,
// MaxNesting, MaxNodes). YAML is read with the 1.2 core schema (so yes/no
// are strings and 017 is 17); JSON text is YAML and is accepted as well.
// The plan does not keep the loaded document (about a third of a large
// spec's memory, docs/engine.md "Cost"): BuildDocument
// hands it to the one caller that needs it.
func Build(src []byte) (*Plan, Diagnostics) {
	p, _, diags := (&validator{}).buildPlan(src, false)
	return p, diags
}

// BuildDocument is Build that also returns the spec as it was loaded: an
// ordered JSON value in package expr's model (*expr.Object, []any,
// string, float64, bool, nil), with aliases expanded and mapping keys in
// document order. It is what a run persists as its spec snapshot and what
// its revision digest covers. The value is the caller's to keep or change.
func BuildDocument(src []byte) (*Plan, any, Diagnostics) {
	return (&validator{}).buildPlan(src, true)
}

// buildPlan compiles src, and returns its document too when doc is set.
func (v *validator) buildPlan(src []byte, doc bool) (*Plan, any, Diagnostics) {
	root := v.check(src)
	if !v.d.empty() {
		return nil, nil, v.d.sorted()
	}
	if !doc {
		return v.compile(), nil, nil
	}
	return v.compile(), nodeValue(root), nil
}

// Validate reports the problems of a spec (nil when it is valid). It does
// the checks of Build without compiling a Plan.
func Validate(src []byte) Diagnostics {
	v := &validator{}
	v.check(src)
	if v.d.empty() {
		return nil
	}
	return v.d.sorted()
}

// check loads and validates src, recording the problems in v.d, and
// returns the loaded tree (nil when it could not be loaded).
func (v *validator) check(src []byte) *node {
	loadDoc := load
	if v.slowLoad {
		loadDoc = loadSlow
	}
	root := loadDoc(src, &v.d)
	if root == nil {
		return nil
	}
	v.build(root)
	v.semantic()
	return root
}

// compile turns a validated spec into a Plan. It runs only when the
// validation found no problem, so every lookup below succeeds.
func (v *validator) compile() *Plan {
	p := &Plan{
		Version:   1,
		Entry:     v.entry,
		contracts: make(map[string]*Contract, len(v.contracts)),
		flows:     make(map[string]*Flow, len(v.flows)),
	}
	for _, ci := range v.contracts {
		p.Contracts = append(p.Contracts, ci.c)
		p.contracts[ci.name] = ci.c
	}
	for _, fl := range v.flows {
		f := fl.f
		f.Input = fl.input.c
		f.Output.ContractName = fl.outputContrct
		f.Output.Contract = v.contractByName[fl.outputContrct].c
		g := v.flowGraph(fl)
		f.byID = make(map[string]int, len(fl.steps))
		// The edge lists of all steps share one backing array.
		total := 0
		for i := range fl.steps {
			total += len(g.dpred[i]) + len(g.dsucc[i]) + len(g.rpred[i])
		}
		arena := make([]int, 0, total)
		for _, si := range fl.steps {
			s := si.s
			f.byID[s.ID] = s.Index
			s.Deps, arena = sortedInts(arena, g.dpred[s.Index])
			s.Dependents, arena = sortedInts(arena, g.dsucc[s.Index])
			s.RoutedFrom, arena = sortedInts(arena, g.rpred[s.Index])
		}
		f.Order = g.topoOrder()
		p.Flows = append(p.Flows, f)
		p.flows[fl.name] = f
	}
	v.countExpressions(p)
	return p
}

// countExpressions counts in p the distinct expressions a holder of p
// compiles (those the validation compiled, and the expressions of literal
// file checks, which it reads without compiling) and the states of their
// literal patterns.
func (v *validator) countExpressions(p *Plan) {
	seen := make(map[string]bool, len(v.exprs))
	add := func(src string) {
		if src != "" && !seen[src] {
			seen[src] = true
			p.Expressions++
			p.ExpressionBytes += len(src)
		}
	}
	for src, c := range v.exprs {
		add(src)
		if c.prog != nil {
			p.PatternStates += c.prog.PatternStates()
		}
	}
	ensures := func(es []Ensure) {
		for _, e := range es {
			add(e.Expression())
		}
	}
	for _, f := range p.Flows {
		for _, s := range f.Steps {
			ensures(s.Ensure)
			if s.Fanout != nil {
				for _, st := range s.Fanout.Stages {
					ensures(st.Ensure)
				}
			}
		}
	}
}

// flowGraph returns the graph built while checking the flow.
func (v *validator) flowGraph(fl *flowInfo) *graph { return fl.g }

// sortedInts appends xs to arena and returns them sorted as their own
// (capacity-limited) slice, with the grown arena.
func sortedInts(arena []int, xs []int32) ([]int, []int) {
	if len(xs) == 0 {
		return nil, arena
	}
	start := len(arena)
	for _, x := range xs {
		arena = append(arena, int(x))
	}
	out := arena[start:len(arena):len(arena)]
	sort.Ints(out)
	return out, arena
}
