package ir

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
)

// FuzzValidate checks that any input gets either a plan or diagnostics,
// never a panic or a hang. It is seeded with the conformance corpus, the
// golden specs and the examples.
func FuzzValidate(f *testing.F) {
	for _, pattern := range []string{"testdata/conformance/*.yaml", "testdata/extra/*.yaml", "testdata/golden/*.yaml", "../examples/*.yaml"} {
		files, _ := filepath.Glob(pattern)
		for _, file := range files {
			src, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(src)
		}
	}
	f.Add([]byte("a: &a [*a]"))
	f.Add([]byte("{"))
	f.Fuzz(func(t *testing.T, src []byte) {
		plan, ds := Build(src)
		if (plan == nil) == (len(ds) == 0) {
			t.Fatalf("plan %v with %d diagnostics", plan != nil, len(ds))
		}
		seen := make(map[Diagnostic]bool, len(ds))
		for i, d := range ds {
			if d.Code == "" || d.Message == "" || d.Line < 1 || d.Column < 1 {
				t.Fatalf("malformed diagnostic %+v", d)
			}
			if seen[d] {
				t.Fatalf("repeated diagnostic %+v", d)
			}
			seen[d] = true
			if i > 0 && (d.Line < ds[i-1].Line || d.Line == ds[i-1].Line && d.Column < ds[i-1].Column) && i < MaxDiagnostics {
				t.Fatalf("diagnostics out of order: %v before %v", ds[i-1], d)
			}
		}
		if vs := Validate(src); !slices.Equal(vs, ds) {
			t.Fatalf("Validate and Build disagree:\n%v\n%v", vs, ds)
		}
		outline, err := ReadOutline(src) // of any input: never a panic
		if plan == nil {
			return
		}
		if err != nil {
			t.Fatalf("ReadOutline of a spec Build accepts: %v", err)
		}
		if want := plan.Outline(); !reflect.DeepEqual(outline, want) {
			t.Fatalf("ReadOutline and Build disagree:\n%s\n%s", outlineString(outline), outlineString(want))
		}
		for _, fl := range plan.Flows {
			if len(fl.Order) != len(fl.Steps) {
				t.Fatalf("flow %s: order covers %d of %d steps", fl.Name, len(fl.Order), len(fl.Steps))
			}
			pos := make([]int, len(fl.Steps))
			for i, s := range fl.Order {
				pos[s] = i
			}
			for _, s := range fl.Steps {
				for _, d := range s.Deps {
					if pos[d] >= pos[s.Index] {
						t.Fatalf("flow %s: %s ordered before its dependency", fl.Name, s.ID)
					}
				}
			}
		}
	})
}
