package ir

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// outlineString is an outline as text, for failure messages.
func outlineString(o *Outline) string {
	if o == nil {
		return "<nil>"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "entry %s\n", o.Entry)
	for _, f := range o.Flows {
		fmt.Fprintf(&b, "flow %s budget %+v\n", f.Name, f.Budget)
		for _, s := range f.Steps {
			fmt.Fprintf(&b, "  %s %s %s\n", s.ID, s.Kind, s.Run)
		}
	}
	return b.String()
}

// TestReadOutlineAgreesWithBuild: for every valid spec of the corpus, the
// golden specs and the examples, the outline read without compiling is
// the compiled plan's.
func TestReadOutlineAgreesWithBuild(t *testing.T) {
	var files []string
	for _, pattern := range []string{"testdata/conformance/*.yaml", "testdata/extra/*.yaml", "testdata/golden/*.yaml", "../examples/*.yaml"} {
		m, _ := filepath.Glob(pattern)
		files = append(files, m...)
	}
	valid := 0
	for _, file := range files {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		plan, ds := Build(src)
		if len(ds) > 0 {
			continue
		}
		valid++
		got, err := ReadOutline(src)
		if err != nil {
			t.Errorf("%s: %v", file, err)
			continue
		}
		if want := plan.Outline(); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: ReadOutline and Build disagree:\n%s\n%s", file, outlineString(got), outlineString(want))
		}
	}
	if valid < 20 {
		t.Fatalf("only %d valid specs among %d files", valid, len(files))
	}
}

// TestReadOutline pins what an outline holds: flows in document order,
// steps in declaration order with their kinds, the flow a run step
// calls, budgets as compiled, and the same of the JSON form a run keeps.
func TestReadOutline(t *testing.T) {
	spec := `version: 1
contracts:
  V: {v: string}
flows:
  entry: main
  helper:
    input: {}
    output: {from: "${h.output}", contract: V}
    steps:
      - {id: h, do: "help", out: V}
  main:
    input: {items: "string[]"}
    output: {from: "${d.output}", contract: V}
    budget: {usd: 2.5, tokens: 1e20, ms: 1000}
    steps:
      - id: d
        do: "work"
        out: V
      - id: call
        run: helper
        with: {}
      - id: fan
        fanout: {over: "${input.items}", concurrency: 2, isolation: none, require: all, merge: sequential, steps: [{do: one}, {do: two}]}
      - id: check
        after: [call]
        gate: {on_approve: null, on_revise: null, on_kill: null}
`
	want := &Outline{Entry: "main", Flows: []*FlowOutline{
		{Name: "helper", Steps: []StepOutline{{ID: "h", Kind: KindDo}}},
		{Name: "main", Budget: &Budget{USD: 2.5, Tokens: 1 << 53, MS: 1000}, Steps: []StepOutline{
			{ID: "d", Kind: KindDo}, {ID: "call", Kind: KindRun, Run: "helper"},
			{ID: "fan", Kind: KindFanout, Stages: 2}, {ID: "check", Kind: KindGate}}},
	}}
	plan, ds := Build([]byte(spec))
	if len(ds) > 0 {
		t.Fatal(ds)
	}
	if got := plan.Outline(); !reflect.DeepEqual(got, want) {
		t.Fatalf("plan outline:\n%s\nwant:\n%s", outlineString(got), outlineString(want))
	}
	got, err := ReadOutline([]byte(spec))
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("ReadOutline: %v\n%s\nwant:\n%s", err, outlineString(got), outlineString(want))
	}
	if f := got.EntryFlow(); f == nil || f.Name != "main" || got.Flow("nope") != nil {
		t.Fatalf("EntryFlow %v, Flow(nope) %v", f, got.Flow("nope"))
	}
}

// TestReadOutlineRefuses: what is not a spec's shape is an error, not a
// guess.
func TestReadOutlineRefuses(t *testing.T) {
	for _, src := range []string{
		"",
		"{",
		"flows: {}",
		"flows: {entry: main, main: {steps: {}}}",
		"flows: {entry: main, main: {steps: [{do: x}]}}",
		"flows: {entry: main, main: {steps: [{id: a}]}}",
		"flows: {entry: main, main: {steps: [{id: a, do: x, gate: {}}]}}",
		"flows: {entry: main, main: {steps: [{id: a, run: [x]}]}}",
		"flows: {entry: main, main: {steps: [{id: a, fanout: {over: x}}]}}",
		"flows: {entry: main, main: {budget: {usd: -1}, steps: []}}",
		"flows: {entry: main, main: {budget: {cents: 1}, steps: []}}",
	} {
		if o, err := ReadOutline([]byte(src)); err == nil {
			t.Errorf("%q: no error, %s", src, outlineString(o))
		}
	}
}
