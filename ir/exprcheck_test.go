package ir

import (
	"strings"
	"testing"
)

// exprSites places an expression at every site that holds one; %s is the
// expression (already quoted for YAML) and path the field it is at.
var exprSites = []struct {
	name, steps, path string
}{
	{"step when", `
      - {id: a, do: x, out: R, when: %s}
`, "flows.main.steps[0].when"},
	{"set value", `
      - {id: a, set: {v: %s}, out: R}
`, "flows.main.steps[0].set.v"},
	{"iterate until", `
      - {id: a, do: x, out: R, iterate: {max: 2, until: %s}}
`, "flows.main.steps[0].iterate.until"},
	{"step ensure", `
      - {id: a, do: x, out: R, ensure: [{expr: "true"}, {expr: %s}]}
`, "flows.main.steps[0].ensure[1].expr"},
	{"set ensure", `
      - {id: a, set: {v: "'x'"}, out: R, ensure: [{expr: %s}]}
`, "flows.main.steps[0].ensure[0].expr"},
	{"stage when", `
      - {id: f, fanout: {over: "${input.items}", concurrency: 1, isolation: none, require: all, merge: sequential, steps: [{do: "${item}", out: R, when: %s}]}}
      - {id: a, do: x, out: R, after: [f]}
`, "flows.main.steps[0].fanout.steps[0].when"},
	{"stage ensure", `
      - {id: f, fanout: {over: "${input.items}", concurrency: 1, isolation: none, require: all, merge: sequential, steps: [{do: "${item}", out: R, ensure: [{expr: %s}]}]}}
      - {id: a, do: x, out: R, after: [f]}
`, "flows.main.steps[0].fanout.steps[0].ensure[0].expr"},
	{"step when of a step whose construct is unclear", `
      - {id: a, do: x, out: R}
      - {id: b, do: x, set: {v: "1"}, when: %s}
`, "flows.main.steps[1].when"},
}

func TestExpressionSites(t *testing.T) {
	valid := []string{
		`"true"`, `"result.v == 'x' && len(input.items) > 0"`, `"!(1 < 2) || 'a' in 'abc'"`,
		`"matches(input.q, '^a+$')"`, `"result.null == null"`, `"'${a.output}' != ''"`, `"str(-1.5e3) + 'x'"`,
	}
	invalid := []struct{ src, hint string }{
		{`"result.v ==== ("`, `which starts "== ("`},
		{`"result.v === 'x'"`, "there is no ==="},
		{`"${input.q} == 'x'"`, "write input.q for ${input.q}"},
		{`"input.q = 'x'"`, "compare with =="},
		{`"result.ok and input.q"`, "&&, || and !"},
		{`"len(input.items) % 2 == 0"`, "no % operator"},
		{`"result.ok ? 1 : 2"`, "no conditional operator"},
		{`"file_exists("`, "ends too early"},
		{`"'unterminated"`, "close the string"},
		{`"result['k']"`, "non-negative integer literal"},
		{`""`, "ends too early"},
		{`"` + strings.Repeat("(", 200) + "1" + strings.Repeat(")", 200) + `"`, "too large or too deeply nested"},
	}
	for _, site := range exprSites {
		for _, src := range valid {
			ds := Validate(spec(mainHead + "    steps:" + strings.Replace(site.steps, "%s", src, 1)))
			if ds.Has(CodeExprSyntax, "*") {
				t.Errorf("%s: %s: %s", site.name, src, formatDiags(ds))
			}
		}
		for _, c := range invalid {
			ds := Validate(spec(mainHead + "    steps:" + strings.Replace(site.steps, "%s", c.src, 1)))
			found := false
			for _, d := range ds {
				if d.Code == CodeExprSyntax {
					found = true
					if d.Path != site.path || !strings.Contains(d.Message, c.hint) || d.Line < 15 {
						t.Errorf("%s: %s: got %v, want at %s with %q", site.name, c.src, d, site.path, c.hint)
					}
				}
			}
			if !found {
				t.Errorf("%s: %s: no EXPR_SYNTAX in\n%s", site.name, c.src, formatDiags(ds))
			}
		}
	}
}

// TestExpressionHintsBySite checks that the ${...} hint names what result
// holds at each site.
func TestExpressionHintsBySite(t *testing.T) {
	cases := []struct{ site, src, hint string }{
		{"step when", `"${a.output.v} == 'x'"`, "write result.a.v for ${a.output.v}"},
		{"step ensure", `"${a.output.v} == 'x'"`, "other steps' outputs cannot be read"},
		{"stage ensure", `"${item} == 'x'"`, "write item for ${item}"},
		{"set value", `"${wave}"`, "a carry variable cannot be read in an expression"},
	}
	for _, c := range cases {
		for _, site := range exprSites {
			if site.name != c.site {
				continue
			}
			steps := strings.Replace(site.steps, "%s", c.src, 1)
			ds := Validate(spec(mainHead + "    steps:" + steps))
			ok := false
			for _, d := range ds {
				ok = ok || d.Code == CodeExprSyntax && strings.Contains(d.Message, c.hint)
			}
			if !ok {
				t.Errorf("%s: %s: want a hint %q in\n%s", c.site, c.src, c.hint, formatDiags(ds))
			}
		}
	}
}
