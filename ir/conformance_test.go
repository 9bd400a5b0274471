package ir

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// conformanceCase is one corpus file: line 1 "# expect: valid" or
// "# expect: invalid CODE", line 3 optionally "# path: P". The published
// corpus is testdata/conformance; testdata/extra holds cases of the same
// form written for this port, one per rule of the reference validator that
// the published corpus does not pin.
type conformanceCase struct {
	name    string
	src     []byte
	valid   bool
	code    string
	path    string
	hasPath bool
}

func loadConformance(t testing.TB) []conformanceCase {
	t.Helper()
	var out []conformanceCase
	for _, dir := range []string{"conformance", "extra"} {
		files, err := filepath.Glob(filepath.Join("testdata", dir, "*.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if len(files) == 0 {
			t.Fatalf("no files in testdata/%s", dir)
		}
		for _, f := range files {
			out = append(out, readConformanceCase(t, dir, f))
		}
	}
	return out
}

func readConformanceCase(t testing.TB, dir, f string) conformanceCase {
	t.Helper()
	src, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	c := conformanceCase{name: dir + "/" + filepath.Base(f), src: src}
	sc := bufio.NewScanner(bytes.NewReader(src))
	var lines []string
	for i := 0; i < 3 && sc.Scan(); i++ {
		lines = append(lines, sc.Text())
	}
	if len(lines) == 0 {
		t.Fatalf("%s: empty file", f)
	}
	expect, ok := strings.CutPrefix(lines[0], "# expect: ")
	if !ok {
		t.Fatalf("%s: line 1 is not an expectation: %q", f, lines[0])
	}
	if expect == "valid" {
		c.valid = true
	} else if code, ok := strings.CutPrefix(expect, "invalid "); ok {
		c.code = strings.TrimSpace(code)
	} else {
		t.Fatalf("%s: bad expectation %q", f, expect)
	}
	if len(lines) > 2 {
		if p, ok := strings.CutPrefix(lines[2], "# path:"); ok {
			c.path, c.hasPath = strings.TrimPrefix(p, " "), true
		}
	}
	return c
}

func TestConformance(t *testing.T) {
	for _, c := range loadConformance(t) {
		t.Run(c.name, func(t *testing.T) {
			plan, ds := Build(c.src)
			if c.valid {
				if len(ds) > 0 && onlyDeliberate(ds) {
					// The reference accepts a spec whose expression does not
					// parse; this port reports it (docs/decisions/0020).
					t.Logf("valid in the reference, refused on purpose:\n%s", formatDiags(ds))
					return
				}
				if len(ds) > 0 {
					t.Fatalf("want valid, got:\n%s", formatDiags(ds))
				}
				if plan == nil {
					t.Fatal("valid spec gave no plan")
				}
				return
			}
			if plan != nil {
				t.Fatalf("want %s, got a plan", c.code)
			}
			for _, d := range ds {
				if d.Code == c.code && (!c.hasPath || d.Path == c.path) {
					return
				}
			}
			t.Fatalf("want %s at %q, got:\n%s", c.code, c.path, formatDiags(ds))
		})
	}
}

// onlyDeliberate reports whether every diagnostic is one this port reports
// on purpose where the reference accepts the spec (docs/decisions/0020):
// an expression that does not parse (EXPR_SYNTAX), or a ${...} reference
// in a file predicate, which the reference takes literally (diagnostics at
// a file_exists path or a file_contains path or text, where the reference
// reports nothing).
func onlyDeliberate(ds Diagnostics) bool {
	for _, d := range ds {
		if d.Code != CodeExprSyntax && !strings.HasSuffix(d.Path, ".file_exists") &&
			!strings.HasSuffix(d.Path, ".file_contains.path") && !strings.HasSuffix(d.Path, ".file_contains.text") {
			return false
		}
	}
	return true
}

func formatDiags(ds Diagnostics) string {
	var b strings.Builder
	for _, d := range ds {
		b.WriteString("  " + d.String() + "\n")
	}
	return b.String()
}

// TestOnlyDeliberate pins what the conformance harness forgives in a case
// the reference accepts: nothing but EXPR_SYNTAX and file predicate checks.
func TestOnlyDeliberate(t *testing.T) {
	cases := []struct {
		ds   Diagnostics
		want bool
	}{
		{Diagnostics{{Code: CodeExprSyntax, Path: "flows.main.steps[0].when"}}, true},
		{Diagnostics{{Code: CodeUnknownStep, Path: "flows.main.steps[0].ensure[0].file_exists"}, {Code: CodeRefScope, Path: "flows.main.steps[0].ensure[1].file_contains.text"}}, true},
		{Diagnostics{{Code: CodeExprSyntax, Path: "flows.main.steps[0].when"}, {Code: CodeRefInvalid, Path: "flows.main.steps[0].do"}}, false},
		{Diagnostics{{Code: CodeSchemaInvalid, Path: "flows.main.steps[0].ensure[0]"}}, false},
		{Diagnostics{{Code: CodeUnknownField, Path: "flows.main.steps[0].ensure[0].file_contains.extra"}}, false},
	}
	for i, c := range cases {
		if got := onlyDeliberate(c.ds); got != c.want {
			t.Errorf("case %d: %v, want %v", i, got, c.want)
		}
	}
}
