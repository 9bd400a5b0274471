package ir

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratum-go/stratum/expr"
	"github.com/stratum-go/stratum/internal/cputime"
)

// linearSpec generates n do steps, each reading the previous step's output
// and carrying an expr ensure.
func linearSpec(n int) []byte {
	var b strings.Builder
	b.WriteString("version: 1\ncontracts:\n  R:\n    v: string\n    n: number\nflows:\n  entry: main\n  main:\n    input:\n      q: string\n    output:\n      from: \"${s")
	fmt.Fprintf(&b, "%d", n-1)
	b.WriteString(".output}\"\n      contract: R\n    steps:\n")
	for i := range n {
		fmt.Fprintf(&b, "      - id: s%d\n", i)
		if i == 0 {
			b.WriteString("        do: \"Start from ${input.q}\"\n")
		} else {
			fmt.Fprintf(&b, "        do: \"Continue from ${s%d.output.v}\"\n", i-1)
		}
		b.WriteString("        out: R\n        ensure:\n          - expr: \"result.n > 0\"\n")
	}
	return []byte(b.String())
}

// linearFlowSpec is linearSpec with every step written as one flow
// mapping ("- {id: s1, do: ..., out: R, ensure: [...]}"), the style the
// engine's and mcp's own benchmark specs use.
func linearFlowSpec(n int) []byte {
	var b strings.Builder
	b.WriteString("version: 1\ncontracts:\n  R:\n    v: string\n    n: number\nflows:\n  entry: main\n  main:\n    input:\n      q: string\n    output:\n      from: \"${s")
	fmt.Fprintf(&b, "%d", n-1)
	b.WriteString(".output}\"\n      contract: R\n    steps:\n")
	for i := range n {
		do := "Start from ${input.q}"
		if i > 0 {
			do = fmt.Sprintf("Continue from ${s%d.output.v}", i-1)
		}
		fmt.Fprintf(&b, "      - {id: s%d, do: \"%s\", out: R, ensure: [{expr: \"result.n > 0\"}]}\n", i, do)
	}
	return []byte(b.String())
}

// fanInSpec generates width independent steps and one step referencing
// all of them.
func fanInSpec(width int) []byte {
	var b strings.Builder
	b.WriteString("version: 1\ncontracts:\n  R:\n    v: string\nflows:\n  entry: main\n  main:\n    input:\n      q: string\n    output:\n      from: \"${join.output}\"\n      contract: R\n    steps:\n")
	for i := range width {
		fmt.Fprintf(&b, "      - id: w%d\n        do: \"Part %d of ${input.q}\"\n        out: R\n", i, i)
	}
	b.WriteString("      - id: join\n        do: \"Join")
	for i := range width {
		fmt.Fprintf(&b, " ${w%d.output.v}", i)
	}
	b.WriteString("\"\n        out: R\n")
	return []byte(b.String())
}

func TestGeneratedSpecsAreValid(t *testing.T) {
	p, ds := Build(linearSpec(1000))
	if len(ds) > 0 {
		t.Fatal(formatDiags(ds))
	}
	if f := p.EntryFlow(); len(f.Order) != 1000 || f.Steps[999].Deps[0] != 998 {
		t.Fatal("linear plan")
	}
	p, ds = Build(fanInSpec(200))
	if len(ds) > 0 {
		t.Fatal(formatDiags(ds))
	}
	if f := p.EntryFlow(); len(f.Step("join").Deps) != 200 || f.Order[200] != 200 {
		t.Fatal("fan-in plan")
	}
}

// benchBuild measures Build on src. Besides wall time it reports the
// process CPU time per operation (cpu-ns/op), which stays meaningful on a
// machine shared with other work.
func benchBuild(b *testing.B, src []byte) {
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	start := cpuTime(b)
	for b.Loop() {
		if _, ds := Build(src); len(ds) > 0 {
			b.Fatal(ds)
		}
	}
	b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N), "cpu-ns/op")
}

// cpuTime is the process's user+system CPU time in nanoseconds; a
// platform without one fails the benchmark rather than report a free
// operation.
func cpuTime(tb testing.TB) int64 {
	t, err := cputime.Self()
	if err != nil {
		tb.Fatal(err)
	}
	return t.Total().Nanoseconds()
}

func BenchmarkBuildMinimal(b *testing.B) {
	src, err := os.ReadFile(filepath.Join("..", "examples", "minimal.stratum.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	benchBuild(b, src)
}

func BenchmarkBuildLinear1000(b *testing.B) { benchBuild(b, linearSpec(1000)) }

func BenchmarkBuildLinear1000Flow(b *testing.B) { benchBuild(b, linearFlowSpec(1000)) }

// BenchmarkBuildLinear1000DistinctExprs is linearSpec(1000) with a
// different ensure expression in every step, so that each one is compiled
// (validation parses every expression; identical ones are compiled once).
func BenchmarkBuildLinear1000DistinctExprs(b *testing.B) {
	src := linearSpec(1000)
	var out strings.Builder
	for i, part := range strings.Split(string(src), "result.n > 0") {
		if i > 0 {
			fmt.Fprintf(&out, "result.n > %d", i)
		}
		out.WriteString(part)
	}
	benchBuild(b, []byte(out.String()))
}

func BenchmarkBuildLinear4000(b *testing.B) { benchBuild(b, linearSpec(4000)) }

func BenchmarkBuildFanIn200(b *testing.B) { benchBuild(b, fanInSpec(200)) }

func BenchmarkBuildFanIn800(b *testing.B) { benchBuild(b, fanInSpec(800)) }

// reverseChainSpec generates a chain of n steps declared last-first (each
// step's dependency is declared after it), closed into one cycle by the
// first step when cyclic: the shape that made an edge-by-edge cycle check
// quadratic.
func reverseChainSpec(n int, cyclic bool) []byte {
	var b strings.Builder
	b.WriteString("version: 1\ncontracts:\n  R:\n    v: string\nflows:\n  entry: main\n  main:\n    input: {}\n    output:\n      from: \"${s0.output}\"\n      contract: R\n    steps:\n")
	for i := n; i > 0; i-- {
		fmt.Fprintf(&b, "      - {id: s%d, do: x, after: [s%d]}\n", i, i-1)
	}
	if cyclic {
		fmt.Fprintf(&b, "      - {id: s0, do: x, out: R, after: [s%d]}\n", n)
	} else {
		b.WriteString("      - {id: s0, do: x, out: R}\n")
	}
	return []byte(b.String())
}

func TestReverseChainCycle(t *testing.T) {
	ds := Validate(reverseChainSpec(2000, true))
	if len(ds) != 1 || !ds.Has(CodeCycle, "flows.main.steps[2000].after[0]") {
		t.Fatalf("want the one closing edge, got:\n%s", formatDiags(ds))
	}
	if ds := Validate(reverseChainSpec(2000, false)); len(ds) > 0 {
		t.Fatal(formatDiags(ds))
	}
}

// BenchmarkValidateCyclicChain20000 is a hostile shape: the cycle check
// must stay near linear (it was quadratic: about a minute for 60,000 steps).
func BenchmarkValidateCyclicChain20000(b *testing.B) {
	src := reverseChainSpec(20000, true)
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		if ds := Validate(src); len(ds) != 1 {
			b.Fatal(ds)
		}
	}
}

// reviseFanSpec generates a chain of n steps and n gates after its end,
// gate j revising to chain step j (all valid): one ancestor question per
// gate, each with a different answer set.
func reviseFanSpec(n int) []byte {
	var b strings.Builder
	b.WriteString("version: 1\ncontracts:\n  R:\n    v: string\nflows:\n  entry: main\n  main:\n    input: {}\n    output:\n      from: \"${c0.output}\"\n      contract: R\n    max_rounds: 2\n    steps:\n      - {id: c0, do: x, out: R}\n")
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, "      - {id: c%d, do: x, after: [c%d]}\n", i, i-1)
	}
	for j := range n {
		fmt.Fprintf(&b, "      - {id: g%d, after: [c%d], gate: {on_approve: null, on_revise: c%d, on_kill: null}}\n", j, n-1, j)
	}
	return []byte(b.String())
}

// BenchmarkValidateReviseFan5000: the revise and carry ancestry checks
// must not cost a graph search per gate (this took 52 s and 8 GB at
// 20,000 gates when each gate searched, and the Plan was compiled).
func BenchmarkValidateReviseFan5000(b *testing.B) {
	src := reviseFanSpec(5000)
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		if ds := Validate(src); len(ds) > 0 {
			b.Fatal(ds)
		}
	}
}

// BenchmarkBuildReviseFan20000: compiling the Plan must not store a
// reset closure per gate (41 s and 8 GB at 20,000 gates when it did).
func BenchmarkBuildReviseFan20000(b *testing.B) {
	src := reviseFanSpec(20000)
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		if _, ds := Build(src); len(ds) > 0 {
			b.Fatal(ds)
		}
	}
}

// manyNamesSpec declares n contracts and n steps naming an undeclared
// one: every message used to list all declared contracts (1 MB took 32 s
// and 10 GB).
func manyNamesSpec(n int) []byte {
	var b strings.Builder
	b.WriteString("version: 1\ncontracts:\n  R:\n    v: string\n")
	for i := range n {
		fmt.Fprintf(&b, "  C%d: {}\n", i)
	}
	b.WriteString("flows:\n  entry: main\n  main:\n    input: {}\n    output:\n      from: \"${s0.output}\"\n      contract: R\n    steps:\n      - {id: s0, do: x, out: R}\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "      - {id: s%d, do: x, out: X}\n", i)
	}
	return []byte(b.String())
}

func BenchmarkValidateManyNames5000(b *testing.B) {
	src := manyNamesSpec(5000)
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		if ds := Validate(src); len(ds) != MaxDiagnostics+1 {
			b.Fatal(len(ds))
		}
	}
}

// deepWithSpec nests a run step's with value depth levels deep under keys
// of keyLen characters, with leaves strings at the bottom: the path of
// every leaf is depth*keyLen long, so paths must not be built per leaf.
func deepWithSpec(depth, keyLen, leaves int) []byte {
	var inner strings.Builder
	inner.WriteByte('{')
	for i := range leaves {
		if i > 0 {
			inner.WriteString(", ")
		}
		fmt.Fprintf(&inner, "x%d: \"${input.q}\"", i)
	}
	inner.WriteByte('}')
	v := inner.String()
	for d := range depth {
		v = fmt.Sprintf("{k%d%s: %s}", d, strings.Repeat("a", keyLen), v)
	}
	return []byte("version: 1\ncontracts:\n  R:\n    v: string\nflows:\n  entry: main\n  main:\n    input:\n      q: string\n    output:\n      from: \"${r.output}\"\n      contract: R\n    steps:\n      - id: r\n        run: sub\n        with:\n          top: " + v +
		"\n  sub:\n    input:\n      top: object\n    output:\n      from: \"${s.output}\"\n      contract: R\n    steps:\n      - {id: s, do: x, out: R}\n")
}

func BenchmarkBuildDeepWith(b *testing.B) { benchBuild(b, deepWithSpec(100, 500, 5000)) }

// auditSpec is the spec of the cli's BenchmarkAuditLongRun: n do steps in
// a chain, each with an output contract.
func auditSpec(n int) []byte {
	var b strings.Builder
	b.WriteString("version: 1\ncontracts:\n  V: {v: string}\nflows:\n  entry: main\n  main:\n    input: {}\n")
	fmt.Fprintf(&b, "    output: {from: \"${s%d.output}\", contract: V}\n    steps:\n", n)
	b.WriteString("      - id: s1\n        do: \"step one\"\n        out: V\n")
	for i := 2; i <= n; i++ {
		fmt.Fprintf(&b, "      - id: s%d\n        do: \"step %d after ${s%d.output.v}\"\n        out: V\n", i, i, i-1)
	}
	return []byte(b.String())
}

// specSnapshot is the spec snapshot a run persists for src: the loaded
// document as the engine writes it (its canonicalOrdered is
// expr.EncodeJSON of the document BuildDocument returns).
func specSnapshot(tb testing.TB, src []byte) []byte {
	tb.Helper()
	_, doc, ds := BuildDocument(src)
	if len(ds) > 0 {
		tb.Fatal(formatDiags(ds))
	}
	snap, err := expr.EncodeJSON(doc)
	if err != nil {
		tb.Fatal(err)
	}
	return snap
}

// BenchmarkLoadSpecSnapshot compiles the persisted snapshot of a
// 10,000-step run, as another process (an audit, a second server) does
// before it can read the run: build is Build on it, load the parse alone.
func BenchmarkLoadSpecSnapshot(b *testing.B) {
	snap := specSnapshot(b, auditSpec(10000))
	b.Run("build", func(b *testing.B) { benchBuild(b, snap) })
	b.Run("load", func(b *testing.B) {
		b.SetBytes(int64(len(snap)))
		b.ReportAllocs()
		start := cpuTime(b)
		for b.Loop() {
			var d diags
			if load(snap, &d) == nil {
				b.Fatal(d.list)
			}
		}
		b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N), "cpu-ns/op")
	})
}
