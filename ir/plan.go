package ir

import (
	"encoding/json"
	"strings"
)

// Plan is a validated, compiled spec: what the engine runs. A Plan is
// immutable once Build returns it: its slices and pointed-to values are
// shared and must not be modified by callers.
type Plan struct {
	// Version is the spec language version (always 1).
	Version int
	// Contracts are the declared contracts in declaration order.
	Contracts []*Contract
	// Entry is the name of the flow a run starts.
	Entry string
	// Flows are the declared flows in declaration order.
	Flows []*Flow
	// Expressions is the number of distinct expressions in the spec
	// (when, ensure, set, iterate and stage conditions, and the
	// expressions literal file checks stand for), and ExpressionBytes
	// their total length: what a holder compiling each once (the engine,
	// per plan) sizes its memory by.
	Expressions, ExpressionBytes int
	// PatternStates is the size, in states, of the literal regex patterns
	// of those expressions ([expr.Program.PatternStates]): each compiles
	// at its first evaluation and is kept.
	PatternStates int

	contracts map[string]*Contract
	flows     map[string]*Flow
}

// Contract returns the declared contract called name, or nil.
func (p *Plan) Contract(name string) *Contract { return p.contracts[name] }

// Flow returns the declared flow called name, or nil.
func (p *Plan) Flow(name string) *Flow { return p.flows[name] }

// EntryFlow returns the flow named by flows.entry.
func (p *Plan) EntryFlow() *Flow { return p.flows[p.Entry] }

// Flow is one compiled flow: a DAG of steps.
type Flow struct {
	Name string
	// IsEntry is set on the flow named by flows.entry.
	IsEntry bool
	// Input is the flow's input declaration as an anonymous contract
	// (Name ""); Input.Validate(v, "input") checks a run's input.
	Input *Contract
	// Output says which step output is the flow's result and its contract.
	Output Output
	// Budget is the flow-level budget, or nil.
	Budget *Budget
	// MaxRounds is the flow-level revise limit; 0 when not declared.
	MaxRounds int
	// Carry lists the loop-carried variables (entry flow only).
	Carry []*Carry
	// Steps are in declaration order; Step.Index is the position here.
	Steps []*Step
	// Order is a topological order of Steps (indices) over dependency and
	// routing edges; among steps that are free at the same time,
	// declaration order wins.
	Order []int

	byID map[string]int
}

// Step returns the step with the given id, or nil.
func (f *Flow) Step(id string) *Step {
	i, ok := f.byID[id]
	if !ok {
		return nil
	}
	return f.Steps[i]
}

// Output is a flow's output declaration.
type Output struct {
	// From is the full-value step reference that supplies the result.
	From *Ref
	// ContractName and Contract are the declared output contract.
	ContractName string
	Contract     *Contract
}

// Budget is a resource limit. A zero field is not limited (declared values
// are always positive).
type Budget struct {
	USD        float64
	Tokens     int64
	Dispatches int64
	MS         int64
}

// StepKind is a step's construct.
type StepKind uint8

// The six step constructs.
const (
	KindDo StepKind = iota + 1
	KindSet
	KindGate
	KindFanout
	KindRun
	KindEvaluate
)

func (k StepKind) String() string {
	switch k {
	case KindDo:
		return "do"
	case KindSet:
		return "set"
	case KindGate:
		return "gate"
	case KindFanout:
		return "fanout"
	case KindRun:
		return "run"
	case KindEvaluate:
		return "evaluate"
	}
	return "unknown"
}

// DefaultAttempts is the attempts limit of a do or fanout step that
// declares none.
const DefaultAttempts = 2

// Agent is the agent a do step or fanout stage names. The types of the
// enum-like fields below are strings underneath, so comparisons with
// string constants ("claude", "worktree") keep compiling.
type Agent string

// The agents a spec may name.
const (
	AgentClaude Agent = "claude"
	AgentCodex  Agent = "codex"
)

// DefaultAgent is the agent of a do step or stage that names none. It is an
// untyped constant, usable as a string or an Agent.
const DefaultAgent = "claude"

// Stakes is how much a judged predicate's verdict matters.
type Stakes string

// The stakes of a judged predicate.
const (
	StakesCheap    Stakes = "cheap"
	StakesDefault  Stakes = "default"
	StakesParanoid Stakes = "paranoid"
)

// Isolation is where a fanout's items work.
type Isolation string

// The isolations of a fanout.
const (
	// IsolationWorktree gives each item its own git worktree, merged
	// afterwards.
	IsolationWorktree Isolation = "worktree"
	// IsolationNone runs every item in the workspace itself.
	IsolationNone Isolation = "none"
)

// Dispatch is who runs a fanout's items.
type Dispatch string

// The dispatches of a fanout.
const (
	// DispatchEngine: the engine runs the items itself (the default).
	DispatchEngine Dispatch = "engine"
	// DispatchConsumer: the items are handed to the MCP client as ready
	// entries.
	DispatchConsumer Dispatch = "consumer"
)

// Merge is how a worktree fanout's results are merged.
type Merge string

// MergeSequential merges the items' worktrees one after the other, the only
// strategy of v1.
const MergeSequential Merge = "sequential"

// Step is one compiled step. Fields of constructs the step does not use
// are zero.
type Step struct {
	// Index is the step's position in Flow.Steps.
	Index int
	ID    string
	Kind  StepKind
	// After lists the declared ordering dependencies.
	After []string
	// When is the step's condition expression; HasWhen tells an absent
	// condition from an empty one.
	When    string
	HasWhen bool

	// Do is the task text of a do step.
	Do *Template
	// Agent is the declared agent (AgentClaude or AgentCodex); "" means
	// DefaultAgent.
	Agent Agent
	// Out is the declared output contract name (do, set, evaluate).
	Out string
	// OutContract is the contract later references read: Out's contract,
	// a fanout's last stage contract (per element), or a run step's callee
	// output contract. Nil when the step has none.
	OutContract *Contract
	// Ensure are the postconditions, in order.
	Ensure []Ensure
	// Attempts is the declared attempts limit; 0 means DefaultAttempts.
	Attempts int
	Iterate  *Iterate
	Budget   *Budget
	// OnFail names the recovery step; "" when none.
	OnFail string
	// Idempotent says a do step may be attempted again at once when an
	// attempt was interrupted (its process died mid-attempt) rather than
	// wait for a person to decide (docs/engine.md, "Interrupted attempts").
	Idempotent bool
	// Set holds a set step's fields in declaration order.
	Set    []SetField
	Gate   *Gate
	Fanout *Fanout
	// Run names the called flow of a run step; With is its argument
	// mapping, every string a template.
	Run      string
	With     *Value
	Evaluate *Evaluate

	// Deps are the dependency predecessors (After plus steps whose output
	// this step references), as ascending indices into Flow.Steps.
	Deps []int
	// Dependents are the steps that depend on this one, ascending.
	Dependents []int
	// RoutedFrom lists steps that may route here (on_fail, a gate's
	// on_approve or on_kill), ascending. A step with routers is
	// route-only: dormant until routed to, skipped if never routed.
	RoutedFrom []int
	// Sites are the ${...} references of the step, in scanning order.
	Sites []Site
}

// RouteOnly reports whether the step runs only when routed to.
func (s *Step) RouteOnly() bool { return len(s.RoutedFrom) > 0 }

// Site is one string of a step scanned for ${...} references.
type Site struct {
	path         loc
	Line, Column int
	// Expression is set for expression strings (when, set values,
	// iterate.until, ensure expr), which are evaluated, not rendered.
	Expression bool
	// Stage is the fanout stage index for stage strings, else -1.
	Stage    int
	Template *Template
}

// Path is the string's location: "flows.main.steps[2].do". It is built on
// demand (a spec can hold very many sites in deeply nested with values).
func (s *Site) Path() string { return s.path.String() }

// EnsureKind is the kind of an ensure predicate.
type EnsureKind uint8

// Ensure predicate kinds.
const (
	EnsureExpr EnsureKind = iota + 1
	EnsureFileExists
	EnsureFileContains
	EnsureJudged
)

// Ensure is one postcondition.
type Ensure struct {
	Kind EnsureKind
	// Expr is the expression of an EnsureExpr.
	Expr string
	// Path and Text are the file predicate's arguments as written (with
	// any ${...}); Expression is what reads them.
	Path string
	Text string
	// Statement and Stakes are the judged predicate's fields.
	Statement string
	Stakes    Stakes

	// interpolated is the expression of a file predicate whose Path or
	// Text holds ${...} references (set by validation).
	interpolated string
}

// Expression returns the expression the predicate evaluates: Expr itself,
// or for a file predicate file_exists("P") / file_contains("P", "T") with
// JSON-quoted arguments. A file predicate with ${...} references reads them
// instead of taking them literally: file_exists: "${input.f}" is
// file_exists(input.f), file_contains: {path: "out/${item}.txt", text: T}
// is file_contains("out/" + str(item) + ".txt", "T") (docs/spec-language.md,
// "Ensure predicates"). Judged predicates have none.
func (e Ensure) Expression() string {
	if e.interpolated != "" {
		return e.interpolated
	}
	switch e.Kind {
	case EnsureExpr:
		return e.Expr
	case EnsureFileExists:
		return "file_exists(" + jsonQuote(e.Path) + ")"
	case EnsureFileContains:
		return "file_contains(" + jsonQuote(e.Path) + ", " + jsonQuote(e.Text) + ")"
	}
	return ""
}

func jsonQuote(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

// Iterate repeats a do step until Until holds, at most Max times.
type Iterate struct {
	Max   int
	Until string
}

// SetField is one field of a set step: Name = value of Expr.
type SetField struct {
	Name string
	Expr string
}

// Gate is a gate step's routing. A route "" is null.
type Gate struct {
	OnApprove string
	OnRevise  string
	OnKill    string
	// MaxRounds is the gate's own revise limit; 0 when not declared.
	MaxRounds int
}

// Fanout runs stages over each item of an array.
type Fanout struct {
	// Over is the single full-value reference to the array.
	Over        *Template
	Stages      []*Stage
	Concurrency int
	Isolation   Isolation
	Require     Require
	Merge       Merge
	PreMerge    []string
	// Dispatch is DispatchEngine (the default, filled in) or
	// DispatchConsumer.
	Dispatch Dispatch
}

// Require is how many items must succeed: all, any, or at least Count.
type Require struct {
	All, Any bool
	Count    int
}

// Stage is one fanout stage.
type Stage struct {
	Index       int
	Do          *Template
	Agent       Agent
	Out         string
	OutContract *Contract
	Ensure      []Ensure
	// Attempts overrides the fanout step's attempts; 0 when not declared.
	Attempts int
	When     string
	HasWhen  bool
}

// Evaluate runs a command that returns a verdict.
type Evaluate struct {
	Command   string
	In        *Template // nil when absent
	TimeoutMS int
}

// Carry is a loop-carried variable of the entry flow.
type Carry struct {
	Name string
	// Initial is the full-value reference of the initial value.
	Initial *Ref
	// OnRevise rewrites the variable when a gate resolves with revise.
	OnRevise []CarryRevise
	// Consumers are the steps that read the variable, ascending.
	Consumers []int
}

// CarryRevise is one on_revise entry of a carry variable.
type CarryRevise struct {
	Gate  string
	Value *Ref
}

// ValueKind is the kind of a with Value.
type ValueKind uint8

// Value kinds.
const (
	ValueNull ValueKind = iota
	ValueBool
	ValueNumber
	ValueString
	ValueList
	ValueObject
)

// Value is a literal JSON value of a run step's with mapping in which every
// string is a template.
type Value struct {
	Kind   ValueKind
	Bool   bool
	Number float64
	String *Template
	Items  []*Value
	// Keys and Fields hold an object's entries in order.
	Keys   []string
	Fields []*Value
}

// ResetClosure returns the revise reset closure of the step at index
// target (docs/spec-language.md, "How validation proceeds"; docs/engine.md, "Gates"): the target and every step
// reachable from it over dependency edges (after, ${...} references) and
// routing edges (on_fail, gate on_approve and on_kill; revise edges are not
// followed), as ascending step indexes. It is computed on each call, in time
// linear in the flow, rather than stored per gate: a spec with many gates
// revising to different steps would otherwise cost quadratic time and
// memory to compile.
func (f *Flow) ResetClosure(target int) []int {
	if target < 0 || target >= len(f.Steps) {
		return nil
	}
	seen := make([]bool, len(f.Steps))
	seen[target] = true
	stack := []int{target}
	visit := func(i int) {
		if !seen[i] {
			seen[i] = true
			stack = append(stack, i)
		}
	}
	visitID := func(id string) {
		if i, ok := f.byID[id]; ok && id != "" {
			visit(i)
		}
	}
	for len(stack) > 0 {
		s := f.Steps[stack[len(stack)-1]]
		stack = stack[:len(stack)-1]
		for _, d := range s.Dependents {
			visit(d)
		}
		visitID(s.OnFail)
		if s.Gate != nil {
			visitID(s.Gate.OnApprove)
			visitID(s.Gate.OnKill)
		}
	}
	var out []int
	for i, in := range seen {
		if in {
			out = append(out, i)
		}
	}
	return out
}
