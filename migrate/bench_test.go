package migrate

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkCheck classifies a large legacy spec: 200 flows of 10 steps that
// use most constructs.
func BenchmarkCheck(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("version: \"0.3\"\ncontracts: {Plan: {s: {type: string}}}\nfunctions:\n")
	for i := 0; i < 100; i++ {
		fmt.Fprintf(&sb, "  f%d: {mode: infer, intent: x, ensure: [\"result.ok\"]}\n", i)
	}
	sb.WriteString("flows:\n")
	for f := 0; f < 200; f++ {
		fmt.Fprintf(&sb, "  flow%d:\n    output: Plan\n    steps:\n", f)
		for s := 0; s < 10; s++ {
			fmt.Fprintf(&sb, "      - {id: s%d, intent: x, depends_on: [a], skip_if: y, max_iterations: 2, type: decompose, tasks: [{id: t, depends_on: []}]}\n", s)
		}
	}
	src := []byte(sb.String())
	b.SetBytes(int64(len(src)))
	b.ResetTimer()
	for b.Loop() {
		if r := Check(src); len(r.Findings) == 0 {
			b.Fatal("no findings")
		}
	}
}
