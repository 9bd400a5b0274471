package ir

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestGolden compares the full diagnostic list of multi-error specs with
// testdata/golden/*.golden (rewrite with go test -run TestGolden -update).
func TestGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "golden", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden inputs: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			plan, ds := Build(src)
			if plan != nil {
				t.Fatal("golden specs are invalid")
			}
			var b bytes.Buffer
			for _, d := range ds {
				b.WriteString(d.String())
				b.WriteByte('\n')
			}
			golden := strings.TrimSuffix(f, ".yaml") + ".golden"
			if *update {
				if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(want, b.Bytes()) {
				t.Errorf("diagnostics differ from %s:\n--- got\n%s--- want\n%s", golden, b.String(), want)
			}
			// Sorted by position, no duplicates.
			seen := map[string]bool{}
			for i, d := range ds {
				key := d.Code + "|" + d.Path + "|" + d.Message
				if seen[key] {
					t.Errorf("duplicate %v", d)
				}
				seen[key] = true
				if i > 0 && (ds[i-1].Line > d.Line || ds[i-1].Line == d.Line && ds[i-1].Column > d.Column) {
					t.Errorf("not sorted at %v", d)
				}
			}
		})
	}
}
