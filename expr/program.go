package expr

import (
	"context"
	"fmt"

	"github.com/stratum-go/stratum/expr/internal/jsregex"
)

// binding identifies one of the four names an expression can read.
type binding int8

const (
	bindNone binding = iota - 1
	bindResult
	bindInput
	bindItem
	bindPrev
)

var bindingNames = [...]string{bindResult: "result", bindInput: "input", bindItem: "item", bindPrev: "prev"}

type bindState uint8

const (
	unbound bindState = iota
	boundValue
	boundAbsent
)

// Binding is the value of one name for an evaluation. The zero Binding is
// "not bound": reading the name is an unknown_identifier error. Make one
// with Bind or BindAbsent.
type Binding struct {
	v     any
	state bindState
}

// Bind binds a name to v, a value of the JSON model (nil, bool, float64,
// string, []any, *Object). nil is JSON null, a bound value.
func Bind(v any) Binding { return Binding{v: v, state: boundValue} }

// BindAbsent binds a name without a value, as prev is in the first stage of
// a fanout: the name exists, but reading it is a type_error.
func BindAbsent() Binding { return Binding{state: boundAbsent} }

// Bound reports whether the name is bound (with or without a value).
func (b Binding) Bound() bool { return b.state != unbound }

// Value returns the bound value, and false when there is none.
func (b Binding) Value() (any, bool) { return b.v, b.state == boundValue }

// Bindings are the names an evaluation can read (docs/expressions.md,
// "Names"). Which
// are bound depends on the context: result and input for step ensures,
// plus item and prev in fanout stages.
type Bindings struct {
	Result, Input, Item, Prev Binding
}

func (b Bindings) get(slot binding) Binding {
	switch slot {
	case bindResult:
		return b.Result
	case bindInput:
		return b.Input
	case bindItem:
		return b.Item
	case bindPrev:
		return b.Prev
	}
	return Binding{}
}

// BindingsFromObject builds Bindings from a JSON object whose keys are among
// result, input, item and prev (the form `stratum eval --bindings` and the
// conformance corpus use). A key present with null binds null.
func BindingsFromObject(o *Object) (Bindings, error) {
	var b Bindings
	for _, k := range o.Keys() {
		v, _ := o.Get(k)
		switch k {
		case "result":
			b.Result = Bind(v)
		case "input":
			b.Input = Bind(v)
		case "item":
			b.Item = Bind(v)
		case "prev":
			b.Prev = Bind(v)
		default:
			return Bindings{}, fmt.Errorf("bindings: unknown name %q (only result, input, item and prev can be bound)", k)
		}
	}
	return b, nil
}

// EvalOptions configure one evaluation. A nil *EvalOptions means defaults.
type EvalOptions struct {
	// WorkspaceRoot is the directory file_exists and file_contains are
	// jailed to. Empty means none: every file function call fails with a
	// validation_error, as in step `when` and `set` contexts.
	WorkspaceRoot string
	// WorkspaceAnchor, when not empty, is the real path (no symbolic link
	// in it) of the allowed directory the workspace root was admitted
	// under; the root's real path lay inside it when it was admitted. The root is then opened through an [os.Root] of the
	// anchor, so a root renamed and replaced after it was admitted — by a
	// symbolic link out, say — is refused instead of read (docs/policy.md,
	// "The workspace jail").
	WorkspaceAnchor string
	// Budget, when not nil, is the work budget this evaluation shares with
	// others (the ensures of one step, say); nil gives the evaluation a
	// budget of DefaultBudget of its own. See [Budget].
	Budget *Budget
}

// Program is a compiled expression. It is immutable and safe for
// concurrent use by any number of goroutines.
type Program struct {
	src       string
	root      *node
	usesFiles bool
}

// Compile parses src and prepares it for evaluation. It fails with a
// *Error whose code is parse_error, or resource_limit when the source nests
// deeper than MaxDepth or has more than MaxNodes syntax nodes. Names are
// not checked here: an unknown identifier or function is an evaluation
// error, reported only if evaluation reaches it.
func Compile(src string) (*Program, error) {
	root, err := parse(src)
	if err != nil {
		return nil, err
	}
	p := &Program{src: src, root: root}
	p.usesFiles = resolve(root)
	return p, nil
}

// Source returns the text the program was compiled from.
func (p *Program) Source() string { return p.src }

// UsesFileFunctions reports whether the expression calls file_exists or
// file_contains anywhere (reachable or not).
func (p *Program) UsesFileFunctions() bool { return p.usesFiles }

// PatternStates is the size, in states, of the literal patterns of the
// program's matches() calls that will compile (those the length limit and
// the shape filter admit): each compiles at its first evaluation and is
// then kept by the program, about 50 bytes a state, so it is what a holder
// of programs sizes their memory by before any is evaluated. It translates
// the patterns (without compiling them) at each call.
func (p *Program) PatternStates() int {
	n := 0
	var walk func(nd *node)
	walk = func(nd *node) {
		if nd == nil {
			return
		}
		if pc := nd.re; pc != nil && pc.units <= MaxPatternLength && jsregex.Shape(pc.pattern) == nil {
			if states, err := jsregex.States(pc.pattern, MaxMatchInput); err == nil {
				n += states
			}
		}
		walk(nd.x)
		walk(nd.y)
		for _, a := range nd.args {
			walk(a)
		}
	}
	walk(p.root)
	return n
}

// Eval evaluates the program in value mode and returns its JSON value,
// which may share structure with the bindings (do not modify it). Failures
// are *Error values; see EvalContext for cancellation.
func (p *Program) Eval(b Bindings, opts *EvalOptions) (any, error) {
	return p.EvalContext(context.Background(), b, opts)
}

// EvalContext is Eval with a context: a cancelled or expired ctx stops the
// evaluation with a resource_limit *Error that wraps ctx.Err().
func (p *Program) EvalContext(ctx context.Context, b Bindings, opts *EvalOptions) (any, error) {
	v, err := p.run(ctx, b, opts, nil)
	if err != nil {
		return nil, err
	}
	return v, nil
}

// run evaluates the program; trace, when not nil, receives the file checks.
func (p *Program) run(ctx context.Context, b Bindings, opts *EvalOptions, trace *Trace) (any, *Error) {
	v, _, err := p.runStats(ctx, b, opts, trace)
	return v, err
}

// evalStats is what an evaluation counted, for tests.
type evalStats struct {
	nodes int // syntax nodes evaluated
	work  int // units of work charged
}

func (p *Program) runStats(ctx context.Context, b Bindings, opts *EvalOptions, trace *Trace) (any, evalStats, *Error) {
	ev := evaluator{ctx: ctx, done: ctx.Done(), b: b, trace: trace}
	var budget *Budget
	if opts != nil {
		ev.root, ev.anchor = opts.WorkspaceRoot, opts.WorkspaceAnchor
		budget = opts.Budget
	}
	var v any
	err := ev.startBudget(budget)
	if err == nil {
		v, err = ev.eval(p.root)
	}
	if ferr := ev.finishBudget(); err == nil && ferr != nil {
		v, err = nil, ferr
	}
	return v, evalStats{nodes: ev.nodes, work: ev.total + ev.work}, err
}

// EvalPredicate evaluates the program as a predicate (ensure expressions,
// iterate.until): the result must be a boolean, else it fails with the
// type_error "predicate must evaluate to boolean, received <type>". See
// [Program.EvalPredicateTrace] for what a failed file predicate looked up.
func (p *Program) EvalPredicate(ctx context.Context, b Bindings, opts *EvalOptions) (bool, error) {
	v, err := p.run(ctx, b, opts, nil)
	if err != nil {
		return false, err
	}
	t, perr := predicate(v)
	if perr != nil {
		return false, perr
	}
	return t, nil
}

func predicate(v any) (bool, *Error) {
	t, ok := v.(bool)
	if !ok {
		return false, typeErrorf("predicate must evaluate to boolean, received " + typeName(v))
	}
	return t, nil
}

// Evaluate compiles and evaluates src in one call, for one-off uses.
// Callers that evaluate an expression repeatedly should Compile once.
func Evaluate(ctx context.Context, src string, b Bindings, opts *EvalOptions) (any, error) {
	p, err := Compile(src)
	if err != nil {
		return nil, err
	}
	return p.EvalContext(ctx, b, opts)
}
