package engine

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stratum-go/stratum/expr"
	"github.com/stratum-go/stratum/ir"
	"github.com/stratum-go/stratum/store"
)

// txn is one transition of one run: the state being changed, the events it
// records, and what must happen after it is durable.
type txn struct {
	ctx    context.Context
	e      *Engine
	st     *runState
	c      *compiled
	now    time.Time
	events []store.NewEvent
	// headSeq is the event log head the transition started from.
	headSeq int64
	// lease is the run's lease when the transition began (lease.go).
	lease *store.Lease
	// engineWork: an engine-dispatched fanout needs driving after commit.
	engineWork bool
	// root and children cache the scopes of the transition.
	root     *scope
	children map[int]*scope
	// result is the response the transition produced.
	result *Response
	// extra carries operation-specific results (commit, usage report...).
	extra any
	// effects are the effects this transition reserved: they run once it
	// is durable, outside the run's lock (see Engine.mutate).
	effects []pendingEffect
	// outside are the outcomes of the work done outside the lock for this
	// transition (judges' verdicts, report checks: see needOutside).
	outside map[outsideKey]any
	// deferrable: the transition runs in Engine.transition, which can do
	// work outside the lock and run it again (see needOutside).
	deferrable bool
	// known, when set, are the dispatch tokens the caller already holds:
	// the call's answer lists only the other ready entries (OnlyNew).
	known map[string]bool
	// fullSweep makes the root scope's next pass consider every step (a
	// new run, a resume, a revert): otherwise a pass considers only the
	// steps a change of this transition can affect (see schedule.go).
	fullSweep bool
}

// pendingEffect is one reserved effect to run after its transition.
type pendingEffect struct {
	stepID string
	token  string
	// evaluate is the command of an evaluate step.
	evaluate *EvaluateRequest
}

func newTxn(ctx context.Context, e *Engine, st *runState, c *compiled) *txn {
	t := &txn{ctx: ctx, e: e, st: st, c: c, now: e.now().UTC()}
	return t
}

// emit records an audit event. stepID is scoped ("wrap/digest",
// "fan/2" are never used: item events carry the fanout step id).
func (t *txn) emit(typ EventType, stepID string, detail any) {
	data := map[string]any{}
	if stepID != "" {
		data["stepId"] = stepID
	}
	if detail != nil {
		data["detail"] = detail
	}
	raw, err := json.Marshal(data)
	if err != nil {
		// Details are built by the engine from model values; a failure
		// here is a programming error, recorded rather than lost.
		raw, _ = json.Marshal(map[string]any{"stepId": stepID, "detail": map[string]any{"encodeError": err.Error()}})
	}
	t.events = append(t.events, store.NewEvent{Type: string(typ), At: t.now, Data: raw})
	t.touched(stepID)
}

func (t *txn) token() string { return t.e.newID() }

// scope is the root flow of a run or the child flow of an active run step.
type scope struct {
	flow   *ir.Flow
	steps  map[string]*stepState
	input  any
	prefix string // "" (root) or "<runStep>/"
	// parent is the run step's state and step (child scopes only).
	parent     *stepState
	parentStep *ir.Step
	// sub is the subState a child scope was built from.
	sub *subState
	// list caches the states read in this transition by step index (a
	// map, not a slice the flow's length: a transition reads few steps).
	list map[int]*stepState
	// cand are the steps a change may have made actionable (root scope
	// only; see schedule.go); full asks the next pass to sweep them all.
	cand candidates
	full bool
	// cold indexes the finished steps not in steps (root scope only);
	// load reads one from the log.
	cold map[string]coldRef
	load func(coldRef) *stepState
}

// loadError stops a transition or a view whose finished step cannot be
// read from the log (the run is corrupt); see decideWith and view.
type loadError struct{ err error }

func (l *loadError) Error() string { return l.err.Error() }

// recoverLoad turns a loadError raised while a read-only view reads the
// run into the view's error: defer recoverLoad(&err).
func recoverLoad(err *error) {
	if r := recover(); r != nil {
		le, ok := r.(*loadError)
		if !ok {
			panic(r)
		}
		*err = le.err
	}
}
func (l *loadError) Unwrap() error { return l.err }

func (sc *scope) root() bool { return sc.parent == nil }

// state returns a step's state, creating its pristine pending state.
func (sc *scope) state(s *ir.Step) *stepState {
	if st := sc.peek(s); st != nil {
		return st
	}
	st := newStepState()
	sc.steps[s.ID] = st
	sc.list[s.Index] = st
	return st
}

// peek returns a step's state, or nil when it is pristine and absent. A
// finished root step is loaded from the log the first time it is read
// (see persist.go).
func (sc *scope) peek(s *ir.Step) *stepState {
	if st := sc.list[s.Index]; st != nil {
		return st
	}
	st := sc.steps[s.ID]
	if st == nil && sc.cold != nil {
		if ref, ok := sc.cold[s.ID]; ok {
			st = sc.load(ref)
			sc.steps[s.ID] = st
		}
	}
	if st != nil {
		sc.list[s.Index] = st
	}
	return st
}

// liveSteps are the scope's steps whose state is live (not a finished
// step indexed in the log), in declaration order: every step that is
// ready, running or waiting is among them, so the scans for what acts or
// waits cost what is live, not the flow's size.
func (sc *scope) liveSteps() []*ir.Step {
	out := make([]*ir.Step, 0, len(sc.steps))
	for id, st := range sc.steps {
		if st.coldSeq != 0 {
			continue // a finished step read from the log
		}
		if s := sc.flow.Step(id); s != nil {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b *ir.Step) int { return a.Index - b.Index })
	return out
}

// statusOf is a step's status without loading a finished step's state.
func (sc *scope) statusOf(s *ir.Step) StepStatus {
	if st := sc.list[s.Index]; st != nil {
		return st.Status
	}
	if st := sc.steps[s.ID]; st != nil {
		return st.Status
	}
	if ref, ok := sc.cold[s.ID]; ok {
		if ref.Status != "" {
			return ref.Status
		}
		return sc.peek(s).Status // an index of the first format: no status
	}
	return StepPending
}

// peekID is peek by step id.
func (sc *scope) peekID(id string) *stepState {
	if s := sc.flow.Step(id); s != nil {
		return sc.peek(s)
	}
	return nil
}

// scoped is a step's id as the run's callers see it.
func (sc *scope) scoped(id string) string { return sc.prefix + id }

// rootScope is the run's root scope (cached for the transition; revert
// drops the cache when it replaces the step states).
func (t *txn) rootScope() *scope {
	if t.root == nil {
		f := t.c.plan.Flow(t.st.FlowName)
		t.root = &scope{flow: f, steps: t.st.Steps, input: t.st.Input.Data, list: map[int]*stepState{}, full: t.fullSweep,
			cold: t.st.cold, load: func(ref coldRef) *stepState {
				ss, err := t.e.coldState(t.ctx, t.st.ID, ref)
				if err != nil {
					panic(&loadError{err})
				}
				return ss
			}}
		t.children = map[int]*scope{}
	}
	return t.root
}

// childScope is the scope of an active run step (nil when it has none).
func (t *txn) childScope(root *scope, s *ir.Step) *scope {
	st := root.state(s)
	if st.Sub == nil {
		return nil
	}
	if c := t.children[s.Index]; c != nil && c.parent == st && c.sub == st.Sub {
		return c
	}
	if st.Sub.Steps == nil {
		st.Sub.Steps = map[string]*stepState{}
	}
	f := t.c.plan.Flow(s.Run)
	c := &scope{flow: f, steps: st.Sub.Steps, input: st.Sub.Input.Data,
		prefix: s.ID + "/", parent: st, parentStep: s, sub: st.Sub, list: map[int]*stepState{}}
	t.children[s.Index] = c
	return c
}

// outputs is the `result` binding of when/set: the outputs of the scope's
// steps that have one, in declaration order.
func (sc *scope) outputs() *expr.Object {
	o := expr.NewObject(len(sc.flow.Steps))
	for _, s := range sc.flow.Steps {
		if st := sc.peek(s); st != nil && st.Status == StepSucceeded && st.Output.Present {
			o.Set(s.ID, st.Output.Data)
		}
	}
	return o
}

// locate resolves a caller's step id: a root step, "<runStep>/<child>", or
// "<fanoutStep>/<index>".
type located struct {
	sc    *scope
	step  *ir.Step
	item  *itemState // consumer fanout item
	index int
}

func (t *txn) locate(id string) (located, bool) {
	root := t.rootScope()
	head, rest, nested := strings.Cut(id, "/")
	s := root.flow.Step(head)
	if s == nil {
		return located{}, false
	}
	if !nested {
		return located{sc: root, step: s}, true
	}
	switch s.Kind {
	case ir.KindRun:
		child := t.childScope(root, s)
		if child == nil {
			return located{}, false
		}
		cs := child.flow.Step(rest)
		if cs == nil {
			return located{}, false
		}
		return located{sc: child, step: cs}, true
	case ir.KindFanout:
		st := root.state(s)
		if st.Fanout == nil {
			return located{}, false
		}
		// rest is the item's index in canonical form ("07" is not item 7).
		i, err := strconv.Atoi(rest)
		if err != nil || i < 0 || i >= len(st.Fanout.Items) || itoa(i) != rest {
			return located{}, false
		}
		if it := st.Fanout.Items[i]; it.Index == i {
			return located{sc: root, step: s, item: it, index: i}, true
		}
	}
	return located{}, false
}

// resetNested reports whether id names a child task or item inside a run
// step or fanout that a revise reset dropped (so it was issued in an
// earlier round): a report for it is stale, not merely unknown.
func (t *txn) resetNested(id string) bool {
	root := t.rootScope()
	head, rest, nested := strings.Cut(id, "/")
	s := root.flow.Step(head)
	if !nested || s == nil {
		return false
	}
	st := root.peek(s)
	if st == nil || st.Epoch == 0 {
		return false
	}
	switch s.Kind {
	case ir.KindRun:
		return st.Sub == nil && t.c.plan.Flow(s.Run).Step(rest) != nil
	case ir.KindFanout:
		_, err := strconv.Atoi(rest)
		return st.Fanout == nil && err == nil
	}
	return false
}

func absClean(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	return filepath.Clean(abs), nil
}
