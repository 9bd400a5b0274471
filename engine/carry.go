package engine

import (
	"fmt"

	"github.com/stratum-go/stratum/ir"
)

// carryWrite is a staged carry value.
type carryWrite struct {
	carry *ir.Carry
	value any
	// source is the initial source step (nil for input-sourced values).
	source *ir.Step
	epoch  int
}

// materialiseCarry writes initial carry values whose source is available
// (docs/engine.md, "Constructs", carry): all values are staged before any
// is stored, and
// an unresolvable reference fails the run. It reports whether anything
// changed.
func (t *txn) materialiseCarry() bool {
	root := t.rootScope()
	if len(root.flow.Carry) == 0 || !t.running() {
		return false
	}
	var writes []carryWrite
	for _, c := range root.flow.Carry {
		ref := c.Initial
		cur := t.st.Carry[c.Name]
		switch ref.Kind {
		case ir.RefInput:
			if cur != nil {
				continue
			}
			v, ok := ref.Lookup(root.input)
			if !ok {
				t.failRun(&Failure{Reason: fmt.Sprintf("carry_initial_unresolved: carry %q: %s resolves to nothing", c.Name, ref.Text), Cause: CauseCarryUnresolved})
				return true
			}
			writes = append(writes, carryWrite{carry: c, value: v})
		case ir.RefStep:
			src := root.flow.Step(ref.Name)
			ss := root.peek(src)
			if ss == nil || ss.Status != StepSucceeded {
				continue
			}
			if cur != nil && cur.Provenance.SourceEpoch != nil && *cur.Provenance.SourceEpoch == ss.Epoch {
				continue
			}
			v, ok := ref.Lookup(ss.Output.Data)
			if !ss.Output.Present || !ok {
				t.failRun(&Failure{Reason: fmt.Sprintf("carry_initial_unresolved: carry %q: %s resolves to nothing", c.Name, ref.Text), Cause: CauseCarryUnresolved})
				return true
			}
			writes = append(writes, carryWrite{carry: c, value: v, source: src, epoch: ss.Epoch})
		}
	}
	for _, w := range writes {
		t.storeCarry(w, Provenance{Kind: "initial", At: t.now}, "initial")
	}
	return len(writes) > 0
}

func (t *txn) storeCarry(w carryWrite, p Provenance, reason string) {
	stepID := ""
	if w.source != nil {
		p.SourceStep = w.source.ID
		e := w.epoch
		p.SourceEpoch = &e
		stepID = w.source.ID
	}
	if t.st.Carry == nil {
		t.st.Carry = map[string]*CarryEntry{}
	}
	t.st.Carry[w.carry.Name] = &CarryEntry{Value: Some(w.value), Provenance: p}
	t.emit(EventCarryUpdated, stepID, CarryDetail{Name: w.carry.Name, Reason: reason, Provenance: p})
}

// reviseCarry resolves the on_revise values of gate g against the current
// (un-reset) state; any unresolved value refuses the decision.
func (t *txn) reviseCarry(g *ir.Step) ([]carryWrite, error) {
	root := t.rootScope()
	var writes []carryWrite
	for _, c := range root.flow.Carry {
		for _, rv := range c.OnRevise {
			if rv.Gate != g.ID {
				continue
			}
			v, err := t.resolver(root, nil)(rv.Value)
			if err != nil {
				return nil, fmt.Errorf("carry %q on_revise %s: %s resolves to nothing (%v)", c.Name, g.ID, rv.Value.Text, err)
			}
			w := carryWrite{carry: c, value: v}
			// Provenance names the carry's initial source and its epoch.
			if c.Initial.Kind == ir.RefStep {
				w.source = root.flow.Step(c.Initial.Name)
				if ss := root.peek(w.source); ss != nil {
					w.epoch = ss.Epoch
				}
			}
			writes = append(writes, w)
		}
	}
	return writes, nil
}

// writeCarry stores a revise-written value. Its sourceEpoch is the source's
// epoch after the reset (+1), so the next materialisation keeps it until
// the source runs again in a later reset.
func (t *txn) writeCarry(w carryWrite, gate, token string, round int) {
	if w.source != nil && t.sourceInReset(gate, w.source) {
		w.epoch++
	}
	t.storeCarry(w, Provenance{Kind: "revise", Gate: gate, GateToken: token, Round: round, At: t.now}, "revise")
}

// sourceInReset reports whether the gate's revise closure resets step s.
func (t *txn) sourceInReset(gate string, s *ir.Step) bool {
	f := t.rootScope().flow
	g := f.Step(gate)
	for _, i := range f.ResetClosure(f.Step(g.Gate.OnRevise).Index) {
		if i == s.Index {
			return true
		}
	}
	return false
}
