package engine

import (
	"slices"
	"sort"
	"sync"

	"github.com/stratum-go/stratum/expr"
	"github.com/stratum-go/stratum/ir"
)

// compiled is an ir.Plan plus what the engine derives from it once and
// shares between runs of the same spec revision: reachability sets,
// compiled expressions and contract field maps and digests. It is safe for concurrent
// use.
type compiled struct {
	plan   *ir.Plan
	digest string
	// specJSON is the ordered JSON snapshot persisted with each run.
	specJSON []byte

	mu    sync.Mutex
	reach map[*ir.Step][]uint64 // forward closure over dependency + routing edges, a bit per step
	progs map[string]progOrErr
	// contracts are the step contracts' descriptors that are kept, digests
	// the digests of the others, and fields each contract's field map,
	// shared by the descriptors that include it (contract).
	contracts map[string]*Contract
	digests   map[string]string
	fields    map[string]map[string]string

	outlineOnce sync.Once
	outlineOf   *ir.Outline

	// estimate is what the plan cache counts for it (heapEstimate).
	estimate int
}

type progOrErr struct {
	p   *expr.Program
	err error
}

func newCompiled(p *ir.Plan, digest string, specJSON []byte) *compiled {
	return &compiled{plan: p, digest: digest, specJSON: specJSON, estimate: heapEstimate(p, specJSON),
		reach: map[*ir.Step][]uint64{}, progs: map[string]progOrErr{}, contracts: map[string]*Contract{}, digests: map[string]string{},
		fields: map[string]map[string]string{}}
}

// program compiles an expression once per plan.
func (c *compiled) program(src string) (*expr.Program, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if pe, ok := c.progs[src]; ok {
		return pe.p, pe.err
	}
	p, err := expr.Compile(src)
	c.progs[src] = progOrErr{p, err}
	return p, err
}

// successors are a step's forward edges: dependents plus routes (on_fail,
// gate approve/kill). Revise edges go backwards and are not included.
func successors(f *ir.Flow, s *ir.Step) []int {
	out := slices.Clone(s.Dependents)
	add := func(id string) {
		if id == "" {
			return
		}
		if t := f.Step(id); t != nil {
			out = append(out, t.Index)
		}
	}
	add(s.OnFail)
	if s.Gate != nil {
		add(s.Gate.OnApprove)
		add(s.Gate.OnKill)
	}
	return out
}

// reaches reports whether to is reachable from from (or is from) over the
// flow's forward edges.
func (c *compiled) reaches(f *ir.Flow, from, to *ir.Step) bool {
	if from == to {
		return true
	}
	c.mu.Lock()
	set, ok := c.reach[from]
	if !ok {
		set = make([]uint64, (len(f.Steps)+63)/64)
		stack := []int{from.Index}
		for len(stack) > 0 {
			i := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for _, j := range successors(f, f.Steps[i]) {
				if set[j/64]&(1<<(j%64)) == 0 {
					set[j/64] |= 1 << (j % 64)
					stack = append(stack, j)
				}
			}
		}
		c.reach[from] = set
	}
	c.mu.Unlock()
	return set[to.Index/64]&(1<<(to.Index%64)) != 0
}

// eachIncluded visits ct (when not nil) and every contract its fields
// reach, once each, until visit returns false; it reports whether it
// visited them all.
func eachIncluded(ct *ir.Contract, visit func(*ir.Contract) bool) bool {
	seen := map[*ir.Contract]bool{}
	var walk func(ct *ir.Contract) bool
	walk = func(ct *ir.Contract) bool {
		if ct == nil || seen[ct] {
			return true
		}
		seen[ct] = true
		if !visit(ct) {
			return false
		}
		for _, f := range ct.Fields {
			for t := f.Type; t != nil; t = t.Elem {
				if t.Kind == ir.TypeContract && !walk(t.Contract) {
					return false
				}
			}
		}
		return true
	}
	return walk(ct)
}

// Contract is the output contract of a step as agents see it: the root
// contract's name and the raw field maps of it and every contract it
// references, names sorted (JSON objects with sorted keys).
type Contract struct {
	Root      string                       `json:"root" jsonschema:"the name of the output's contract"`
	Contracts map[string]map[string]string `json:"contracts" jsonschema:"each contract by name: field name to type (string, number, integer, boolean, object, array, T[] for lists, T? for optional, a|b for enums, or another contract's name)"`
	// Digest is the SHA-256 of the canonical JSON of {root, contracts}.
	Digest string `json:"-"`
}

// maxKeptClosure is the most contracts a descriptor that is kept includes
// (contract).
const maxKeptClosure = 32

// contract returns the descriptor of a named contract (nil for ""), of the
// field maps made once (c.fields). A descriptor includes every contract
// its root reaches; one that includes at most maxKeptClosure is kept
// (c.contracts), a larger one is made at each call and only its digest
// kept (c.digests): keeping those would hold, for a chain of contracts
// each including the one before, the square of the chain's length, and
// made when asked one costs what the answer that carries it does.
func (c *compiled) contract(name string) *Contract {
	if name == "" {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if d, ok := c.contracts[name]; ok {
		return d
	}
	d := &Contract{Root: name, Contracts: map[string]map[string]string{}}
	eachIncluded(c.plan.Contract(name), func(ct *ir.Contract) bool {
		fields, ok := c.fields[ct.Name]
		if !ok {
			fields = make(map[string]string, len(ct.Fields))
			for _, f := range ct.Fields {
				fields[f.Name] = f.Type.Source
			}
			c.fields[ct.Name] = fields
		}
		d.Contracts[ct.Name] = fields
		return true
	})
	if digest, ok := c.digests[name]; ok {
		d.Digest = digest
		return d
	}
	defer func() {
		if len(d.Contracts) <= maxKeptClosure {
			c.contracts[name] = d
		} else {
			c.digests[name] = d.Digest
		}
	}()
	names := make([]string, 0, len(d.Contracts))
	for n := range d.Contracts {
		names = append(names, n)
	}
	sort.Strings(names)
	cs := expr.NewObject(len(names))
	for _, n := range names {
		fo := expr.NewObject(len(d.Contracts[n]))
		for k, v := range d.Contracts[n] {
			fo.Set(k, v)
		}
		cs.Set(n, fo)
	}
	d.Digest, _ = digestOf(objectOf("root", name, "contracts", cs))
	return d
}
