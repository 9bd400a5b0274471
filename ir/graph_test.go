package ir

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// naiveCycleEdges is the reference's rule written plainly: the edges are
// added in order, and one whose target already reaches its source closes
// a cycle, is reported, and is left out.
func naiveCycleEdges(n int, edges [][2]int) []int {
	succ := make([][]int, n)
	var out []int
	for i, e := range edges {
		seen := make([]bool, n)
		stack := []int{e[1]}
		seen[e[1]] = true
		found := false
		for len(stack) > 0 && !found {
			x := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if x == e[0] {
				found = true
			}
			for _, y := range succ[x] {
				if !seen[y] {
					seen[y] = true
					stack = append(stack, y)
				}
			}
		}
		if found {
			out = append(out, i)
			continue
		}
		succ[e[0]] = append(succ[e[0]], e[1])
	}
	return out
}

// TestCycleEdgesMatchNaive checks commitEdges against the plain rule on
// random graphs, both with the normal budget and with a budget so small
// that the bisecting fallback does the work.
func TestCycleEdgesMatchNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 400 {
		n := 2 + rng.IntN(12)
		deg := rng.IntN(4)
		var b strings.Builder
		b.WriteString("version: 1\ncontracts:\n  R:\n    v: string\nflows:\n  entry: main\n  main:\n    input: {}\n    output:\n      from: \"${s0.output}\"\n      contract: R\n    steps:\n")
		var edges [][2]int
		var paths []string // parallel to edges: the after entry proposing it
		for i := range n {
			var after []string
			for range rng.IntN(deg + 1) {
				j := rng.IntN(n)
				if j == i {
					continue
				}
				// Duplicate proposals are dropped before the check; they
				// never close a cycle the first copy did not.
				if !slices.Contains(edges, [2]int{j, i}) {
					edges = append(edges, [2]int{j, i})
					paths = append(paths, fmt.Sprintf("flows.main.steps[%d].after[%d]", i, len(after)))
				}
				after = append(after, fmt.Sprintf("s%d", j))
			}
			fmt.Fprintf(&b, "      - {id: s%d, do: x, out: R, after: [%s]}\n", i, strings.Join(after, ", "))
		}
		var wantAll []string
		for _, i := range naiveCycleEdges(n, edges) {
			wantAll = append(wantAll, paths[i])
		}
		for _, budget := range []int{0, 1} {
			v := &validator{cycleBudget: budget}
			_, _, ds := v.buildPlan([]byte(b.String()), false)
			var got []string
			for _, d := range ds {
				if d.Code == CodeCycle {
					got = append(got, d.Path)
				}
			}
			wantPaths := slices.Clone(wantAll)
			if len(wantPaths) > maxCycleSearches && budget == 1 {
				wantPaths = wantPaths[:maxCycleSearches]
			}
			slices.Sort(got)
			slices.Sort(wantPaths)
			if !slices.Equal(got, wantPaths) {
				t.Fatalf("trial %d budget %d: got %v, want %v\n%s", trial, budget, got, wantPaths, b.String())
			}
		}
	}
}

// TestReachAllMatchesSearch compares the batched reachability answers with
// one graph search per question, on random DAGs with more than 64 targets.
func TestReachAllMatchesSearch(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 50 {
		n := 2 + rng.IntN(150)
		g := newGraph(n)
		for range rng.IntN(3 * n) {
			a, b := rng.IntN(n), rng.IntN(n)
			if a == b {
				continue
			}
			if a > b {
				a, b = b, a // forward edges only: a DAG
			}
			g.add(a, b, rng.IntN(2) == 0)
		}
		var qs []reachQuery
		for range 300 {
			qs = append(qs, reachQuery{From: rng.IntN(n), To: rng.IntN(n), All: rng.IntN(2) == 0})
		}
		g.reachAll(qs)
		for _, q := range qs {
			if want := g.reaches(q.From, q.To, q.All); q.Reaches != want {
				t.Fatalf("trial %d: %d -> %d (all %v): got %v, want %v", trial, q.From, q.To, q.All, q.Reaches, want)
			}
		}
	}
}

// TestReviseCoverageMatchesSearch compares reviseCoverage with one search
// per consumer and entry, with more than 64 consumers.
func TestReviseCoverageMatchesSearch(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := range 40 {
		n := 2 + rng.IntN(200)
		g := newGraph(n)
		for range rng.IntN(3 * n) {
			a, b := rng.IntN(n), rng.IntN(n)
			if a == b {
				continue
			}
			if a > b {
				a, b = b, a
			}
			g.add(a, b, rng.IntN(3) > 0)
		}
		consumers := rng.Perm(n)[:1+rng.IntN(n)]
		var entries [][2]int
		for range 1 + rng.IntN(5) {
			entries = append(entries, [2]int{rng.IntN(n), rng.IntN(n)})
		}
		type finding struct {
			entry, consumer int
			missed          bool
		}
		var got, want []finding
		g.reviseCoverage(consumers, entries, func(e, k int, missed bool) bool {
			got = append(got, finding{e, k, missed})
			return true
		})
		for e, tg := range entries {
			for k, c := range consumers {
				switch {
				case !g.reaches(tg[0], c, true):
					want = append(want, finding{e, k, true})
				case c != tg[1] && !g.reaches(c, tg[1], false):
					want = append(want, finding{e, k, false})
				}
			}
		}
		less := func(a, b finding) int {
			if a.entry != b.entry {
				return a.entry - b.entry
			}
			return a.consumer - b.consumer
		}
		slices.SortFunc(got, less)
		slices.SortFunc(want, less)
		if !slices.Equal(got, want) {
			t.Fatalf("trial %d: got %v, want %v", trial, got, want)
		}
	}
}
