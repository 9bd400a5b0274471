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

// BenchmarkTransitionRefused measures one refused attempt (a trusted
// predicate that does not hold): committed to the ledger, the state does
// not move. Run: go test ./guard/ -run '^$' -bench TransitionRefused
func BenchmarkTransitionRefused(b *testing.B) {
	tmp := b.TempDir()
	g, err := New(Options{Root: tmp + "/guards", AllowedRoots: []string{tmp}})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	ws := tmp
	if _, err := g.Register(ctx, RegisterRequest{ResourceID: "bench", Graph: map[string]any{"a": []any{"b"}, "b": []any{}},
		EdgePredicates: map[string]any{"a->b": []any{map[string]any{"statement": "server_file_exists('never')"}}}, Initial: "a", WorkspaceRoot: &ws}); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		res, err := g.Transition(ctx, TransitionRequest{ResourceID: "bench", FromState: "a", ToState: "b", Artifacts: map[string]any{}})
		if err != nil || res.Status != "refused" {
			b.Fatalf("%v %v", res, err)
		}
	}
}
