package expr

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// The cost model, pinned: what an evaluation charges is part of which
// steps pass, so a change to it must show here.
func TestWorkCost(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "f.txt"), []byte("hello world"), 0o644); err != nil {
		t.Fatal(err)
	}
	nulls := make([]any, 100)
	long := strings.Repeat("x", 1600)
	text := strings.Repeat("ab", 2048)
	tests := []struct {
		expr   string
		result any
		work   int
	}{
		{"1 + 2", nil, 3}, // three nodes
		{"matches('ab', 'a')", nil, 3 + (2+1+128)*1},   // nodes, then (text + 1 + 128) x 1 state
		{"result == result", nulls, 3 + 101 + 101},     // nodes, binding check, equality
		{"len(result)", long, 2 + 1 + 1600/16},         // nodes, binding check, bytes scanned
		{"result + result", long, 3 + 1 + 3200/16},     // nodes, binding check, bytes built
		{"'x' in result", long, 3 + 1 + 1600/16},       // nodes, binding check, bytes scanned
		{"file_exists('f.txt')", nil, 2 + 4096},        // nodes, one lookup
		{"file_contains('f.txt', 'o')", nil, 3 + 4096}, // the 11 bytes read are less than a unit
		{"matches(result, '.{100}x')", text, 3 + 1 + (4096+1+128)*101},
	}
	for _, tt := range tests {
		p, err := Compile(tt.expr)
		if err != nil {
			t.Fatal(err)
		}
		_, st, eerr := p.runStats(t0ctx, Bindings{Result: Bind(tt.result)}, &EvalOptions{WorkspaceRoot: root}, nil)
		if eerr != nil {
			t.Errorf("%s: %v", tt.expr, eerr)
			continue
		}
		if st.work != tt.work {
			t.Errorf("%s: charged %d units, want %d", tt.expr, st.work, tt.work)
		}
	}
}

func isExhausted(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == CodeResourceLimit && errors.Is(err, ErrBudgetExhausted)
}

// The evaluations sharing a Budget stop once their total reaches it, not
// each at its own limit: with room for ten, the eleventh fails, and so
// does every evaluation after it, at its first step.
func TestBudgetSharedAcrossEvaluations(t *testing.T) {
	const cost = 3 + 1 + (4096+1+128)*101 // as in TestWorkCost
	p, err := Compile("matches(result, '.{100}x')")
	if err != nil {
		t.Fatal(err)
	}
	b := Bindings{Result: Bind(strings.Repeat("ab", 2048))}
	budget := NewBudget(10*cost + cost/2)
	opts := &EvalOptions{Budget: budget}
	for i := range 10 {
		if _, err := p.Eval(b, opts); err != nil {
			t.Fatalf("evaluation %d of 10 within the budget: %v", i+1, err)
		}
	}
	if budget.Used() != 10*cost || budget.Exhausted() {
		t.Errorf("after ten: used %d of %d, exhausted %v", budget.Used(), budget.Limit(), budget.Exhausted())
	}
	// The eleventh starts with half of what it needs and stops in the
	// middle, at the matches() call.
	_, err = p.Eval(b, opts)
	if !isExhausted(err) || !strings.Contains(err.Error(), "resource_limit: the evaluations sharing this work budget exceeded") {
		t.Fatalf("the eleventh: %v, want the budget's resource_limit", err)
	}
	if !budget.Exhausted() {
		t.Errorf("after the eleventh: used %d of %d, not exhausted", budget.Used(), budget.Limit())
	}
	one, err := Compile(strings.TrimSuffix(strings.Repeat("1 + ", 100), " + "))
	if err != nil {
		t.Fatal(err)
	}
	_, st, eerr := one.runStats(t0ctx, Bindings{}, opts, nil)
	if eerr == nil || !isExhausted(eerr) || st.nodes != 1 {
		t.Errorf("an evaluation of an exhausted budget: %v after %d nodes", eerr, st.nodes)
	}
	// A budget of its own for each evaluation: all of them pass.
	for range 12 {
		if _, err := p.Eval(b, &EvalOptions{Budget: NewBudget(cost)}); err != nil {
			t.Fatalf("with a budget each: %v", err)
		}
	}
	if NewBudget(0).Limit() != DefaultBudget || NewBudget(-1).Limit() != DefaultBudget {
		t.Error("NewBudget(0) is not the default")
	}
}

// Without a Budget an evaluation has DefaultBudget of its own (made
// smaller here, inside the package, so that the test is quick).
func TestPrivateBudget(t *testing.T) {
	p, err := Compile("len(result) + len(result) + len(result)")
	if err != nil {
		t.Fatal(err)
	}
	ev := evaluator{ctx: t0ctx, b: Bindings{Result: Bind(strings.Repeat("x", 1600))}}
	ev.startBudget(nil)
	if ev.slack != DefaultBudget {
		t.Fatalf("private allowance %d, want %d", ev.slack, DefaultBudget)
	}
	ev.slack = 250 // room for two len() of 100 units each, not three
	_, eerr := ev.eval(p.root)
	if eerr == nil || !isExhausted(eerr) || !strings.Contains(eerr.Error(), "this evaluation exceeded its work budget") {
		t.Errorf("over its own budget: %v", eerr)
	}
}

// Evaluations sharing a Budget from several goroutines overshoot it by at
// most one evaluation each.
func TestBudgetConcurrent(t *testing.T) {
	p, err := Compile("1 + 2") // 3 units
	if err != nil {
		t.Fatal(err)
	}
	const limit, workers = 3000, 8
	budget := NewBudget(limit)
	var mu sync.Mutex
	passed, other := 0, 0
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range 200 {
				_, err := p.Eval(Bindings{}, &EvalOptions{Budget: budget})
				mu.Lock()
				switch {
				case err == nil:
					passed++
				case !isExhausted(err):
					other++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if other != 0 || passed < limit/3-workers || passed > limit/3+workers {
		t.Errorf("%d passed (want about %d), %d other errors", passed, limit/3, other)
	}
	if budget.Used() > limit+workers*flushUnits {
		t.Errorf("used %d of %d", budget.Used(), limit)
	}
}
