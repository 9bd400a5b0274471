package mcp

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stratum-go/stratum/ir"
)

// The language reference (language.md) is what a model learns the
// language from, so it must not drift from the validator: every YAML
// example in it is valid, and every trap it lists is refused with the code
// it names while what it says to write instead is valid.

// yamlBlocks returns the ```yaml blocks of a Markdown text.
func yamlBlocks(md string) []string {
	var out []string
	for _, m := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(md, -1) {
		out = append(out, m[1])
	}
	return out
}

func TestLanguageExamplesAreValid(t *testing.T) {
	blocks := yamlBlocks(Language())
	if len(blocks) < 10 {
		t.Fatalf("the reference has %d YAML examples; it should show every construct", len(blocks))
	}
	for i, b := range blocks {
		if ds := ir.Validate([]byte(b)); len(ds) > 0 {
			t.Errorf("example %d of language.md does not validate:\n%s\n%v", i+1, b, ds)
		}
	}
}

// TestLanguageCoversEveryConstruct: each construct and field a model
// needs appears in some example of the reference (not only in prose).
func TestLanguageCoversEveryConstruct(t *testing.T) {
	all := strings.Join(yamlBlocks(Language()), "\n")
	for _, want := range []string{
		"do:", "out:", "ensure:", "- expr:", "- file_exists:", "- file_contains:", "- judged:", "attempts:", "on_fail:",
		"set:", "when:", "after:", "gate:", "on_approve:", "on_revise:", "on_kill:", "max_rounds:",
		"fanout:", "dispatch: consumer", "${item}", "run:", "with:", "iterate:", "until:", "evaluate:", "budget:",
		`"string[]"`, "?", "|", "Finding[]", "output: {from:", "file_exists: \"${input.",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("no example of the reference shows %q", want)
		}
	}
}

// trap is one row of the reference's traps table, made into specs: wrong
// holds the row's Written text and is refused with the row's code; right
// is what the row says to write instead (the Written text replaced by the
// Instead text when right is empty).
type trap struct {
	wrong, right string
}

// spec is a one-flow spec around steps (and flow-level lines).
func spec(contracts, flowExtra, steps string) string {
	return "version: 1\ncontracts:\n" + contracts + "flows:\n  entry: main\n  main:\n" +
		"    input: {module: string, strict: boolean}\n    output: {from: \"${a.output}\", contract: R}\n" + flowExtra +
		"    steps:\n" + steps
}

const trapContracts = "  R: {ok: boolean, done: boolean, verdict: string, kind: string, path: string}\n  P: {path: string, items: \"I[]\"}\n  I: {name: string}\n"

var traps = map[string]trap{
	"`input: {files: string[]}`": {
		wrong: "version: 1\ncontracts: {}\nflows:\n  entry: m\n  m:\n    input: {files: string[]}\n    output: {from: \"${a.output}\", contract: R}\n    steps:\n      - id: a\n        do: x\n",
		right: "version: 1\ncontracts:\n  R: {n: integer}\nflows:\n  entry: m\n  m:\n    input: {files: \"string[]\"}\n    output: {from: \"${a.output}\", contract: R}\n    steps:\n      - id: a\n        do: x\n        out: R\n",
	},
	"`do: Fix: the bug`":                    {wrong: spec(trapContracts, "", "      - id: a\n        do: Fix: the bug\n        out: R\n")},
	"`when: \"${input.strict} == true\"`":   {wrong: spec(trapContracts, "", "      - id: a\n        when: \"${input.strict} == true\"\n        do: x\n        out: R\n")},
	"`expr: \"result.verdict === 'ok'\"`":   {wrong: spec(trapContracts, "", "      - id: a\n        do: x\n        out: R\n        ensure:\n          - expr: \"result.verdict === 'ok'\"\n")},
	"`expr: \"result.ok and result.done\"`": {wrong: spec(trapContracts, "", "      - id: a\n        do: x\n        out: R\n        ensure:\n          - expr: \"result.ok and result.done\"\n")},
	"`expr: \"'a' in ['a', 'b']\"`":         {wrong: spec(trapContracts, "", "      - id: a\n        do: x\n        out: R\n        ensure:\n          - expr: \"'a' in ['a', 'b']\"\n")},
	"`file_exists: \"${plan.output.path}\"`": {wrong: spec(trapContracts, "",
		"      - id: plan\n        do: p\n        out: P\n      - id: a\n        after: [plan]\n        do: x\n        out: R\n        ensure:\n          - file_exists: \"${plan.output.path}\"\n")},
	"`file_exists: \"${result.path}\"`": {wrong: spec(trapContracts, "", "      - id: a\n        do: x\n        out: R\n        ensure:\n          - file_exists: \"${result.path}\"\n")},
	"`do: \"Fix ${input.modul}\"`":      {wrong: spec(trapContracts, "", "      - id: a\n        do: \"Fix ${input.modul}\"\n        out: R\n")},
	"`do: \"Use ${plan.output.items.name}\"`": {wrong: spec(trapContracts, "",
		"      - id: plan\n        do: p\n        out: P\n      - id: a\n        do: \"Use ${plan.output.items.name}\"\n        out: R\n")},
	"`from: \"${files.output}\"` (a fanout)": {
		wrong: "version: 1\ncontracts:\n  R: {ok: boolean}\nflows:\n  entry: m\n  m:\n    input: {files: \"string[]\"}\n    output: {from: \"${files.output}\", contract: R}\n    steps:\n" +
			"      - id: files\n        fanout:\n          over: \"${input.files}\"\n          dispatch: consumer\n          concurrency: 1\n          isolation: none\n          require: all\n          merge: sequential\n          steps:\n            - do: \"Check ${item}\"\n              out: R\n",
	},
	"`on_revise: review` without flow `max_rounds`": {
		wrong: spec(trapContracts, "", "      - id: a\n        do: x\n        out: R\n      - id: review\n        do: r\n      - id: g\n        after: [a, review]\n        gate: {on_approve: null, on_revise: review, on_kill: null}\n"),
		right: spec(trapContracts, "    max_rounds: 3\n", "      - id: a\n        do: x\n        out: R\n      - id: review\n        do: r\n      - id: g\n        after: [a, review]\n        gate: {on_approve: null, on_revise: review, on_kill: null}\n"),
	},
	"`on_revise: deploy` (a step after the gate)": {
		wrong: spec(trapContracts, "    max_rounds: 3\n", "      - id: a\n        do: x\n        out: R\n      - id: g\n        after: [a]\n        gate: {on_approve: null, on_revise: deploy, on_kill: null}\n      - id: deploy\n        after: [g]\n        do: d\n"),
		right: spec(trapContracts, "    max_rounds: 3\n", "      - id: a\n        do: x\n        out: R\n      - id: g\n        after: [a]\n        gate: {on_approve: null, on_revise: a, on_kill: null}\n      - id: deploy\n        after: [g]\n        do: d\n"),
	},
	"`set: {count: 1}`": {
		wrong: "version: 1\ncontracts:\n  C: {count: integer}\nflows:\n  entry: m\n  m:\n    input: {}\n    output: {from: \"${a.output}\", contract: C}\n    steps:\n      - id: a\n        set: {count: 1}\n        out: C\n",
	},
	"`id: Review`": {wrong: spec(trapContracts, "", "      - id: a\n        do: x\n        out: R\n      - id: Review\n        do: r\n")},
	"`with:` missing a callee input": {
		wrong: "version: 1\ncontracts:\n  R: {ok: boolean}\nflows:\n  entry: m\n  m:\n    input: {}\n    output: {from: \"${a.output}\", contract: R}\n    steps:\n      - id: a\n        run: sub\n        with: {x: 1}\n  sub:\n    input: {x: integer, y: string}\n    output: {from: \"${b.output}\", contract: R}\n    steps:\n      - id: b\n        do: \"${input.y}\"\n        out: R\n",
		right: "version: 1\ncontracts:\n  R: {ok: boolean}\nflows:\n  entry: m\n  m:\n    input: {}\n    output: {from: \"${a.output}\", contract: R}\n    steps:\n      - id: a\n        run: sub\n        with: {x: 1, y: \"two\"}\n  sub:\n    input: {x: integer, y: string}\n    output: {from: \"${b.output}\", contract: R}\n    steps:\n      - id: b\n        do: \"${input.y}\"\n        out: R\n",
	},
	"reading `${draft.output}` of a step without `out`": {
		wrong: spec(trapContracts, "", "      - id: draft\n        do: d\n      - id: a\n        do: \"Check ${draft.output}\"\n        out: R\n"),
		right: spec(trapContracts+"  Draft: {text: string}\n", "", "      - id: draft\n        do: d\n        out: Draft\n      - id: a\n        do: \"Check ${draft.output}\"\n        out: R\n"),
	},
}

// trapRows parses the traps table of the reference: Written, code,
// Instead (cells split on unescaped pipes).
func trapRows(t *testing.T, md string) [][3]string {
	t.Helper()
	_, section, ok := strings.Cut(md, "## Traps")
	if !ok {
		t.Fatal("the reference has no Traps section")
	}
	var rows [][3]string
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| Written") || strings.HasPrefix(line, "| ---") {
			continue
		}
		cells := regexp.MustCompile(`\s*[^\\]\|\s*`).Split(strings.TrimSuffix(strings.TrimPrefix(line, "| "), " |"), -1)
		if len(cells) != 3 {
			t.Fatalf("a traps row without 3 cells: %q (%q)", line, cells)
		}
		rows = append(rows, [3]string{cells[0], strings.Trim(cells[1], "`"), strings.ReplaceAll(cells[2], `\|`, "|")})
	}
	return rows
}

// firstCode is the first `code span` of a cell.
func firstCode(cell string) string {
	m := regexp.MustCompile("`([^`]*)`").FindStringSubmatch(cell)
	if m == nil {
		return ""
	}
	return strings.ReplaceAll(m[1], `\|`, "|")
}

func TestLanguageTraps(t *testing.T) {
	rows := trapRows(t, Language())
	var seen []string
	for _, row := range rows {
		written, code, instead := row[0], row[1], row[2]
		seen = append(seen, written)
		tr, ok := traps[written]
		if !ok {
			t.Errorf("trap %s has no test case in language_test.go", written)
			continue
		}
		wrongText := firstCode(written)
		if !strings.Contains(tr.wrong, wrongText) {
			t.Errorf("trap %s: the test spec does not contain %q", written, wrongText)
		}
		ds := ir.Validate([]byte(tr.wrong))
		if !slices.ContainsFunc(ds, func(d ir.Diagnostic) bool { return d.Code == code }) {
			t.Errorf("trap %s: refused as %v, the reference says %s", written, codes(ds), code)
		}
		right := tr.right
		if right == "" {
			right = strings.Replace(tr.wrong, wrongText, firstCode(instead), 1)
		}
		if ds := ir.Validate([]byte(right)); len(ds) > 0 {
			t.Errorf("trap %s: what the reference says to write instead (%s) does not validate: %v\n%s", written, instead, ds, right)
		}
	}
	for k := range traps {
		if !slices.Contains(seen, k) {
			t.Errorf("test case %s is not a row of the reference's traps", k)
		}
	}
}

func codes(ds ir.Diagnostics) string {
	var out []string
	for _, d := range ds {
		out = append(out, fmt.Sprintf("%s (%s)", d.Code, d.Message))
	}
	return strings.Join(out, "; ")
}
