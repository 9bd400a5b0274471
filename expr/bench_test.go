package expr

import "testing"

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
