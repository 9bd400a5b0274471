package ir

import (
	"fmt"
	"math"
)

// Outline is the shape of a valid spec's flows: each flow's steps in
// declaration order, with their kinds, the flows their run steps call and
// each flow's budget, the number of each fanout's stages. It is what a reader of a run's record needs of the
// run's plan (an audit lists every step, finished or not, in order), and
// it is read without compiling the spec: a tenth of Build's time and a
// third of its memory for a long flow (docs/engine.md, "Cost").
type Outline struct {
	// Entry is the name of the flow a run starts.
	Entry string
	// Flows are the spec's flows in document order.
	Flows []*FlowOutline
}

// FlowOutline is one flow of an [Outline].
type FlowOutline struct {
	Name string
	// Budget is the flow's budget, nil when it has none.
	Budget *Budget
	// Steps are the flow's steps in declaration order.
	Steps []StepOutline
}

// StepOutline is one step of a [FlowOutline].
type StepOutline struct {
	ID   string
	Kind StepKind
	// Run is the flow a run step calls ("" for the other kinds).
	Run string
	// Stages is the number of a fanout's stages (0 for the other kinds).
	Stages int
}

// Flow returns the flow named name, or nil (also of a nil outline).
func (o *Outline) Flow(name string) *FlowOutline {
	if o == nil {
		return nil
	}
	for _, f := range o.Flows {
		if f.Name == name {
			return f
		}
	}
	return nil
}

// EntryFlow returns the flow a run starts, or nil.
func (o *Outline) EntryFlow() *FlowOutline { return o.Flow(o.Entry) }

// Outline is the plan's outline: for the spec p was built from, the same
// as [ReadOutline] of it.
func (p *Plan) Outline() *Outline {
	o := &Outline{Entry: p.Entry, Flows: make([]*FlowOutline, len(p.Flows))}
	for i, f := range p.Flows {
		fo := &FlowOutline{Name: f.Name, Budget: f.Budget, Steps: make([]StepOutline, len(f.Steps))}
		for j, s := range f.Steps {
			fo.Steps[j] = StepOutline{ID: s.ID, Kind: s.Kind, Run: s.Run}
			if s.Fanout != nil {
				fo.Steps[j].Stages = len(s.Fanout.Stages)
			}
		}
		o.Flows[i] = fo
	}
	return o
}

// ReadOutline reads the outline of a spec that [Build] accepts (a run's
// spec snapshot) without compiling it. It does not validate: of another
// spec it reads what it can and fails where the shape it reads is missing,
// and it never panics. It is held to Build by a fuzz test.
func ReadOutline(src []byte) (*Outline, error) {
	var d diags
	root := load(src, &d)
	if root == nil {
		return nil, fmt.Errorf("the spec cannot be loaded: %v", d.sorted())
	}
	flows := root.get("flows")
	entry := flows.get("entry")
	if flows == nil || flows.kind != mapNode || entry == nil || entry.kind != stringNode {
		return nil, fmt.Errorf("the spec has no flows.entry")
	}
	o := &Outline{Entry: entry.str}
	for i, k := range flows.keys() {
		if k.str == "entry" {
			continue
		}
		f, err := readFlowOutline(k.str, flows.vals()[i])
		if err != nil {
			return nil, fmt.Errorf("flow %s: %w", k.str, err)
		}
		o.Flows = append(o.Flows, f)
	}
	return o, nil
}

func readFlowOutline(name string, n *node) (*FlowOutline, error) {
	steps := n.get("steps")
	if steps == nil || steps.kind != listNode {
		return nil, fmt.Errorf("no list of steps")
	}
	f := &FlowOutline{Name: name, Steps: make([]StepOutline, len(steps.items()))}
	if b := n.get("budget"); b != nil {
		var err error
		if f.Budget, err = readBudgetOutline(b); err != nil {
			return nil, err
		}
	}
	for i, s := range steps.items() {
		id := s.get("id")
		if id == nil || id.kind != stringNode {
			return nil, fmt.Errorf("step %d has no id", i)
		}
		so := StepOutline{ID: id.str}
		for j := range stepFieldTable {
			fd := &stepFieldTable[j]
			if fd.construct == 0 || s.get(fd.name) == nil {
				continue
			}
			if so.Kind != 0 {
				return nil, fmt.Errorf("step %s has two constructs", id.str)
			}
			so.Kind = fd.construct
		}
		switch so.Kind {
		case 0:
			return nil, fmt.Errorf("step %s has no construct", id.str)
		case KindRun:
			run := s.get("run")
			if run.kind != stringNode {
				return nil, fmt.Errorf("step %s calls no flow by name", id.str)
			}
			so.Run = run.str
		case KindFanout:
			stages := s.get("fanout").get("steps")
			if stages == nil || stages.kind != listNode {
				return nil, fmt.Errorf("fanout %s has no list of stages", id.str)
			}
			so.Stages = len(stages.items())
		}
		f.Steps[i] = so
	}
	return f, nil
}

// readBudgetOutline reads a budget as Build compiles it.
func readBudgetOutline(n *node) (*Budget, error) {
	if n.kind != mapNode {
		return nil, fmt.Errorf("the budget is not a mapping")
	}
	b := &Budget{}
	for i, k := range n.keys() {
		val := n.vals()[i]
		if val.kind != numberNode || math.IsNaN(val.num) || math.IsInf(val.num, 0) || val.num <= 0 {
			return nil, fmt.Errorf("budget.%s is not a number greater than 0", k.str)
		}
		if k.str == "usd" {
			b.USD = val.num
		} else if !b.setCount(k.str, val.num) {
			return nil, fmt.Errorf("budget.%s is not a budget field", k.str)
		}
	}
	return b, nil
}
