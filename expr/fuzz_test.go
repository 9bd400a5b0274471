package expr

import (
	"errors"
	"path/filepath"
	"testing"
)

func addSeeds(f *testing.F) {
	for _, c := range loadCases(f, filepath.Join("testdata", "cases.jsonl")) {
		f.Add(c.expr)
	}
	for _, s := range []string{
		"result.confidence > 0.7 && len(result.label) > 0",
		"matches(result.status, '^o(k|h)$') || file_exists('x')",
		"!(1 < 2) == (3 - -4 >= 7) in result.langs",
		"str(result.doc)[0]",
		"'\\uD83D\\uDE00' + \"\\u00e9\\n\"",
	} {
		f.Add(s)
	}
}

var knownCodes = map[Code]bool{
	CodeParse: true, CodeUnknownIdentifier: true, CodeUnknownFunction: true,
	CodeType: true, CodeValidation: true, CodeResourceLimit: true,
}

// FuzzParse: Compile never panics, fails only with a parse_error or a
// resource_limit, and the canonical form of what compiles compiles again
// to the same canonical form.
func FuzzParse(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, src string) {
		p, err := Compile(src)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || (e.Code != CodeParse && e.Code != CodeResourceLimit) {
				t.Fatalf("Compile(%q): unexpected error %v", src, err)
			}
			if e.Code == CodeParse && (e.Offset < 0 || e.Offset > utf16Len(src)) {
				t.Fatalf("Compile(%q): offset %d out of range", src, e.Offset)
			}
			return
		}
		canon := p.String()
		p2, err := Compile(canon)
		if err != nil {
			t.Fatalf("canonical form %q of %q does not compile: %v", canon, src, err)
		}
		if again := p2.String(); again != canon {
			t.Fatalf("canonical form is not stable: %q -> %q -> %q", src, canon, again)
		}
		if p2.UsesFileFunctions() != p.UsesFileFunctions() {
			t.Fatalf("UsesFileFunctions differs between %q and %q", src, canon)
		}
	})
}

// fuzzBudget is the work budget of one FuzzEval evaluation: small, so
// that the work of every input is bounded by counting rather than by a
// clock.
const fuzzBudget = 1 << 22

// FuzzEval: evaluation never panics; it returns a value of the JSON model
// or an *Error with one of the six codes; it evaluates each syntax node at
// most once (the language has no loops, so the work is bounded by the size
// of the program); and it stops once its work budget is spent: a success
// has charged at most the budget, and exhaustion is reported only past it.
func FuzzEval(f *testing.F) {
	addSeeds(f)
	b := mustBindings(f, std)
	f.Fuzz(func(t *testing.T, src string) {
		p, err := Compile(src)
		if err != nil {
			return
		}
		budget := NewBudget(fuzzBudget)
		v, st, eerr := p.runStats(t0ctx, b, &EvalOptions{Budget: budget}, nil)
		if n := countNodes(p.root); st.nodes > n {
			t.Fatalf("%q: %d nodes evaluated, the program has %d", src, st.nodes, n)
		}
		if int64(st.work) != budget.Used() {
			t.Fatalf("%q: the evaluation counted %d units, the budget %d", src, st.work, budget.Used())
		}
		if eerr == nil {
			if budget.Used() > fuzzBudget {
				t.Fatalf("%q: succeeded after %d units, over its budget of %d", src, budget.Used(), fuzzBudget)
			}
			if _, err := EncodeJSON(v); err != nil {
				t.Fatalf("%q: result is not JSON: %v", src, err)
			}
			return
		}
		if !knownCodes[eerr.Code] {
			t.Fatalf("%q: unexpected error %v", src, eerr)
		}
		if errors.Is(eerr, ErrBudgetExhausted) && budget.Used() <= fuzzBudget {
			t.Fatalf("%q: budget reported exhausted at %d of %d units", src, budget.Used(), fuzzBudget)
		}
	})
}

// countNodes counts the syntax nodes of a tree.
func countNodes(n *node) int {
	if n == nil {
		return 0
	}
	c := 1 + countNodes(n.x) + countNodes(n.y)
	for _, a := range n.args {
		c += countNodes(a)
	}
	return c
}
