package ir

import (
	"slices"
	"sort"
	"strings"
	"testing"
)

// TestIndependentProblems checks that a malformed field of a step (an
// ensure predicate, attempts, budget, iterate, a gate route, a fanout
// stage) does not hide the step's other problems, which it cannot have
// caused: they are all reported in one run (docs/spec-language.md, "Structure"). What
// only repeats the malformed field (a reference into a step whose output
// is unknown, an unknown target when some step id is broken) stays
// suppressed.
func TestIndependentProblems(t *testing.T) {
	cases := map[string]struct {
		steps string
		want  []string // code@path, all of them, in report order
	}{
		"broken ensure with unknown out, bad reference and targets": {`
      - id: a
        do: "${input.dco}"
        out: Sumary
        after: [nope]
        on_fail: gone
        when: "${input.qq} == 1"
        ensure: [{exp: "x"}]
`, []string{
			"SCHEMA_INVALID@flows.main.steps[0].ensure[0]",
			"ROUTING_UNKNOWN_TARGET@flows.main.steps[0].after[0]",
			"REF_UNKNOWN_PATH@flows.main.steps[0].when",
			"EXPR_SYNTAX@flows.main.steps[0].when",
			"REF_UNKNOWN_PATH@flows.main.steps[0].do",
			"CONTRACT_UNKNOWN_REF@flows.main.steps[0].out",
			"ROUTING_UNKNOWN_TARGET@flows.main.steps[0].on_fail",
		}},
		"broken out type hides only what depends on the contract": {`
      - id: a
        do: "${input.dco}"
        out: 5
      - id: b
        do: "${a.output.zz}"
        out: R
`, []string{
			"REF_UNKNOWN_PATH@flows.main.steps[0].do",
			"SCHEMA_INVALID@flows.main.steps[0].out",
		}},
		"references into a step with a broken ensure are checked": {`
      - id: a
        do: x
        out: R
        ensure: [{expr: 1}]
      - id: b
        do: "${a.output.zz}"
        out: R
`, []string{
			"SCHEMA_INVALID@flows.main.steps[0].ensure[0]",
			"REF_UNKNOWN_PATH@flows.main.steps[1].do",
		}},
		"bad attempts, budget and iterate max": {`
      - id: a
        do: "${input.dco}"
        out: Sumary
        attempts: 0
        budget: {usd: "1"}
        iterate: {max: 0, until: "${input.zz} == 1"}
`, []string{
			"REF_UNKNOWN_PATH@flows.main.steps[0].do",
			"CONTRACT_UNKNOWN_REF@flows.main.steps[0].out",
			"SCHEMA_INVALID@flows.main.steps[0].attempts",
			"SCHEMA_INVALID@flows.main.steps[0].iterate.max",
			"REF_UNKNOWN_PATH@flows.main.steps[0].iterate.until",
			"EXPR_SYNTAX@flows.main.steps[0].iterate.until",
			"SCHEMA_INVALID@flows.main.steps[0].budget.usd",
		}},
		"gate with one malformed route": {`
      - {id: a, do: x, out: R}
      - id: g
        after: [a, zz]
        gate: {on_approve: nowhere, on_revise: Bad, on_kill: null}
`, []string{
			"ROUTING_UNKNOWN_TARGET@flows.main.steps[1].after[1]",
			"SCHEMA_INVALID@flows.main.steps[1].gate.on_revise",
			"ROUTING_UNKNOWN_TARGET@flows.main.steps[1].gate.on_approve",
		}},
		"fanout stage with a broken ensure": {`
      - id: f
        fanout:
          over: "${input.itemz}"
          concurrency: 0
          require: all
          isolation: none
          merge: sequential
          steps:
            - do: "${item} ${input.nope}"
              out: Nope
              ensure: [{exp: x}]
            - do: y
              out: R
      - {id: a, do: "${f.output[0].zz}", out: R}
`, []string{
			"REF_UNKNOWN_PATH@flows.main.steps[0].fanout.over",
			"SCHEMA_INVALID@flows.main.steps[0].fanout.concurrency",
			"REF_UNKNOWN_PATH@flows.main.steps[0].fanout.steps[0].do",
			"CONTRACT_UNKNOWN_REF@flows.main.steps[0].fanout.steps[0].out",
			"SCHEMA_INVALID@flows.main.steps[0].fanout.steps[0].ensure[0]",
			"REF_UNKNOWN_PATH@flows.main.steps[1].do",
		}},
		"evaluate with a bad timeout": {`
      - id: a
        evaluate: {command: "true", timeout_ms: 0, in: "${input.nope}"}
        out: Nope
`, []string{
			"SCHEMA_INVALID@flows.main.steps[0].evaluate.timeout_ms",
			"REF_UNKNOWN_PATH@flows.main.steps[0].evaluate.in",
			"CONTRACT_UNKNOWN_REF@flows.main.steps[0].out",
		}},
		"run that is not a string": {`
      - {id: a, run: 5, with: {x: "${input.nope}"}}
`, []string{
			"SCHEMA_INVALID@flows.main.steps[0].run",
			"REF_UNKNOWN_PATH@flows.main.steps[0].with.x",
		}},
		"targets and references of a step with an invalid id": {`
      - {id: a, do: x, out: R}
      - {id: Review, after: [a, nope], gate: {on_approve: null, on_revise: a, on_kill: gone}}
      - {id: c, do: "${review.output.v} ${Review}", after: [review]}
`, []string{
			"SCHEMA_INVALID@flows.main.steps[1].id",
			"ROUTING_UNKNOWN_TARGET@flows.main.steps[1].after[1]",
			"ROUTING_UNKNOWN_TARGET@flows.main.steps[1].gate.on_kill",
			"GATE_REVISE_REQUIRES_MAX_ROUNDS@flows.main.steps[1].gate.on_revise",
			"REF_INVALID@flows.main.steps[2].do",
		}},
		"a step without any id": {`
      - {id: a, do: x, out: R}
      - {do: y, after: [a]}
      - {id: c, do: z, after: [b, a]}
`, []string{
			"SCHEMA_INVALID@flows.main.steps[1].id",
			"ROUTING_UNKNOWN_TARGET@flows.main.steps[2].after[0]",
		}},
		"a step whose construct is unclear": {`
      - id: a
        do: "${input.nope}"
        with: {x: 1}
        out: Nope
        after: [zz]
        on_fail: gone
      - {id: b, do: x, set: {v: "1"}, out: R, after: [yy]}
`, []string{
			"E2_FIELD_FOR_KIND@flows.main.steps[0].with",
			"REF_UNKNOWN_PATH@flows.main.steps[0].do",
			"CONTRACT_UNKNOWN_REF@flows.main.steps[0].out",
			"ROUTING_UNKNOWN_TARGET@flows.main.steps[0].after[0]",
			"ROUTING_UNKNOWN_TARGET@flows.main.steps[0].on_fail",
			"E2_CONSTRUCT_MIX@flows.main.steps[1]",
			"ROUTING_UNKNOWN_TARGET@flows.main.steps[1].after[0]",
		}},
		"malformed after entries keep the positions of the others": {`
      - {id: a, do: x, out: R, after: [Bad, 3, nope]}
`, []string{
			"SCHEMA_INVALID@flows.main.steps[0].after[0]",
			"SCHEMA_INVALID@flows.main.steps[0].after[1]",
			"ROUTING_UNKNOWN_TARGET@flows.main.steps[0].after[2]",
		}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, ds := Build(spec(mainHead + "    steps:" + c.steps))
			var got []string
			for _, d := range ds {
				got = append(got, d.Code+"@"+d.Path)
			}
			// Report order is by position, checked by TestGolden; compare sets.
			sort.Strings(got)
			sort.Strings(c.want)
			if strings.Join(got, " ") != strings.Join(c.want, " ") {
				t.Fatalf("got\n  %s\nwant\n  %s\n%s", strings.Join(got, "\n  "), strings.Join(c.want, "\n  "), formatDiags(ds))
			}
		})
	}
}

// TestFlowOutputHalves checks that output.from and output.contract are
// checked each without the other: a missing contract does not hide a bad
// reference, nor the other way round.
func TestFlowOutputHalves(t *testing.T) {
	for _, c := range []struct{ output, want string }{
		{`{from: "${nope.output}"}`, "SCHEMA_INVALID@flows.main.output.contract REF_UNKNOWN_STEP@flows.main.output.from"},
		{`{contract: Nope}`, "SCHEMA_INVALID@flows.main.output.from CONTRACT_UNKNOWN_REF@flows.main.output.contract"},
	} {
		ds := Validate(spec("  entry: main\n  main:\n    input: {}\n    output: " + c.output + "\n    steps:\n      - {id: a, do: x, out: R}\n"))
		var got []string
		for _, d := range ds {
			got = append(got, d.Code+"@"+d.Path)
		}
		want := strings.Fields(c.want)
		sort.Strings(got)
		sort.Strings(want)
		if !slices.Equal(got, want) {
			t.Errorf("output %s: got %v, want %v", c.output, got, want)
		}
	}
}
