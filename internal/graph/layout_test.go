package graph

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stratum-go/stratum/ir"
)

func build(t *testing.T, spec string) *Model {
	t.Helper()
	plan, ds := ir.Build([]byte(spec))
	if len(ds) > 0 {
		t.Fatalf("invalid spec: %v", ds)
	}
	return Build(plan.Flows)
}

const gateSpec = `version: 1
contracts:
  R:
    ok: boolean
flows:
  entry: main
  main:
    input: {}
    max_rounds: 2
    output:
      from: "${c.output}"
      contract: R
    steps:
      - id: a
        do: "first"
        out: R
      - id: b
        do: "uses ${a.output.ok}"
        out: R
      - id: g
        after: [b]
        gate:
          on_approve: null
          on_revise: a
          on_kill: null
      - id: c
        after: [g]
        run: helper
        with: {}
  helper:
    input: {}
    output:
      from: "${a_very_long_step_identifier_for_a_node.output}"
      contract: R
    steps:
      - id: a_very_long_step_identifier_for_a_node
        do: "help"
        out: R
`

func TestLayoutLayers(t *testing.T) {
	d := Layout(build(t, gateSpec), Options{})
	at := map[string]*Placed{}
	for i := range d.Nodes {
		at[d.Nodes[i].Key] = &d.Nodes[i]
	}
	// Each dependency is drawn strictly below what it depends on; the
	// revise route from g back to a does not move a below g.
	order := []string{"main/a", "main/b", "main/g", "main/c", "main/"}
	for i := 1; i < len(order); i++ {
		up, down := at[order[i-1]], at[order[i]]
		if up == nil || down == nil {
			t.Fatalf("missing node %s or %s in %+v", order[i-1], order[i], d.Nodes)
		}
		if down.Y < up.Y+up.H {
			t.Errorf("%s (y %d) is not below %s (y %d, h %d)", order[i], down.Y, order[i-1], up.Y, up.H)
		}
	}
	// Flows side by side, every node inside its flow's frame and the
	// drawing.
	if len(d.Flows) != 2 || d.Flows[1].X < d.Flows[0].X+d.Flows[0].W {
		t.Fatalf("flows overlap: %+v", d.Flows)
	}
	for _, n := range d.Nodes {
		b := d.Flows[0]
		if n.Flow == "helper" {
			b = d.Flows[1]
		}
		if n.X < b.X || n.Y < b.Y || n.X+n.W > b.X+b.W || n.Y+n.H > b.Y+b.H {
			t.Errorf("node %s %+v is outside its flow %+v", n.Key, n, b)
		}
		if n.X+n.W > d.W || n.Y+n.H > d.H {
			t.Errorf("node %s is outside the drawing %dx%d", n.Key, d.W, d.H)
		}
	}
	// Labels are cut to fit, the full text kept.
	h := at["helper/a_very_long_step_identifier_for_a_node"]
	for _, l := range h.Shown {
		if len([]rune(l)) > MaxLineRunes {
			t.Errorf("line %q is longer than %d runes", l, MaxLineRunes)
		}
	}
	if !strings.HasSuffix(h.Shown[0], "…") || h.Lines[0] != "a_very_long_step_identifier_for_a_node" {
		t.Errorf("label of h: shown %q, lines %q", h.Shown, h.Lines)
	}
	// Edges: a revise route goes out of the right side; the call lands on
	// the called flow's frame.
	kinds := map[EdgeKind]*Routed{}
	for i := range d.Edges {
		kinds[d.Edges[i].Kind] = &d.Edges[i]
	}
	rv := kinds[EdgeRevise]
	if rv == nil || rv.From.X != at["main/g"].X+NodeWidth || rv.To.Y >= rv.From.Y {
		t.Errorf("revise edge: %+v", rv)
	}
	// The revise curve and its label stay inside the flow's frame.
	if right := d.Flows[0].X + d.Flows[0].W; max(rv.C1.X, rv.C2.X) > right || rv.Label.X+30 > right {
		t.Errorf("the revise curve (%+v) leaves its flow's frame (right edge %d)", rv, right)
	}
	call := kinds[EdgeCalls]
	if call == nil || call.To.X != d.Flows[1].X {
		t.Errorf("calls edge: %+v (helper frame %+v)", call, d.Flows[1])
	}
	if p := rv.Path(); !strings.HasPrefix(p, "M") || strings.ContainsAny(p, "<>\"'&") {
		t.Errorf("path data %q", p)
	}
}

// TestLayoutWideLayerWraps: a layer of many parallel steps wraps into rows
// of MaxRow, none overlapping.
func TestLayoutWideLayerWraps(t *testing.T) {
	var b strings.Builder
	b.WriteString("version: 1\ncontracts:\n  R:\n    ok: boolean\nflows:\n  entry: main\n  main:\n    input: {}\n    output: {from: \"${s0.output}\", contract: R}\n    steps:\n")
	const n = 20
	for i := range n {
		fmt.Fprintf(&b, "      - id: s%d\n        do: \"x\"\n        out: R\n", i)
	}
	d := Layout(build(t, b.String()), Options{})
	rows := map[int]int{}
	for _, p := range d.Nodes {
		if p.Shape != ShapeOutput {
			rows[p.Y]++
		}
	}
	if len(rows) != 3 {
		t.Errorf("%d steps in %d rows, want 3 (of at most %d): %v", n, len(rows), MaxRow, rows)
	}
	for y, c := range rows {
		if c > MaxRow {
			t.Errorf("row at y %d holds %d nodes", y, c)
		}
	}
	for i := range d.Nodes {
		for j := i + 1; j < len(d.Nodes); j++ {
			a, c := d.Nodes[i], d.Nodes[j]
			if a.X < c.X+c.W && c.X < a.X+a.W && a.Y < c.Y+c.H && c.Y < a.Y+a.H {
				t.Fatalf("%s and %s overlap", a.Key, c.Key)
			}
		}
	}
}

// TestLayoutMaxLines: a large graph's nodes show only their ids and are
// smaller for it.
func TestLayoutMaxLines(t *testing.T) {
	m := build(t, gateSpec)
	full, compact := Layout(m, Options{}), Layout(m, Options{MaxLines: 1})
	for i := range compact.Nodes {
		c, f := compact.Nodes[i], full.Nodes[i]
		if len(c.Shown) != 1 || c.Shown[0] != f.Shown[0] || len(c.Lines) != len(f.Lines) {
			t.Errorf("node %s: compact shows %q of %q", c.Key, c.Shown, c.Lines)
		}
		if len(f.Shown) > 1 && c.H >= f.H {
			t.Errorf("node %s: compact height %d, full %d", c.Key, c.H, f.H)
		}
	}
}

// BenchmarkLayout1000 lays out a chain of a thousand steps.
func BenchmarkLayout1000(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("version: 1\ncontracts:\n  R:\n    ok: boolean\nflows:\n  entry: main\n  main:\n    input: {}\n    output: {from: \"${s999.output}\", contract: R}\n    steps:\n")
	for i := range 1000 {
		fmt.Fprintf(&sb, "      - id: s%d\n        do: \"x\"\n        out: R\n", i)
		if i > 0 {
			fmt.Fprintf(&sb, "        after: [s%d]\n", i-1)
		}
	}
	plan, ds := ir.Build([]byte(sb.String()))
	if len(ds) > 0 {
		b.Fatal(ds)
	}
	m := Build(plan.Flows)
	for b.Loop() {
		Layout(m, Options{})
	}
}
