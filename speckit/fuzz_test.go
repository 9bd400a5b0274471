package speckit

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/stratum-go/stratum/ir"
)

// FuzzCompileTask feeds arbitrary task files to the parser and compiler.
// Every input must either compile to a spec that validates, reads back as
// written and is byte-for-byte stable, or fail with a typed, non-empty
// error; nothing may panic, and an "internal error" (an encoder defect) is a
// failure.
func FuzzCompileTask(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "compile", "*.txtar"))
	for _, file := range files {
		ar, err := txtar.ParseFile(file)
		if err != nil {
			f.Fatal(err)
		}
		for _, af := range ar.Files {
			if strings.HasPrefix(af.Name, "tasks/") {
				f.Add(filepath.Base(af.Name), string(af.Data))
			}
		}
	}
	f.Add("x.md", "# \t[P]\n\x00\r\n## Acceptance Criteria\n- [ ] file \x00 exists\n- [x] file a contains '\"'\n")
	f.Add("é.md", "\ufeff#\u2028Task:\u00a0[p]\n${}\n")
	f.Fuzz(func(t *testing.T, name, text string) {
		task := ParseTask(name, text)
		if !stepIDPattern.MatchString(task.ID) {
			t.Fatalf("step id %q from %q is not a valid step id", task.ID, name)
		}
		if strings.Contains(task.Title, "[P]") || strings.Contains(task.Title, "[p]") {
			t.Fatalf("title %q still holds a [P] marker", task.Title)
		}
		for _, s := range append([]string{task.Title, task.Description}, task.Judgment...) {
			if !utf8.ValidString(s) {
				t.Fatalf("invalid UTF-8 in %q", s)
			}
		}
		sources := []source{{name: name, text: text}, {name: "zz-next.md", text: "# [P] next\n"}}
		res, err := compileSources(sources, "")
		if err != nil {
			var ce *Error
			if !errors.As(err, &ce) || ce.Message == "" {
				t.Fatalf("untyped or empty error: %v", err)
			}
			if errors.Is(err, errRoundTrip) || strings.Contains(ce.Message, "internal error") {
				t.Fatalf("encoder defect: %v", err)
			}
			if ce.Type != CompileFailed && ce.Type != StepIDCollision {
				t.Fatalf("unexpected error type %s: %v", ce.Type, err)
			}
			return
		}
		if diags := ir.Validate(res.YAML); len(diags) > 0 {
			t.Fatalf("emitted spec does not validate: %v\n%s", diags, res.YAML)
		}
		again, err := compileSources(sources, "")
		if err != nil || string(again.YAML) != string(res.YAML) {
			t.Fatalf("second compile differs: %v", err)
		}
	})
}
