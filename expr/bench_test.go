package expr

import (
	"errors"
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

// The step of issue 12: 1,000 regex ensures, each a pattern of about a
// thousand states matched over a text of 4,095 characters (about 60-80 ms
// of CPU each, well within one evaluation's MaxMatchWork), all true.
func stepRegexEnsures(b *testing.B, n int) ([]*Program, Bindings) {
	progs := make([]*Program, n)
	for i := range progs {
		p, err := Compile(fmt.Sprintf(`matches(result.text, '.{1000}x') || result.n == %d`, i))
		if err != nil {
			b.Fatal(err)
		}
		progs[i] = p
	}
	out := NewObject(2)
	out.Set("text", strings.Repeat("ab", 2047)+"x")
	out.Set("n", -1.0)
	return progs, Bindings{Result: Bind(out)}
}

// BenchmarkStepRegexEnsures evaluates the 1,000 ensures of one step with
// one Budget of DefaultBudget, as the engine does: the step stops with a
// resource_limit after the ensures that fit (reported as ensures/op).
func BenchmarkStepRegexEnsures(b *testing.B) {
	progs, bind := stepRegexEnsures(b, 1000)
	passed := 0
	for b.Loop() {
		opts := &EvalOptions{Budget: NewBudget(0)}
		passed = 0
		for _, p := range progs {
			ok, err := p.EvalPredicate(t0ctx, bind, opts)
			if err != nil {
				if !errors.Is(err, ErrBudgetExhausted) {
					b.Fatal(err)
				}
				break
			}
			if !ok {
				b.Fatal("an ensure is false")
			}
			passed++
		}
	}
	b.ReportMetric(float64(passed), "ensures/op")
}

// BenchmarkRegexEnsure is one of those ensures alone: what each of the
// 1,000 cost when every evaluation had a budget of its own (a step then
// took 1,000 times this).
func BenchmarkRegexEnsure(b *testing.B) {
	progs, bind := stepRegexEnsures(b, 1)
	for b.Loop() {
		if ok, err := progs[0].EvalPredicate(t0ctx, bind, nil); err != nil || !ok {
			b.Fatal(ok, err)
		}
	}
}

// BenchmarkEvalTypicalBudget is the everyday ensure sharing a step's
// Budget.
func BenchmarkEvalTypicalBudget(b *testing.B) {
	p, err := Compile(typicalEnsure)
	if err != nil {
		b.Fatal(err)
	}
	bind := benchBindings()
	opts := &EvalOptions{Budget: NewBudget(1 << 62)}
	b.ReportAllocs()
	for b.Loop() {
		if ok, err := p.EvalPredicate(t0ctx, bind, opts); err != nil || !ok {
			b.Fatal(ok, err)
		}
	}
}

// BenchmarkEvalDynamicPattern matches with a pattern that is not a literal
// (compiled on each call before the pattern cache).
func BenchmarkEvalDynamicPattern(b *testing.B) {
	p, err := Compile(`matches(result.label, input.pattern)`)
	if err != nil {
		b.Fatal(err)
	}
	out := NewObject(1)
	out.Set("label", "build-2024")
	in := NewObject(1)
	in.Set("pattern", `^[a-z]+-\d{2,4}$`)
	bind := Bindings{Result: Bind(out), Input: Bind(in)}
	b.ReportAllocs()
	for b.Loop() {
		if v, err := p.Eval(bind, nil); err != nil || v != true {
			b.Fatal(v, err)
		}
	}
}
