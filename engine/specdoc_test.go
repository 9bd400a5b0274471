package engine

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stratum-go/stratum/expr"
	"github.com/stratum-go/stratum/ir"
)

// FuzzSpecDocument: for every spec ir accepts, the snapshot the engine
// persists (ordered JSON) decodes to the same document, rebuilds a valid
// plan with the same document, and hashes to the same revision digest, so
// Resume's digest check holds for every plannable spec.
func FuzzSpecDocument(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join("..", "examples", "*.yaml"))
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(twoSteps))
	f.Add([]byte(carrySpec))
	f.Add([]byte("version: 1\ncontracts: {R: {v: string}}\nflows:\n  entry: m\n  m:\n    input: {n: number}\n    output: {from: \"${a.output}\", contract: R}\n    steps:\n      - {id: a, set: {v: \"'0x1F' + 'yes'\"}, out: R}\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		_, doc, diags := ir.BuildDocument(src)
		if len(diags) > 0 {
			return
		}
		d1, err := digestOf(doc)
		if err != nil {
			return // e.g. a non-finite number in a free-form value: Plan refuses it
		}
		snap, err := canonicalOrdered(doc)
		if err != nil {
			t.Fatal(err)
		}
		_, doc2, diags := ir.BuildDocument(snap)
		if len(diags) > 0 {
			t.Fatalf("the persisted snapshot does not validate: %v\n%s", diags, snap)
		}
		decoded, err := expr.DecodeJSON(snap)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range []any{decoded, doc2} {
			d2, _ := digestOf(d)
			if d1 != d2 || !expr.Equal(doc, d) {
				t.Fatalf("snapshot changed the document:\n%s\n%s", compactJSON(doc), compactJSON(d))
			}
		}
	})
}
