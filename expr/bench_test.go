package expr

import (
	"fmt"
	"strings"
	"testing"
)

const (
	typicalEnsure = "result.confidence > 0.7 && len(result.label) > 0"
	matchesEnsure = `matches(result.label, '^[a-z]+-\\d{2,4}$')`
)

func benchBindings() Bindings {
	out := NewObject(2)
	out.Set("confidence", 0.92)
	out.Set("label", "build-2024")
	return Bindings{Result: Bind(out), Input: Bind(NewObject(0))}
}

func benchCompile(b *testing.B, src string) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compile(src); err != nil {
			b.Fatal(err)
		}
	}
}

func benchEval(b *testing.B, src string) {
	p, err := Compile(src)
	if err != nil {
		b.Fatal(err)
	}
	bind := benchBindings()
	b.ReportAllocs()
	for b.Loop() {
		v, err := p.Eval(bind, nil)
		if err != nil || v != true {
			b.Fatalf("%v, %v", v, err)
		}
	}
}

func BenchmarkCompileTypical(b *testing.B) { benchCompile(b, typicalEnsure) }
func BenchmarkEvalTypical(b *testing.B)    { benchEval(b, typicalEnsure) }
func BenchmarkCompileMatches(b *testing.B) { benchCompile(b, matchesEnsure) }
func BenchmarkEvalMatches(b *testing.B)    { benchEval(b, matchesEnsure) }

// BenchmarkDecodeJSONIndexKeys decodes an object of 50,000 index keys in
// descending order (an agent's output is decoded with DecodeJSON): the cost
// must stay O(n log n), not quadratic.
func BenchmarkDecodeJSONIndexKeys(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"name":0`)
	for i := 50000; i > 0; i-- {
		fmt.Fprintf(&sb, `,"%d":1`, i)
	}
	sb.WriteString(`}`)
	data := []byte(sb.String())
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeJSON(data); err != nil {
			b.Fatal(err)
		}
	}
}
