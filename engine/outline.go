package engine

import (
	"context"
	"fmt"

	"github.com/stratum-go/stratum/ir"
	"github.com/stratum-go/stratum/store"
)

// Reading a run's record needs of its plan only the outline: the steps of
// each flow in order, their kinds, the flows run steps call and the flow
// budgets (docs/engine.md, "Cancel, audit, poll"). Compiling a long spec
// takes several times the memory and time of reading its outline, and an
// audit compiled it only to list the steps.

// outline is the plan's outline, made once per compiled plan.
func (c *compiled) outline() *ir.Outline {
	c.outlineOnce.Do(func() { c.outlineOf = c.plan.Outline() })
	return c.outlineOf
}

// loadOutline is load for a reader of the record: the run's state and its
// plan's outline, from the plan when this process has compiled it and else
// read from the spec snapshot without compiling it. It checks the state
// against the outline as load checks it against the plan, as far as an
// audit reads it.
func (e *Engine) loadOutline(ctx context.Context, runID string) (*runState, *ir.Outline, store.Head, error) {
	if err := store.ValidateRunID(runID); err != nil {
		return nil, nil, store.Head{}, newErr(ErrRunNotFound, runID, "run %q not found: %v", runID, err)
	}
	snap, err := e.store.Load(ctx, runID)
	if err != nil {
		return nil, nil, store.Head{}, mapStoreErr(runID, err)
	}
	st, err := e.decodeRunState(ctx, snap, false)
	var o *ir.Outline
	if err == nil {
		o, err = e.outlineFor(ctx, st)
	}
	if err == nil {
		err = checkOutlineState(o, st)
	}
	if err != nil {
		return nil, nil, store.Head{}, mapStoreErr(runID, err)
	}
	return st, o, snap.Head, nil
}

// outlineFor is the outline of a decoded run's plan.
func (e *Engine) outlineFor(ctx context.Context, st *runState) (*ir.Outline, error) {
	e.mu.Lock()
	c, ok := e.plans[st.RevisionDigest]
	e.mu.Unlock()
	if ok {
		return c.outline(), nil
	}
	raw, err := e.blob(ctx, st.ID, st.SpecSeq)
	if err != nil {
		return nil, err
	}
	// Escaped again on reading, as compileSnapshot does.
	o, err := ir.ReadOutline(yamlSafeJSON(raw))
	if err != nil {
		return nil, fmt.Errorf("%w: run %s: persisted run contains an invalid spec: %v", ErrCorrupt, st.ID, err)
	}
	return o, nil
}

// checkOutlineState verifies that a decoded run fits its plan's outline
// (a reader of the record): the checks of checkStateSteps, with the entry
// flow's steps found through a map made once.
func checkOutlineState(o *ir.Outline, st *runState) error {
	f := o.Flow(st.FlowName)
	kinds := make(map[string]ir.StepOutline, len(st.Steps))
	if f != nil && len(st.Steps) > 0 {
		for _, s := range f.Steps {
			if _, ok := st.Steps[s.ID]; ok {
				kinds[s.ID] = s
			}
		}
	}
	return checkStateSteps(o, f, st, func(id string) (ir.StepOutline, bool) {
		s, ok := kinds[id]
		return s, ok
	})
}

// checkStateSteps verifies that a decoded run fits its plan (or the
// plan's outline), so that a damaged or hand-edited state document is
// reported as corrupt instead of crashing the scheduler or an audit: the
// entry flow exists (f, the flow the state names), every step state is
// present, subflow state only on run steps that call a flow of the spec,
// fanout items only on fanout steps, in order and at a stage the fanout
// has. step finds a step of f by id; the check costs the run's live
// steps, not the flow's.
func checkStateSteps(o *ir.Outline, f *ir.FlowOutline, st *runState, step func(id string) (ir.StepOutline, bool)) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: run %s: %s", ErrCorrupt, st.ID, fmt.Sprintf(format, args...))
	}
	if f == nil || f != o.EntryFlow() {
		return bad("the state names flow %q, which is not the entry flow of its spec", st.FlowName)
	}
	for id, ss := range st.Steps {
		if ss == nil {
			return bad("step %q has no state", id)
		}
		s, ok := step(id)
		if !ok {
			continue // not read by anything
		}
		if ss.Sub != nil {
			if s.Kind != ir.KindRun || o.Flow(s.Run) == nil {
				return bad("step %q is not a run step but has subflow state", id)
			}
			for cid, cs := range ss.Sub.Steps {
				if cs == nil {
					return bad("step %q has no state", s.ID+"/"+cid)
				}
			}
		}
		if ss.Fanout != nil {
			if s.Kind != ir.KindFanout {
				return bad("step %q is not a fanout but has fanout items", id)
			}
			for i, it := range ss.Fanout.Items {
				if it == nil || it.Index != i || it.Stage < 0 || it.Stage >= s.Stages {
					return bad("fanout %q item %d is malformed", id, i)
				}
			}
		}
	}
	return nil
}
