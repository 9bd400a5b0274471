package guard

import (
	"context"
	"testing"
)

// BenchmarkTransition measures one committed transition end to end: two
// lock acquisitions, the ledger read, one fsynced append and the registry
// rewrite. Run: go test ./guard/ -run '^$' -bench Transition
func BenchmarkTransition(b *testing.B) {
	g, err := New(Options{Root: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if _, err := g.Register(ctx, RegisterRequest{ResourceID: "bench", Graph: map[string]any{"a": []any{"b"}, "b": []any{"a"}},
		EdgePredicates: map[string]any{}, Initial: "a"}); err != nil {
		b.Fatal(err)
	}
	states := [2]string{"a", "b"}
	i := 0
	for b.Loop() {
		res, err := g.Transition(ctx, TransitionRequest{ResourceID: "bench", FromState: states[i%2], ToState: states[(i+1)%2], Artifacts: map[string]any{}})
		if err != nil || res.Status != "applied" {
			b.Fatalf("%v %v", res, err)
		}
		i++
	}
}
