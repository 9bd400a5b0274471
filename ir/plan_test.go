package ir

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stratum-go/stratum/expr"
)

func mustBuild(t *testing.T, src string) *Plan {
	t.Helper()
	p, ds := Build([]byte(src))
	if len(ds) > 0 {
		t.Fatalf("unexpected diagnostics:\n%s", formatDiags(ds))
	}
	return p
}

func mustBuildFile(t *testing.T, path string) *Plan {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return mustBuild(t, string(src))
}

func ids(f *Flow, idx []int) []string {
	out := []string{}
	for _, i := range idx {
		out = append(out, f.Steps[i].ID)
	}
	return out
}

func TestExamplesAreValid(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "examples", "*.stratum.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 8 {
		t.Fatalf("want at least 8 examples, found %d", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) { mustBuildFile(t, f) })
	}
}

func TestPlanFiveConstructs(t *testing.T) {
	p := mustBuildFile(t, filepath.Join("..", "examples", "five-constructs.stratum.yaml"))
	if p.Entry != "main" || p.EntryFlow() == nil || !p.EntryFlow().IsEntry || p.Flow("summarize").IsEntry {
		t.Fatalf("entry: %q %v", p.Entry, p.EntryFlow())
	}
	f := p.EntryFlow()
	kinds := []StepKind{}
	for _, s := range f.Steps {
		kinds = append(kinds, s.Kind)
	}
	if diff := cmp.Diff([]StepKind{KindDo, KindSet, KindGate, KindFanout, KindRun, KindDo}, kinds); diff != "" {
		t.Errorf("kinds (-want +got):\n%s", diff)
	}
	if got := ids(f, f.Order); !cmp.Equal(got, []string{"analyze", "normalize", "review", "inspect", "child", "finish"}) {
		t.Errorf("order = %v", got)
	}
	finish := f.Step("finish")
	if got := ids(f, finish.Deps); !cmp.Equal(got, []string{"child"}) {
		t.Errorf("finish deps = %v", got)
	}
	if finish.OutContract != p.Contract("Final") {
		t.Error("finish out contract not resolved")
	}
	child := f.Step("child")
	if child.OutContract != p.Contract("Final") || child.Run != "summarize" {
		t.Error("run step must inherit the callee's output contract")
	}
	with, err := child.With.Render(func(r *Ref) (any, error) {
		if r.Kind != RefInput || pathString(r.Path) != ".topic" {
			t.Fatalf("unexpected ref %+v", r)
		}
		return "cats", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	enc, _ := expr.EncodeJSON(with)
	if string(enc) != `{"topic":"cats"}` {
		t.Errorf("with rendered to %s", enc)
	}
	inspect := f.Step("inspect")
	if inspect.Fanout.Dispatch != "engine" || !inspect.Fanout.Require.All || inspect.Fanout.Concurrency != 2 {
		t.Errorf("fanout = %+v", inspect.Fanout)
	}
	if inspect.OutContract != p.Contract("ItemResult") || inspect.Fanout.Stages[0].OutContract != p.Contract("ItemResult") {
		t.Error("fanout output contract is its last stage's")
	}
	if r := inspect.Fanout.Over.Full(); r == nil || r.Kind != RefInput {
		t.Errorf("over = %+v", inspect.Fanout.Over)
	}
	norm := f.Step("normalize")
	if diff := cmp.Diff([]SetField{{"summary", "result.analyze.summary"}, {"score", "result.analyze.score"}}, norm.Set); diff != "" {
		t.Error(diff)
	}
	// Sites: the do of finish references child; the stage do references item.
	if len(finish.Sites) != 1 || finish.Sites[0].Path() != "flows.main.steps[5].do" || finish.Sites[0].Template.Refs()[0].Name != "child" {
		t.Errorf("finish sites = %+v", finish.Sites)
	}
	if len(inspect.Sites) != 2 || inspect.Sites[1].Stage != 0 || inspect.Sites[1].Template.Refs()[0].Kind != RefItem {
		t.Errorf("inspect sites = %+v", inspect.Sites)
	}
}

func TestPlanRouting(t *testing.T) {
	p := mustBuildFile(t, filepath.Join("..", "examples", "on-fail-routing.stratum.yaml"))
	f := p.EntryFlow()
	recover := f.Step("recover")
	if !recover.RouteOnly() || !cmp.Equal(ids(f, recover.RoutedFrom), []string{"generate"}) {
		t.Errorf("recover routed from %v", ids(f, recover.RoutedFrom))
	}
	if f.Step("verify").RouteOnly() {
		t.Error("verify is not route-only")
	}
	pos := map[string]int{}
	for i, s := range f.Order {
		pos[f.Steps[s].ID] = i
	}
	if !(pos["generate"] < pos["recover"] && pos["recover"] < pos["publish"] && pos["verify"] < pos["publish"]) {
		t.Errorf("order = %v", ids(f, f.Order))
	}
	if got := ids(f, f.Step("publish").Deps); !cmp.Equal(got, []string{"verify", "recover"}) {
		t.Errorf("publish deps = %v", got)
	}
}

func TestPlanReviseAndCarry(t *testing.T) {
	p := mustBuildFile(t, filepath.Join("testdata", "conformance", "284-carry-basic.yaml"))
	f := p.EntryFlow()
	if f.MaxRounds != 3 {
		t.Errorf("max_rounds = %d", f.MaxRounds)
	}
	review := f.Step("review")
	if review.Gate.OnRevise != "plan" || review.Gate.MaxRounds != 2 {
		t.Errorf("gate = %+v", review.Gate)
	}
	if got := ids(f, f.ResetClosure(f.Step("plan").Index)); !cmp.Equal(got, []string{"plan", "work", "review", "finish"}) {
		t.Errorf("reset closure = %v", got)
	}
	if len(f.Carry) != 1 {
		t.Fatalf("carry = %+v", f.Carry)
	}
	c := f.Carry[0]
	if c.Name != "wave" || c.Initial.Kind != RefStep || c.Initial.Name != "plan" || pathString(c.Initial.Path) != ".tasks" {
		t.Errorf("carry = %+v", c)
	}
	if len(c.OnRevise) != 1 || c.OnRevise[0].Gate != "review" {
		t.Errorf("on_revise = %+v", c.OnRevise)
	}
	if got := ids(f, c.Consumers); !cmp.Equal(got, []string{"work"}) {
		t.Errorf("consumers = %v", got)
	}
}

func TestPlanFieldsAndEnsures(t *testing.T) {
	p := mustBuild(t, `
version: 1
contracts:
  R: {v: string}
flows:
  entry: main
  main:
    input: {q: string}
    output: {from: "${a.output}", contract: R}
    budget: {usd: 2.5, tokens: 1000}
    steps:
      - id: a
        do: "Work on ${input.q}"
        agent: codex
        out: R
        attempts: 3
        budget: {ms: 5000}
        iterate: {max: 4, until: "result.v == 'x'"}
        ensure:
          - expr: "result.v != ''"
          - file_exists: "out/a \"b\".txt"
          - file_contains: {path: out.txt, text: ok}
          - judged: {statement: "it is good", stakes: cheap}
      - id: e
        after: [a]
        evaluate: {command: "make check", in: "${a.output.v}", timeout_ms: 1000}
`)
	f := p.EntryFlow()
	a := f.Step("a")
	if a.Agent != "codex" || a.Attempts != 3 || a.Iterate.Max != 4 || a.Budget.MS != 5000 || f.Budget.USD != 2.5 || f.Budget.Tokens != 1000 {
		t.Errorf("step a = %+v", a)
	}
	want := []string{`result.v != ''`, `file_exists("out/a \"b\".txt")`, `file_contains("out.txt", "ok")`, ""}
	for i, e := range a.Ensure {
		if e.Expression() != want[i] {
			t.Errorf("ensure[%d].Expression() = %q, want %q", i, e.Expression(), want[i])
		}
	}
	if a.Ensure[3].Stakes != "cheap" {
		t.Error("stakes")
	}
	e := f.Step("e")
	if e.Evaluate.TimeoutMS != 1000 || e.Evaluate.In.Full() == nil || !cmp.Equal(ids(f, e.Deps), []string{"a"}) {
		t.Errorf("evaluate = %+v", e.Evaluate)
	}
	// Input validation through the compiled input contract.
	in := expr.NewObject(1)
	in.Set("q", 1.0)
	errs := f.Input.Validate(in, "input")
	if len(errs) != 1 || errs[0].Path != "input.q" {
		t.Errorf("input errors = %v", errs)
	}
}

func TestTemplateRender(t *testing.T) {
	tmpl, syn, _ := parseTemplate("a ${x.output.n} b ${input.s} c ${input.z} ${input.o}")
	if syn != templateOK {
		t.Fatal("parse")
	}
	obj := expr.NewObject(2)
	obj.Set("k", []any{1.0, "two"})
	vals := map[string]any{"x": 2.5, ".s": "str", ".z": nil, ".o": obj}
	got, err := tmpl.Render(func(r *Ref) (any, error) {
		if r.Kind == RefStep {
			return vals[r.Name], nil
		}
		return vals[pathString(r.Path)], nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got != `a 2.5 b str c  {"k":[1,"two"]}` {
		t.Errorf("render = %q", got)
	}
	full, _, _ := parseTemplate("${input.o}")
	v, _ := full.Render(func(*Ref) (any, error) { return obj, nil })
	if v != any(obj) {
		t.Error("a full-value reference keeps its type")
	}
}

// TestOrderDeclarationWins: Flow.Order is a topological order in which,
// among steps free at the same time, the one declared first comes first.
func TestOrderDeclarationWins(t *testing.T) {
	p := mustBuild(t, `
version: 1
contracts:
  R: {v: string}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${f.output}", contract: R}
    steps:
      - {id: e, do: x, out: R, after: [a]}
      - {id: d, do: x, out: R}
      - {id: b, do: x, out: R, after: [d]}
      - {id: c, do: x, out: R}
      - {id: a, do: x, out: R}
      - {id: f, do: x, out: R, after: [c, b]}
`)
	f := p.EntryFlow()
	var got []string
	for _, i := range f.Order {
		got = append(got, f.Steps[i].ID)
	}
	// Free at first: d, c, a. d goes first and frees b, which was declared
	// before c and a; c frees f (b is done), a frees e, which was declared
	// before f.
	if diff := cmp.Diff([]string{"d", "b", "c", "a", "e", "f"}, got); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}
