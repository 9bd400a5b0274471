package ir

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

func TestScalarResolution(t *testing.T) {
	cases := []struct {
		src  string
		kind nodeKind
		num  float64
		str  string
	}{
		{"1", numberNode, 1, ""}, {"1.0", numberNode, 1, ""}, {"+1", numberNode, 1, ""}, {"0x1", numberNode, 1, ""},
		{"1e0", numberNode, 1, ""}, {"0o17", numberNode, 15, ""}, {"017", numberNode, 17, ""}, {"-2.5", numberNode, -2.5, ""},
		{".5", numberNode, 0.5, ""}, {"1.", numberNode, 1, ""}, {".inf", numberNode, math.Inf(1), ""}, {"-.inf", numberNode, math.Inf(-1), ""},
		{"~", nullNode, 0, ""}, {"null", nullNode, 0, ""}, {"", nullNode, 0, ""}, {"NULL", nullNode, 0, ""},
		{"true", boolNode, 0, ""}, {"False", boolNode, 0, ""},
		{"yes", stringNode, 0, "yes"}, {"no", stringNode, 0, "no"}, {"on", stringNode, 0, "on"}, {"off", stringNode, 0, "off"},
		{`"1"`, stringNode, 0, "1"}, {`'null'`, stringNode, 0, "null"}, {"2024-01-01", stringNode, 0, "2024-01-01"},
		{"0b1", stringNode, 0, "0b1"}, {"1_000", stringNode, 0, "1_000"}, {"0x", stringNode, 0, "0x"}, {"1e", stringNode, 0, "1e"},
		{"!!str 1", stringNode, 0, "1"}, {"!!int 7", numberNode, 7, ""}, {"+", stringNode, 0, "+"}, {".", stringNode, 0, "."},
	}
	for _, c := range cases {
		var d diags
		root := load([]byte("v: "+c.src), &d)
		if !d.empty() {
			t.Errorf("%q: %v", c.src, d.list)
			continue
		}
		n := root.get("v")
		if n.kind != c.kind || c.kind == numberNode && n.num != c.num || c.kind == stringNode && n.str != c.str {
			t.Errorf("%q loaded as %v %v %q", c.src, n.kind, n.num, n.str)
		}
	}
	var d diags
	root := load([]byte("v: .nan"), &d)
	if n := root.get("v"); n.kind != numberNode || !math.IsNaN(n.num) {
		t.Error(".nan")
	}
}

func TestLoadProblems(t *testing.T) {
	deep := strings.Repeat("[", 200) + strings.Repeat("]", 200)
	cases := []struct {
		name, src, code string
		line            int
	}{
		{"syntax", "a: [1,\nb: 2\n", CodeYAMLSyntax, 0},
		{"duplicate", "a: 1\nb: 2\na: 3\n", CodeYAMLDuplicateKey, 3},
		{"duplicate in a large mapping", strings.Repeat("k: 1\n", 1) + func() string {
			var b strings.Builder
			for i := range 20 {
				fmt.Fprintf(&b, "x%d: 1\n", i)
			}
			return b.String()
		}() + "x3: 2\n", CodeYAMLDuplicateKey, 22},
		{"two documents", "a: 1\n---\nb: 2\n", CodeYAMLSyntax, 2},
		{"deep nesting", "a: " + deep + "\n", CodeYAMLLimit, 1},
		{"unknown tag", "a: !!binary aGk=\n", CodeYAMLSyntax, 1},
		{"bad int tag", "a: !!int x\n", CodeYAMLSyntax, 1},
		{"complex key", "? [a]\n: 1\n", CodeYAMLSyntax, 1},
		{"unknown anchor", "a: *nope\n", CodeYAMLSyntax, 0},
		{"recursive alias", "a: &x [1, *x]\n", CodeYAMLSyntax, 1},
		{"too large", "a: \"" + strings.Repeat("x", MaxSpecBytes) + "\"\n", CodeYAMLLimit, 1},
		{"explicit key too long", "a: 1\n? " + strings.Repeat("k", MaxKeyLength+1) + "\n: 1\n", CodeYAMLLimit, 2},
		{"aliased key too long", "a: &k " + strings.Repeat("k", MaxKeyLength+1) + "\nb: {*k : 1}\n", CodeYAMLLimit, 1},
		{"resolved keys repeat", "a: 1\n1.0: x\n+1: y\n", CodeYAMLDuplicateKey, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			plan, ds := Build([]byte(c.src))
			if plan != nil || len(ds) != 1 || ds[0].Code != c.code {
				t.Fatalf("got %v", ds)
			}
			if c.line != 0 && ds[0].Line != c.line {
				t.Errorf("line %d, want %d: %v", ds[0].Line, c.line, ds[0])
			}
			if ds[0].Message == "" {
				t.Error("empty message")
			}
		})
	}
}

func TestBillionLaughsRefusedQuickly(t *testing.T) {
	var b strings.Builder
	b.WriteString("a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(&b, "a%d: &a%d [", i, i)
		for j := range 9 {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*a%d", i-1)
		}
		b.WriteString("]\n")
	}
	// Expanding 9^30 values would never finish: returning at all shows the
	// document was refused before expansion.
	_, ds := Build([]byte(b.String()))
	if len(ds) != 1 || ds[0].Code != CodeYAMLLimit || !strings.Contains(ds[0].Message, "aliases") {
		t.Fatalf("got %v", ds)
	}
}

func TestAnchorsAreShared(t *testing.T) {
	// A moderate alias use (043) is fine and positions stay those of the anchor.
	_, ds := Build([]byte("version: 1\ncontracts:\n  A: &s {v: strin}\n  B: *s\nflows: {entry: m, m: {input: {}, output: {from: \"${a.output}\", contract: A}, steps: [{id: a, do: x, out: A}]}}\n"))
	if len(ds) != 2 || ds[0].Path != "contracts.A.v" || ds[1].Path != "contracts.B.v" || ds[1].Line != 3 {
		t.Fatalf("got:\n%s", formatDiags(ds))
	}
}

func TestMergeKeyIsAnOrdinaryKey(t *testing.T) {
	src := `version: 1
contracts: {R: {v: string}}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${a.output}", contract: R}
    steps:
      - &base {id: a, do: x, out: R}
      - <<: *base
        id: b
`
	_, ds := Build([]byte(src))
	if !ds.Has(CodeUnknownField, "flows.main.steps[1].<<") {
		t.Fatalf("got:\n%s", formatDiags(ds))
	}
}

func TestLongKeysWithinTheBound(t *testing.T) {
	for _, src := range []string{
		"? " + strings.Repeat("k", MaxKeyLength) + "\n: 1\n",
		"? " + strings.Repeat("é", MaxKeyLength) + "\n: 1\n", // characters, not bytes
	} {
		ds := Validate([]byte(src))
		if ds.Has(CodeYAMLLimit, "*") || ds.Has(CodeYAMLSyntax, "*") {
			t.Errorf("a key of %d characters was refused: %v", MaxKeyLength, ds)
		}
	}
}

// TestTooManyProblems checks the bound on the report: the first
// MaxDiagnostics problems, sorted, then one YAML_LIMIT saying how many more.
func TestTooManyProblems(t *testing.T) {
	var b strings.Builder
	b.WriteString("version: 1\ncontracts:\n  R:\n    v: string\nflows:\n  entry: main\n  main:\n    input: {}\n    output:\n      from: \"${s0.output}\"\n      contract: R\n    steps:\n      - {id: s0, do: x, out: R}\n")
	const extra = MaxDiagnostics + 250
	for i := 1; i <= extra; i++ {
		fmt.Fprintf(&b, "      - {id: s%d, do: x, out: Missing}\n", i)
	}
	ds := Validate([]byte(b.String()))
	if len(ds) != MaxDiagnostics+1 {
		t.Fatalf("got %d diagnostics, want %d", len(ds), MaxDiagnostics+1)
	}
	last := ds[len(ds)-1]
	if last.Code != CodeYAMLLimit || !strings.Contains(last.Message, "at least 250 more problems") {
		t.Errorf("last = %v", last)
	}
	for i, d := range ds[:MaxDiagnostics] {
		if d.Code != CodeContractRef || d.Line != 14+i {
			t.Fatalf("diagnostic %d = %v", i, d)
		}
	}
}
