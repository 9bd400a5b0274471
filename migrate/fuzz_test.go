package migrate

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
)

// FuzzCheck feeds arbitrary bytes to Check. Whatever the input, Check must
// not panic, must return a report whose findings satisfy the invariants, and
// both report formats must render (the JSON must parse back).
func FuzzCheck(f *testing.F) {
	// Seed with every golden fixture's document.
	files, _ := filepath.Glob(filepath.Join("testdata", "check", "*.txtar"))
	for _, file := range files {
		ar, err := txtar.ParseFile(file)
		if err != nil {
			f.Fatal(err)
		}
		if spec, ok := archiveFile(ar, "spec.yaml"); ok {
			f.Add(spec)
		}
	}
	f.Add([]byte("version: '0.3'\nflows: {m: {steps: [{type: decompose, x: [&a {depends_on: [*a]}]}]}}"))
	f.Add([]byte("&a [*a]"))
	f.Add([]byte("\xff\xfe"))
	f.Fuzz(func(t *testing.T, src []byte) {
		r := Check(src)
		if r == nil {
			t.Fatal("nil report")
		}
		checkInvariants(t, r)
		var text bytes.Buffer
		if err := r.WriteText(&text); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(text.String(), "stratum migrate --check") || !strings.HasSuffix(text.String(), "\n") {
			t.Fatalf("malformed text report:\n%s", text.String())
		}
		var js bytes.Buffer
		if err := r.WriteJSON(&js); err != nil {
			t.Fatal(err)
		}
		var back map[string]any
		if err := json.Unmarshal(js.Bytes(), &back); err != nil {
			t.Fatalf("JSON report does not parse: %v", err)
		}
	})
}
