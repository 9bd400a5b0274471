package ir

import (
	"testing"

	"github.com/stratum-go/stratum/expr"
)

func TestDocumentKeepsOrderAndYAMLScalars(t *testing.T) {
	src := `version: 1
contracts:
  R: {v: string}
flows:
  entry: m
  m:
    input: {}
    output: {from: "${a.output}", contract: R}
    steps:
      - id: a
        out: R
        set: {v: "'x'"}
        ensure:
          - expr: "true"
base: &b {z: 1, y: 017, x: yes, w: 0o17, u: ~, t: 1e3}
`
	// "base" is an unknown root field; drop it from the valid spec but
	// keep it in a scalar test below.
	_, doc, ds := BuildDocument([]byte(src[:len(src)-len("base: &b {z: 1, y: 017, x: yes, w: 0o17, u: ~, t: 1e3}\n")]))
	if len(ds) > 0 {
		t.Fatal(ds)
	}
	got, err := expr.EncodeJSON(doc)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"version":1,"contracts":{"R":{"v":"string"}},"flows":{"entry":"m","m":{"input":{},"output":{"from":"${a.output}","contract":"R"},"steps":[{"id":"a","out":"R","set":{"v":"'x'"},"ensure":[{"expr":"true"}]}]}}}`
	if string(got) != want {
		t.Errorf("Document =\n%s\nwant\n%s", got, want)
	}
}

func TestDocumentScalarsAndAliases(t *testing.T) {
	var d diags
	root := load([]byte("a: &x {z: 1, y: 017, x: yes, w: 0o17, u: ~, t: 1e3, s: '1'}\nb: *x\n"), &d)
	if !d.empty() {
		t.Fatal(d.sorted())
	}
	got, err := expr.EncodeJSON(nodeValue(root))
	if err != nil {
		t.Fatal(err)
	}
	const obj = `{"z":1,"y":17,"x":"yes","w":15,"u":null,"t":1000,"s":"1"}`
	if string(got) != `{"a":`+obj+`,"b":`+obj+`}` {
		t.Errorf("document %s", got)
	}
}
