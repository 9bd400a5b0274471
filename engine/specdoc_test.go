package engine

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stratum-go/stratum/ir"
)

// FuzzSpecDocument: for every spec ir accepts, the snapshot the engine
// persists (ordered JSON) re-reads to the same document, rebuilds a valid
// plan, and hashes to the same revision digest.
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
		if _, diags := ir.Build(src); len(diags) > 0 {
			return
		}
		doc, err := specDocument(src)
		if err != nil {
			return // e.g. a non-finite number in a free-form value
		}
		d1, err := digestOf(doc)
		if err != nil {
			t.Fatal(err)
		}
		snap, err := canonicalOrdered(doc)
		if err != nil {
			t.Fatal(err)
		}
		if _, diags := ir.Build(snap); len(diags) > 0 {
			t.Fatalf("the persisted snapshot does not validate: %v\n%s", diags, snap)
		}
		doc2, err := specDocument(snap)
		if err != nil {
			t.Fatal(err)
		}
		d2, _ := digestOf(doc2)
		if d1 != d2 || !jsonEqual(doc, doc2) {
			t.Fatalf("snapshot changed the document:\n%s\n%s", compactJSON(doc), compactJSON(doc2))
		}
	})
}

func TestSpecDocumentScalars(t *testing.T) {
	doc, err := specDocument([]byte("a: yes\nb: 017\nc: 0o17\nd: '1'\ne: ~\nf: 1e3\ng: [true, False, null]\nh: 0x1F\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := compactJSON(doc); got != `{"a":"yes","b":17,"c":15,"d":"1","e":null,"f":1000,"g":[true,false,null],"h":31}` {
		t.Fatalf("document %s", got)
	}
}
