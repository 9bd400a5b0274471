package engine

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/stratum-go/stratum/expr"
	"github.com/stratum-go/stratum/ir"
)

// The plan cache's estimate (heapEstimate) holds for what a cached
// plan comes to hold as its runs go: the plan, its outline, every
// expression compiled and the reach sets of its routing targets, for the
// spec shapes that take the most heap per byte of JSON.
func TestPlanHeapWithinEstimate(t *testing.T) {
	if testing.Short() {
		t.Skip("measures the heap of 2,000-step plans")
	}
	const n = 2000
	shapes := []struct{ name, spec string }{
		{"terse flow-style steps", terseSteps(n)},
		{"a distinct ensure on every step", distinctEnsures(n)},
		{"an on_fail route on every step", routedSteps(n)},
		{"each step's contract including the one before", contractChain(n / 4)},
		{"a large literal regex in each step's ensure", regexEnsures(n / 20)},
	}
	for _, sh := range shapes {
		t.Run(sh.name, func(t *testing.T) {
			v, used, most := heapOf(t, func() any {
				e := New(nil, Options{})
				got, err := e.compileSource([]byte(sh.spec))
				if err != nil {
					t.Fatal(err)
				}
				warmPlan(t, got)
				return got
			})
			c := v.(*compiled)
			estimate := c.estimate
			t.Logf("%d bytes of spec JSON: %d bytes of heap, estimated %d (%.2fx)", len(c.specJSON), used, estimate, float64(estimate)/float64(used))
			if used > int64(estimate) {
				t.Errorf("a plan holds %d bytes, over the cache's estimate of %d", used, estimate)
			}
			if int64(estimate) > 4*most {
				t.Errorf("a plan holds %d bytes, and the estimate of %d counts it more than 4 times over", most, estimate)
			}
		})
	}
}

// warmPlan makes c hold what running its steps makes a plan hold.
func warmPlan(t *testing.T, c *compiled) {
	t.Helper()
	result, err := expr.DecodeJSON([]byte(`{"v":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	c.outline()
	for _, f := range c.plan.Flows {
		for _, s := range f.Steps {
			srcs := []string{}
			if s.HasWhen {
				srcs = append(srcs, s.When)
			}
			for _, en := range s.Ensure {
				if x := en.Expression(); x != "" {
					srcs = append(srcs, x)
				}
			}
			for _, src := range srcs {
				p, err := c.program(src)
				if err != nil {
					t.Fatalf("step %s: %q: %v", s.ID, src, err)
				}
				// Evaluated once, so that its literal patterns compile.
				p.EvalPredicate(t.Context(), expr.Bindings{Result: expr.Bind(result)}, nil)
			}
			if s.OnFail != "" {
				if tgt := f.Step(s.OnFail); tgt != nil {
					c.reaches(f, tgt, s)
				}
			}
			if s.Kind == ir.KindGate && s.Gate.OnKill != "" {
				c.reaches(f, f.Step(s.Gate.OnKill), s)
			}
			c.contract(s.Out)
			if s.Fanout != nil {
				for _, st := range s.Fanout.Stages {
					c.contract(st.Out)
				}
			}
		}
	}
}

// heapOf measures three times the live heap that what build returns holds,
// and returns the last one built: what other goroutines allocate meanwhile
// adds to one measure, what they free takes from one, so an estimate is
// held to over-estimating the least, and to within a bound of the most.
// Each value is let go only after the next is measured (build must not
// keep it), and a measure of nothing fails the test.
func heapOf(t *testing.T, build func() any) (kept any, least, most int64) {
	t.Helper()
	least = -1
	for range 3 {
		before := liveHeap()
		v := build()
		u := liveHeap() - before
		if least < 0 || u < least {
			least = u
		}
		most = max(most, u)
		kept = v
	}
	if least <= 0 {
		t.Fatalf("measured %d bytes of heap for %T", least, kept)
	}
	return kept, least, most
}

func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// terseSteps: one-line steps with the shortest ids and texts.
func terseSteps(n int) string {
	var b strings.Builder
	b.WriteString(specHead(n))
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "      - {id: s%d, do: t, out: V}\n", i)
	}
	return b.String()
}

// distinctEnsures: each step reads its predecessor and checks its result
// with an expression of its own.
func distinctEnsures(n int) string {
	var b strings.Builder
	b.WriteString(specHead(n))
	b.WriteString("      - {id: s1, do: t, out: V}\n")
	for i := 2; i <= n; i++ {
		fmt.Fprintf(&b, "      - {id: s%d, do: \"t ${s%d.output.v}\", out: V, ensure: [{expr: \"len(result.v) > %d && result.v != 'x%d'\"}]}\n", i, i-1, i, i)
	}
	return b.String()
}

// routedSteps: every step after the first routes its failure to a step
// of its own, so that each is a distinct routing target.
func routedSteps(n int) string {
	var b strings.Builder
	b.WriteString(specHead(n + 1))
	b.WriteString("      - {id: s1, do: t, out: V}\n")
	for i := 2; i <= n; i += 2 {
		fmt.Fprintf(&b, "      - {id: s%d, do: t, out: V, after: [s%d], on_fail: s%d}\n", i, i-1, i+1)
		fmt.Fprintf(&b, "      - {id: s%d, do: t, out: V}\n", i+1)
	}
	return b.String()
}

// specHead is a spec's text up to its steps, the flow's output read from
// step last.
func specHead(last int) string {
	return fmt.Sprintf("version: 1\ncontracts:\n  V: {v: string}\nflows:\n  entry: main\n  main:\n    input: {}\n    output: {from: \"${s%d.output}\", contract: V}\n    steps:\n", last)
}

// contractChain: n contracts, each with a field of the one before, and a
// step giving each, so that the descriptors include 1, 2, ... n contracts.
func contractChain(n int) string {
	var b strings.Builder
	b.WriteString("version: 1\ncontracts:\n  C1: {v: string}\n")
	for i := 2; i <= n; i++ {
		fmt.Fprintf(&b, "  C%d: {v: string, prev: C%d}\n", i, i-1)
	}
	fmt.Fprintf(&b, "flows:\n  entry: main\n  main:\n    input: {}\n    output: {from: \"${s%d.output}\", contract: C%d}\n    steps:\n", n, n)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "      - {id: s%d, do: t, out: C%d}\n", i, i)
	}
	return b.String()
}

// regexEnsures: each step's ensure matches its output against a literal
// pattern of its own of 2,002 states.
func regexEnsures(n int) string {
	var b strings.Builder
	b.WriteString(specHead(n))
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "      - {id: s%d, do: t, out: V, ensure: [{expr: \"matches(result.v, '^a{2000}x%d$')\"}]}\n", i, i)
	}
	return b.String()
}
