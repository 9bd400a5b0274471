package ir

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratum-go/stratum/expr"
)

// filePredSpec is a spec whose step a (and fanout f's stage, when stage is
// set) carries the predicate pred.
func filePredSpec(pred string, stage bool) []byte {
	steps := "      - {id: a, do: x, out: R, ensure: [" + pred + "]}\n"
	if stage {
		steps = "      - {id: a, do: x, out: R}\n      - {id: f, after: [a], fanout: {over: \"${input.items}\", concurrency: 1, isolation: none, require: all, merge: sequential, steps: [{do: \"${item}\", out: R, ensure: [" + pred + "]}]}}\n"
	}
	return spec(mainHead + "    steps:\n" + steps)
}

// TestFilePredicateInterpolation checks every form of file predicate: the
// expression it stands for, and what it evaluates to against real files,
// with the bindings the engine gives an ensure.
func TestFilePredicateInterpolation(t *testing.T) {
	root := t.TempDir()
	for name, body := range map[string]string{"lib.go": "package lib // module x", "src/lib/main.go": "x", "a b.txt": "said \"hi\""} {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	input := expr.NewObject(2)
	input.Set("q", "lib")
	input.Set("items", []any{"lib.go"})
	cases := []struct {
		pred  string
		stage bool
		want  string // Ensure.Expression()
		holds bool
	}{
		{`{file_exists: "lib.go"}`, false, `file_exists("lib.go")`, true},
		{`{file_exists: "${input.q}"}`, false, `file_exists(input.q)`, false}, // "lib" is a directory
		{`{file_exists: "${input.q}.go"}`, false, `file_exists(str(input.q) + ".go")`, true},
		{`{file_exists: "src/${input.q}/main.go"}`, false, `file_exists("src/" + str(input.q) + "/main.go")`, true},
		{`{file_exists: "${input.items[0]}"}`, false, `file_exists(input.items[0])`, true},
		{`{file_contains: {path: "${input.q}.go", text: "package ${input.q}"}}`, false, `file_contains(str(input.q) + ".go", "package " + str(input.q))`, true},
		{`{file_contains: {path: "a b.txt", text: "said \"hi\""}}`, false, `file_contains("a b.txt", "said \"hi\"")`, true},
		{`{file_contains: {path: "lib.go", text: "${input.q}x"}}`, false, `file_contains("lib.go", str(input.q) + "x")`, false},
		{`{file_exists: "${item}"}`, true, `file_exists(item)`, true},
		{`{file_contains: {path: "${item}", text: "module ${prev}"}}`, true, `file_contains(item, "module " + str(prev))`, false},
	}
	for _, c := range cases {
		plan, ds := Build(filePredSpec(c.pred, c.stage))
		if len(ds) > 0 {
			t.Errorf("%s: %s", c.pred, formatDiags(ds))
			continue
		}
		f := plan.EntryFlow()
		ens := f.Step("a").Ensure
		b := expr.Bindings{Result: expr.Bind(expr.NewObject(0)), Input: expr.Bind(input)}
		if c.stage {
			ens = f.Step("f").Fanout.Stages[0].Ensure
			b.Item, b.Prev = expr.Bind("lib.go"), expr.Bind("y")
		}
		got := ens[0].Expression()
		if got != c.want {
			t.Errorf("%s: expression %s, want %s", c.pred, got, c.want)
			continue
		}
		p, err := expr.Compile(got)
		if err != nil {
			t.Errorf("%s: %v", got, err)
			continue
		}
		holds, err := p.EvalPredicate(context.Background(), b, &expr.EvalOptions{WorkspaceRoot: root})
		if err != nil || holds != c.holds {
			t.Errorf("%s: %s gave %v, %v; want %v", c.pred, got, holds, err, c.holds)
		}
		for _, s := range f.Step("a").Sites {
			if strings.Contains(s.Path(), "file_") {
				t.Errorf("%s: a file predicate is a Site: %s", c.pred, s.Path())
			}
		}
	}
}

// TestFilePredicateRefusals checks what a file predicate cannot read: each
// is reported at the path or text, never accepted and taken literally.
func TestFilePredicateRefusals(t *testing.T) {
	const at = "flows.main.steps[0].ensure[0]"
	cases := []struct {
		pred  string
		stage bool
		code  string
		path  string
		hint  string
	}{
		{`{file_exists: "${input.nope}"}`, false, CodeUnknownPath, at + ".file_exists", "no field nope"},
		{`{file_exists: "${nonexistent_step.output.path}"}`, false, CodeUnknownStep, at + ".file_exists", "not a step"},
		{`{file_exists: "${a.output.v}"}`, false, CodeRefScope, at + ".file_exists", "an ensure sees only result"},
		{`{file_contains: {path: "x", text: "${item}"}}`, false, CodeRefScope, at + ".file_contains.text", "only available inside a fanout stage"},
		{`{file_contains: {path: "${prev}", text: "x"}}`, false, CodeRefScope, at + ".file_contains.path", "only available inside a fanout stage"},
		{`{file_exists: "${result.path}"}`, false, CodeCarryInExpr, at + ".file_exists", `expr: "file_exists(result.path)"`},
		{`{file_exists: "${wave}"}`, false, CodeCarryInExpr, at + ".file_exists", "carry variable"},
		{`{file_exists: "${ input.q }"}`, false, CodeRefInvalid, at + ".file_exists", "malformed reference"},
		{`{file_contains: {path: "../${x", text: "t"}}`, false, CodeRefInvalid, at + ".file_contains.path", "malformed reference"},
		{`{file_exists: "${a.output.v}"}`, true, CodeRefScope, "flows.main.steps[1].fanout.steps[0].ensure[0].file_exists", "an ensure sees only result"},
	}
	for _, c := range cases {
		ds := Validate(filePredSpec(c.pred, c.stage))
		ok := false
		for _, d := range ds {
			ok = ok || d.Code == c.code && d.Path == c.path && strings.Contains(d.Message, c.hint)
		}
		if !ok {
			t.Errorf("%s: want %s at %s with %q, got:\n%s", c.pred, c.code, c.path, c.hint, formatDiags(ds))
		}
	}
}
