package ir

import (
	"strings"
	"testing"
)

// spec wraps flow YAML (indented for the flows mapping) into a document
// with contracts R {v: string}, Plan {tasks: string[]}, and an entry flow.
func spec(flows string) []byte {
	return []byte("version: 1\ncontracts:\n  R:\n    v: string\n  Plan:\n    tasks: string[]\nflows:\n" + flows)
}

const mainHead = `  entry: main
  main:
    input:
      q: string
      items: string[]
    output:
      from: "${a.output}"
      contract: R
`

func TestSemanticRules(t *testing.T) {
	cases := []struct {
		name, flows, code, path string
	}{
		{"self data reference", mainHead + `    steps:
      - {id: a, do: "${a.output.v}", out: R}
`, CodeSelfTarget, "flows.main.steps[0].do"},
		{"approve to an ancestor", mainHead + `    steps:
      - {id: a, do: x, out: R}
      - id: g
        after: [a]
        gate: {on_approve: a, on_revise: null, on_kill: null}
`, CodeCycle, "flows.main.steps[1].gate.on_approve"},
		{"revise to an unknown step without max_rounds", mainHead + `    steps:
      - {id: a, do: x, out: R}
      - {id: g, after: [a], gate: {on_approve: null, on_revise: nope, on_kill: null}}
`, CodeReviseRounds, "flows.main.steps[1].gate.on_revise"},
		{"revise to itself", strings.Replace(mainHead, "    steps", "    max_rounds: 2\n    steps", 1) + `    max_rounds: 2
    steps:
      - {id: a, do: x, out: R}
      - {id: g, after: [a], gate: {on_approve: null, on_revise: g, on_kill: null}}
`, CodeSelfTarget, "flows.main.steps[1].gate.on_revise"},
		{"bare input is a carry reference", mainHead + `    steps:
      - {id: a, do: "${input}", out: R}
`, CodeUnknownCarry, "flows.main.steps[0].do"},
		{"carry-shaped reference in an expression", mainHead + `    steps:
      - {id: a, do: x, out: R, when: "${input[0]} == 1"}
`, CodeCarryInExpr, "flows.main.steps[0].when"},
		{"output.from reading the input", strings.Replace(mainHead, "${a.output}", "${input.q}", 1) + `    steps:
      - {id: a, do: x, out: R}
`, CodeRefInvalid, "flows.main.output.from"},
		{"output.from of a whole fanout", strings.Replace(mainHead, "${a.output}", "${a.output}", 1) + `    steps:
      - id: a
        fanout: {over: "${input.items}", steps: [{do: "${item}", out: R}], concurrency: 1, isolation: none, require: all, merge: sequential}
`, CodeUnknownPath, "flows.main.output.from"},
		{"output.from of a fanout without final out", strings.Replace(mainHead, "${a.output}", "${a.output[0]}", 1) + `    steps:
      - id: a
        fanout: {over: "${input.items}", steps: [{do: "${item}", out: R}, {do: "${prev}"}], concurrency: 1, isolation: none, require: all, merge: sequential}
`, CodeFinalOut, "flows.main.steps[0].fanout.steps[1].out"},
		{"callee output contract undeclared", mainHead + `    steps:
      - {id: a, run: sub, with: {}}
  sub:
    input: {}
    output: {from: "${s.output}", contract: Nope}
    steps:
      - {id: s, do: x, out: R}
`, CodeContractRef, "flows.main.steps[0].out"},
		{"run entry", mainHead + `    steps:
      - {id: a, run: entry, with: {}}
`, CodeSubflowUnknown, "flows.main.steps[0].run"},
		{"run toString", mainHead + `    steps:
      - {id: a, run: toString, with: {}}
`, CodeSubflowUnknown, "flows.main.steps[0].run"},
		{"entry toString", strings.Replace(mainHead, "entry: main", "entry: toString", 1) + `    steps:
      - {id: a, do: x, out: R}
`, CodeUnknownEntry, "flows.entry"},
		{"input.constructor", mainHead + `    steps:
      - {id: a, do: "${input.constructor}", out: R}
`, CodeUnknownPath, "flows.main.steps[0].do"},
		{"consumer worktree file_contains", strings.Replace(mainHead, "${a.output}", "${a.output[0]}", 1) + `    steps:
      - id: a
        fanout:
          over: "${input.items}"
          steps:
            - do: "${item}"
              out: R
              ensure: [{expr: "true"}, {file_contains: {path: p, text: t}}]
          concurrency: 1
          isolation: worktree
          require: all
          merge: sequential
          dispatch: consumer
      - {id: g, after: [a], gate: {on_approve: null, on_revise: null, on_kill: null}}
`, CodeWorktreeFS, "flows.main.steps[0].fanout.steps[0].ensure[1]"},
		{"consumer worktree predicate after a malformed one", strings.Replace(mainHead, "${a.output}", "${a.output[0]}", 1) + `    steps:
      - id: a
        fanout:
          over: "${input.items}"
          steps:
            - {do: "${item}", out: R, ensure: [{expr: "x", bogus: 1}, {file_exists: p}]}
          concurrency: 1
          isolation: worktree
          require: all
          merge: sequential
          dispatch: consumer
      - {id: g, after: [a], gate: {on_approve: null, on_revise: null, on_kill: null}}
`, CodeWorktreeFS, "flows.main.steps[0].fanout.steps[0].ensure[1]"},
		{"consumer worktree file call in stage when", strings.Replace(mainHead, "${a.output}", "${a.output[0]}", 1) + `    steps:
      - id: a
        fanout:
          over: "${input.items}"
          steps:
            - {do: "${item}", out: R, when: "file_exists ('x') && true"}
          concurrency: 1
          isolation: worktree
          require: all
          merge: sequential
          dispatch: consumer
      - {id: g, after: [a], gate: {on_approve: null, on_revise: null, on_kill: null}}
`, CodeWorktreeFS, "flows.main.steps[0].fanout.steps[0].when"},
		{"consumer worktree gate with when", strings.Replace(mainHead, "${a.output}", "${a.output[0]}", 1) + `    steps:
      - id: a
        fanout: {over: "${input.items}", steps: [{do: "${item}", out: R}], concurrency: 1, isolation: worktree, require: all, merge: sequential, dispatch: consumer}
      - {id: g, after: [a], when: "true", gate: {on_approve: null, on_revise: null, on_kill: null}}
`, CodeWorktreeGate, "flows.main.steps[0].fanout.isolation"},
		{"carry read by its own source", mainHead + `    carry:
      wave: {initial: "${a.output.v}"}
    steps:
      - {id: a, do: "${wave}", out: R}
`, CodeCarryBefore, "flows.main.steps[0].do"},
		{"carry revise value of item", mainHead + `    max_rounds: 2
    carry:
      wave:
        initial: "${input.items}"
        on_revise: {g: "${item}"}
    steps:
      - {id: a, do: x, out: R}
      - {id: g, after: [a], gate: {on_approve: null, on_revise: a, on_kill: null}}
`, CodeCarryRef, "flows.main.carry.wave.on_revise.g"},
		{"infinite budget", strings.Replace(mainHead, "    steps", "", 1) + `    budget: {usd: .inf}
    steps:
      - {id: a, do: x, out: R}
`, CodeSchemaInvalid, "flows.main.budget.usd"},
		{"with on a do step", mainHead + `    steps:
      - {id: a, do: x, out: R, with: {}}
`, CodeFieldForKind, "flows.main.steps[0].with"},
		{"on_fail on a set step", mainHead + `    steps:
      - {id: a, set: {v: "'x'"}, out: R, on_fail: b}
      - {id: b, do: x}
`, CodeFieldForKind, "flows.main.steps[0].on_fail"},
		{"item in evaluate.in", mainHead + `    steps:
      - {id: a, evaluate: {command: c, in: "${item}", timeout_ms: 5}, out: R}
`, CodeRefScope, "flows.main.steps[0].evaluate.in"},
		{"prev in fanout.over", strings.Replace(mainHead, "${a.output}", "${a.output[0]}", 1) + `    steps:
      - id: a
        fanout: {over: "${prev}", steps: [{do: "${item}", out: R}], concurrency: 1, isolation: none, require: all, merge: sequential}
`, CodeRefScope, "flows.main.steps[0].fanout.over"},
		{"reference in when orders the step", mainHead + `    steps:
      - {id: a, do: x, out: R, after: [b]}
      - {id: b, do: x, out: R, when: "${a.output.v} == 'x'"}
`, CodeCycle, "flows.main.steps[1].when"},
		{"carry output path", mainHead + `    carry:
      wave: {initial: "${input.items}"}
    steps:
      - {id: a, do: "${wave.output[0]}", out: R}
`, CodeCarryPathRes, "flows.main.steps[0].do"},
		{"fanout in a subflow only", mainHead + `    steps:
      - {id: a, do: x, out: R}
  sub:
    input: {items: "string[]"}
    output: {from: "${f.output[0]}", contract: R}
    steps:
      - id: f
        fanout: {over: "${input.items}", steps: [{do: "${item}", out: R}], concurrency: 1, isolation: worktree, require: all, merge: sequential, dispatch: consumer}
`, CodeSubflowBody, "flows.sub.steps[0].fanout"},
		{"malformed reference in an expression string", mainHead + `    steps:
      - {id: a, do: x, out: R, ensure: [{expr: "result.v != '${'"}]}
`, CodeRefInvalid, "flows.main.steps[0].ensure[0].expr"},
		{"evaluate without out referenced", mainHead + `    steps:
      - {id: e, evaluate: {command: c, timeout_ms: 5}}
      - {id: a, do: "${e.output}", out: R}
`, CodeOutRequired, "flows.main.steps[1].do"},
		{"with strings are checked", mainHead + `    steps:
      - {id: a, run: sub, with: {x: {deep: ["${input.nope}"]}}}
  sub:
    input: {x: object}
    output: {from: "${s.output}", contract: R}
    steps:
      - {id: s, do: x, out: R}
`, CodeUnknownPath, "flows.main.steps[0].with.x.deep[0]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, ds := Build(spec(c.flows))
			if !ds.Has(c.code, c.path) {
				t.Fatalf("want %s at %s, got:\n%s", c.code, c.path, formatDiags(ds))
			}
		})
	}
}

func TestSemanticValid(t *testing.T) {
	cases := map[string]string{
		"revise reaches through an on_fail route": mainHead + `    max_rounds: 2
    steps:
      - {id: a, do: x, out: R, on_fail: fix}
      - {id: fix, do: x, out: R}
      - {id: g, after: [fix], gate: {on_approve: null, on_revise: a, on_kill: null}}
`,
		"gate with revise inside a subflow": mainHead + `    steps:
      - {id: a, run: sub, with: {}}
  sub:
    input: {}
    max_rounds: 1
    output: {from: "${s.output}", contract: R}
    steps:
      - {id: s, do: x, out: R}
      - {id: g, after: [s], gate: {on_approve: null, on_revise: s, on_kill: null}}
`,
		"lowercase contract from out and output.contract": `  entry: main
  main:
    input: {}
    output: {from: "${a.output.x}", contract: R}
    steps:
      - {id: a, do: x, out: low}
`,
		"file function inside a string literal": strings.Replace(mainHead, "${a.output}", "${a.output[0]}", 1) + `    steps:
      - id: a
        fanout:
          over: "${input.items}"
          steps:
            - {do: "${item}", out: R, ensure: [{expr: "result.v != 'file_exists(x)'"}, {expr: "result.file_exists == 1"}]}
          concurrency: 1
          isolation: worktree
          require: all
          merge: sequential
          dispatch: consumer
      - {id: g, after: [a], gate: {on_approve: null, on_revise: null, on_kill: null}}
`,
		"untyped object and array paths": `  entry: main
  main:
    input: {o: object, l: array, r: "R[]"}
    output: {from: "${a.output}", contract: R}
    steps:
      - {id: a, do: "${input.o.any.thing[3]} ${input.l[0].x.y} ${input.r[01].v}", out: R}
`,
	}
	for name, flows := range cases {
		t.Run(name, func(t *testing.T) {
			src := spec(flows)
			if strings.Contains(flows, "out: low") {
				src = []byte(strings.Replace(string(src), "contracts:\n", "contracts:\n  low:\n    x: string\n", 1))
			}
			if _, ds := Build(src); len(ds) > 0 {
				t.Fatalf("want valid, got:\n%s", formatDiags(ds))
			}
		})
	}
}

func TestUsesFileFunctions(t *testing.T) {
	cases := map[string]bool{
		`file_exists("a")`:                  true,
		`x && file_contains('a', 'b')`:      true,
		`file_exists ("a")`:                 true,
		`!file_exists("a")`:                 true,
		`len(file_exists("a"))`:             true,
		`"file_exists(a)" == x`:             false,
		`'it\'s file_exists(' == x`:         false,
		`result.file_exists("a")`:           false,
		`file_exists`:                       false,
		`file_exists(`:                      false,
		`file_exists("a"`:                   false,
		`file_exists("a")) `:                false,
		`my_file_exists("a")`:               false,
		`"unterminated file_exists("a")`:    false,
		`x == 1 || file_contains("p", "t")`: true,
	}
	for src, want := range cases {
		if got := (&validator{}).usesFileFunctions(src); got != want {
			t.Errorf("usesFileFunctions(%q) = %v, want %v", src, got, want)
		}
	}
}

// TestNoCascades checks that one mistake is reported once, not again
// through everything that depends on it.
func TestNoCascades(t *testing.T) {
	cases := map[string]struct {
		src  string
		want []string // code@path, all of them
	}{
		"missing contracts": {`version: 1
flows:
  entry: main
  main:
    input: {q: Item}
    output: {from: "${a.output.v}", contract: R}
    steps:
      - {id: a, do: x, out: R}
`, []string{"SCHEMA_INVALID@contracts"}},
		"step without a valid id": {string(spec(strings.Replace(mainHead, "${a.output}", "${build.output}", 1) + `    steps:
      - {id: Build, do: x, out: R}
      - {id: b, do: "${build.output}", after: [build, BUILD], out: R}
`)), []string{"SCHEMA_INVALID@flows.main.steps[0].id", "SCHEMA_INVALID@flows.main.steps[1].after[1]"}},
		"unknown output contract": {string(spec(mainHead + `    steps:
      - {id: a, do: x, out: Nope}
      - {id: b, do: "${a.output.anything}", out: R}
`)), []string{"CONTRACT_UNKNOWN_REF@flows.main.steps[0].out"}},
		"invalid field type": {`version: 1
contracts: {R: {v: date}}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${a.output.v.deep}", contract: R}
    steps:
      - {id: a, do: x, out: R}
`, []string{"CONTRACT_INVALID_TYPE@contracts.R.v"}},
		"step with mixed constructs": {string(spec(mainHead + `    steps:
      - {id: a, do: x, gate: {on_approve: null, on_revise: null, on_kill: null}}
      - {id: b, do: "${a.output.v}", out: R}
`)), []string{"E2_CONSTRUCT_MIX@flows.main.steps[0]"}},
		"unknown subflow": {string(spec(mainHead + `    steps:
      - {id: a, run: nope, with: {}}
      - {id: b, do: "${a.output.v}", out: R}
`)), []string{"SUBFLOW_UNKNOWN@flows.main.steps[0].run"}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, ds := Build([]byte(c.src))
			var got []string
			for _, d := range ds {
				got = append(got, d.Code+"@"+d.Path)
			}
			if strings.Join(got, " ") != strings.Join(c.want, " ") {
				t.Fatalf("got %v, want %v:\n%s", got, c.want, formatDiags(ds))
			}
		})
	}
}
