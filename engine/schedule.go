package engine

import (
	"container/heap"
	"fmt"
	"strings"

	"github.com/stratum-go/stratum/ir"
)

// Incremental scheduling (docs/engine.md, "Cost"). A transition starts
// from a settled run: every step that could act did so at the end of the
// previous transition. So the only steps that can act now are those a
// change of this transition can affect, and every change records an event
// about its step (txn.emit): the step itself (a retry makes it pending
// again), the steps that depend on it, and the targets of its routes
// (on_fail, a gate's routes; a route-only target is decided when its
// routers are). Those are the root scope's candidates, and a pass
// considers only them, in declaration order, exactly as a full sweep
// would visit them: a candidate ahead of the one being considered is
// considered in the same sweep, one behind it in the next. A pass thus
// costs what changed, not the size of the flow. A new run, a resume and a
// revert (every state replaced) sweep every step once; a subflow, small,
// is always swept whole.

// candidates is a set of step indexes taken in ascending order.
type candidates struct {
	in   map[int]bool // by step index (a map: a transition touches few steps of a long flow)
	heap intHeap
	// behind holds candidates at or before the cursor of the sweep in
	// progress: they wait for the next sweep.
	behind []int
	cursor int // index being considered; -1 between sweeps
	active bool
}

func (c *candidates) add(i int) {
	if i < 0 {
		return
	}
	if c.in == nil {
		c.cursor = -1
		c.in = map[int]bool{}
	}
	if c.in[i] {
		return
	}
	c.in[i] = true
	if c.active && i <= c.cursor {
		c.behind = append(c.behind, i)
		return
	}
	heap.Push(&c.heap, i)
}

// next takes the smallest candidate of the sweep in progress.
func (c *candidates) next() (int, bool) {
	if c.heap.Len() == 0 {
		return 0, false
	}
	i := heap.Pop(&c.heap).(int)
	delete(c.in, i)
	c.cursor = i
	return i, true
}

// nextSweep starts the next sweep with the candidates left behind.
func (c *candidates) nextSweep() bool {
	c.cursor = -1
	for _, i := range c.behind {
		heap.Push(&c.heap, i)
	}
	c.behind = c.behind[:0]
	return c.heap.Len() > 0
}

type intHeap []int

func (h intHeap) Len() int           { return len(h) }
func (h intHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h intHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *intHeap) Push(x any)        { *h = append(*h, x.(int)) }
func (h *intHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// touched records that a step changed (an event was emitted about it):
// the step, its dependents and its route targets become candidates of the
// root scope. Subflow steps need nothing (subflows are swept whole); the
// run step whose subflow changed is settled by advance.
func (t *txn) touched(stepID string) {
	if t.root == nil || stepID == "" {
		return
	}
	head, _, nested := strings.Cut(stepID, "/")
	sc := t.root
	s := sc.flow.Step(head)
	if s == nil {
		return
	}
	sc.cand.add(s.Index)
	if nested {
		return // a subflow's step or a fanout's item: the run step or fanout itself acts
	}
	for _, d := range s.Dependents {
		sc.cand.add(d)
	}
	for _, target := range routeTargets(s) {
		if ts := sc.flow.Step(target); ts != nil {
			sc.cand.add(ts.Index)
		}
	}
}

// routeTargets are the steps a step may route to.
func routeTargets(s *ir.Step) []string {
	var out []string
	if s.OnFail != "" {
		out = append(out, s.OnFail)
	}
	if s.Gate != nil {
		for _, r := range []string{s.Gate.OnApprove, s.Gate.OnRevise, s.Gate.OnKill} {
			if r != "" {
				out = append(out, r)
			}
		}
	}
	return out
}

// passCandidates is pass over the root scope's candidates only.
func (t *txn) passCandidates(sc *scope) bool {
	any := false
	c := &sc.cand
	c.active = true
	defer func() { c.active = false; c.cursor = -1 }()
	for sweep := 0; t.scopeLive(sc); sweep++ {
		if sweep >= maxAdvanceRounds {
			t.failRun(&Failure{Reason: "internal error: scheduling did not settle", Cause: CauseInternal})
			return true
		}
		for t.scopeLive(sc) {
			i, ok := c.next()
			if !ok {
				break
			}
			if t.step(sc, sc.flow.Steps[i]) {
				any = true
			}
		}
		if !c.nextSweep() {
			break
		}
	}
	return any
}

// checkSettled (tests: Engine.verifyWrites) fails when a root step could
// still act after advance: a change that did not make its step a
// candidate, which would leave the run waiting on nothing.
func (t *txn) checkSettled() error {
	if !t.running() {
		return nil
	}
	root := t.rootScope()
	for _, s := range root.flow.Steps {
		status := root.statusOf(s)
		var st *stepState
		if !status.Terminal() {
			st = root.peek(s)
		}
		switch {
		case status == StepPending && s.RouteOnly() && (st == nil || st.Routed == nil):
			done := true
			for _, ri := range s.RoutedFrom {
				if !root.statusOf(root.flow.Steps[ri]).Terminal() {
					done = false
				}
			}
			if done {
				return fmt.Errorf("scheduler missed %q: every router finished", s.ID)
			}
		case status == StepRunning && s.Kind == ir.KindFanout && st.Fanout != nil:
			items, pending, active := len(st.Fanout.Items), 0, 0
			terminal := 0
			for _, it := range st.Fanout.Items {
				switch {
				case it.Status == StepPending:
					pending++
				case it.Status.Terminal():
					terminal++
				default:
					active++
				}
			}
			if consumerFanout(s) && pending > 0 && active < s.Fanout.Concurrency {
				return fmt.Errorf("scheduler missed fanout %q: an item can be promoted", s.ID)
			}
			if terminal == items && !(requireMet(s, st) && mergeNext(s, st) >= 0) {
				return fmt.Errorf("scheduler missed fanout %q: every item finished", s.ID)
			}
		case status == StepPending:
			ready := true
			for _, di := range s.Deps {
				if !root.statusOf(root.flow.Steps[di]).Terminal() {
					ready = false
				}
			}
			if ready {
				return fmt.Errorf("scheduler missed %q: every dependency finished", s.ID)
			}
		}
	}
	return nil
}
