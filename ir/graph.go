package ir

import "math/bits"

// graph holds one flow's step graph during validation and compilation:
// dependency edges D (after and step references) and the full graph A (D
// plus on_fail and gate approve/kill routes).
type graph struct {
	n     int
	dsucc [][]int32
	dpred [][]int32
	asucc [][]int32
	rpred [][]int32 // routing predecessors
	mark  []uint32
	stamp uint32
	queue []int32
}

func newGraph(n int) *graph {
	adj := make([][]int32, 4*n) // one allocation for the four lists
	return &graph{
		n:     n,
		dsucc: adj[0*n : 1*n : 1*n],
		dpred: adj[1*n : 2*n : 2*n],
		asucc: adj[2*n : 3*n : 3*n],
		rpred: adj[3*n : 4*n : 4*n],
		mark:  make([]uint32, n),
	}
}

// reserve gives every adjacency list of a graph without edges the exact
// room that adding cands needs, carved from one array: adding then
// allocates nothing.
func (g *graph) reserve(cands []edgeCand) {
	n := g.n
	count := make([]int32, 4*n) // dsucc, dpred, asucc, rpred
	total := 0
	for _, c := range cands {
		if c.dep {
			count[c.from]++
			count[n+c.to]++
			total += 2
		} else {
			count[3*n+c.to]++
			total++
		}
		count[2*n+c.from]++
		total++
	}
	buf := make([]int32, total)
	lists := [4][][]int32{g.dsucc, g.dpred, g.asucc, g.rpred}
	for k, l := range lists {
		for x := range n {
			if c := int(count[k*n+x]); c > 0 {
				l[x] = buf[:0:c]
				buf = buf[c:]
			}
		}
	}
}

// add inserts an edge. Callers propose each (from, to, kind) once; a
// dependency and a route between the same pair appear twice in asucc,
// which reachability and topological sorting tolerate.
func (g *graph) add(from, to int, dep bool) {
	if dep {
		g.dsucc[from] = append(g.dsucc[from], int32(to))
		g.dpred[to] = append(g.dpred[to], int32(from))
	} else {
		g.rpred[to] = append(g.rpred[to], int32(from))
	}
	g.asucc[from] = append(g.asucc[from], int32(to))
}

// acyclic reports whether A is a DAG, in time linear in its edges
// (Kahn's algorithm).
func (g *graph) acyclic() bool {
	return len(g.topoOrder()) == g.n
}

func (g *graph) nextStamp() uint32 {
	g.stamp++
	if g.stamp == 0 {
		clear(g.mark)
		g.stamp = 1
	}
	return g.stamp
}

// reach marks every step reachable from start (start included) over A
// (all) or D, and returns the stamp identifying the marks.
func (g *graph) reach(start int, all bool) uint32 {
	s := g.nextStamp()
	g.queue = append(g.queue[:0], int32(start))
	g.mark[start] = s
	for len(g.queue) > 0 {
		x := g.queue[len(g.queue)-1]
		g.queue = g.queue[:len(g.queue)-1]
		succ := g.dsucc[x]
		if all {
			succ = g.asucc[x]
		}
		for _, y := range succ {
			if g.mark[y] != s {
				g.mark[y] = s
				g.queue = append(g.queue, y)
			}
		}
	}
	return s
}

// reachesWithin reports whether target is reachable from start over A,
// spending at most *budget edge visits; exhausted is set when the budget
// ran out before the answer was known.
func (g *graph) reachesWithin(start, target int, budget *int) (found, exhausted bool) {
	s := g.nextStamp()
	g.queue = append(g.queue[:0], int32(start))
	g.mark[start] = s
	for len(g.queue) > 0 {
		x := g.queue[len(g.queue)-1]
		g.queue = g.queue[:len(g.queue)-1]
		if int(x) == target {
			return true, false
		}
		*budget -= 1 + len(g.asucc[x])
		if *budget < 0 {
			return false, true
		}
		for _, y := range g.asucc[x] {
			if g.mark[y] != s {
				g.mark[y] = s
				g.queue = append(g.queue, y)
			}
		}
	}
	return false, false
}

// acyclicWith reports whether A plus the extra edges is a DAG, in time
// linear in the size of both (Kahn's algorithm).
func (g *graph) acyclicWith(extra []edgeCand) bool {
	indeg := make([]int32, g.n)
	// The extra edges as compressed adjacency lists.
	start := make([]int32, g.n+1)
	for _, e := range extra {
		start[e.from+1]++
		indeg[e.to]++
	}
	for i := range g.n {
		start[i+1] += start[i]
		for _, y := range g.asucc[i] {
			indeg[y]++
		}
	}
	next := append([]int32(nil), start[:g.n]...)
	to := make([]int32, len(extra))
	for _, e := range extra {
		to[next[e.from]] = int32(e.to)
		next[e.from]++
	}
	stack := make([]int32, 0, g.n)
	for i := range g.n {
		if indeg[i] == 0 {
			stack = append(stack, int32(i))
		}
	}
	seen := 0
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		seen++
		for _, y := range g.asucc[x] {
			if indeg[y]--; indeg[y] == 0 {
				stack = append(stack, y)
			}
		}
		for _, y := range to[start[x]:start[x+1]] {
			if indeg[y]--; indeg[y] == 0 {
				stack = append(stack, y)
			}
		}
	}
	return seen == g.n
}

// reaches reports whether to is reachable from from over A or D.
func (g *graph) reaches(from, to int, all bool) bool {
	return g.mark[to] == g.reach(from, all)
}

// edgeCand is an edge proposed by the spec, with where it came from.
type edgeCand struct {
	from, to int
	dep      bool
	path     loc
	n        *node
	what     string // "after", "on_fail", "reference", "on_approve", "on_kill"
}

// topoOrder returns a topological order of A in which, among steps that are
// free at the same time, the one declared first comes first.
func (g *graph) topoOrder() []int {
	indeg := make([]int32, g.n)
	for x := range g.n {
		for _, y := range g.asucc[x] {
			indeg[y]++
		}
	}
	h := make(minHeap, 0, g.n)
	for i := range g.n {
		if indeg[i] == 0 {
			h.push(int32(i))
		}
	}
	out := make([]int, 0, g.n)
	for len(h) > 0 {
		x := h.pop()
		out = append(out, int(x))
		for _, y := range g.asucc[x] {
			indeg[y]--
			if indeg[y] == 0 {
				h.push(y)
			}
		}
	}
	return out
}

type minHeap []int32

func (h *minHeap) push(x int32) {
	*h = append(*h, x)
	s := *h
	i := len(s) - 1
	for i > 0 {
		p := (i - 1) / 2
		if s[p] <= s[i] {
			break
		}
		s[p], s[i] = s[i], s[p]
		i = p
	}
}

func (h *minHeap) pop() int32 {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s = s[:last]
	i := 0
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(s) && s[l] < s[m] {
			m = l
		}
		if r < len(s) && s[r] < s[m] {
			m = r
		}
		if m == i {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return top
}

// reachQuery asks whether step To is reachable from step From (From
// included) over A (All) or D; Reaches holds the answer after reachAll.
type reachQuery struct {
	From, To int
	All      bool
	Reaches  bool
}

// reachAll answers many reachability questions at once. One search per
// question would cost (steps + edges) per question, which a hostile spec
// with thousands of revising gates or carry readers turns into minutes.
// Instead the distinct targets are taken 64 at a time: a pass in reverse
// topological order computes, for every step, which of those targets it
// reaches, as a bit set. The cost is (steps + edges) per 64 targets. The
// graph must be acyclic (it is, once commitEdges has run).
func (g *graph) reachAll(qs []reachQuery) {
	if len(qs) == 0 {
		return
	}
	order := g.topoOrder()
	if len(order) != g.n {
		for i := range qs { // not reached: commitEdges leaves A acyclic
			qs[i].Reaches = g.reaches(qs[i].From, qs[i].To, qs[i].All)
		}
		return
	}
	for _, all := range [...]bool{false, true} {
		slot := make(map[int]int) // target step -> its index among the targets
		var targets []int
		var byChunk [][]int // query indexes, by the chunk of their target
		for i, q := range qs {
			if q.All != all {
				continue
			}
			k, ok := slot[q.To]
			if !ok {
				k = len(targets)
				slot[q.To] = k
				targets = append(targets, q.To)
			}
			if k/64 == len(byChunk) {
				byChunk = append(byChunk, nil)
			}
			byChunk[k/64] = append(byChunk[k/64], i)
		}
		bits := make([]uint64, g.n)
		for c, base := 0, 0; base < len(targets); c, base = c+1, base+64 {
			clear(bits)
			chunk := targets[base:min(base+64, len(targets))]
			for k, t := range chunk {
				bits[t] |= 1 << k
			}
			for i := len(order) - 1; i >= 0; i-- {
				x := order[i]
				succ := g.dsucc[x]
				if all {
					succ = g.asucc[x]
				}
				for _, y := range succ {
					bits[x] |= bits[y]
				}
			}
			for _, i := range byChunk[c] {
				q := &qs[i]
				q.Reaches = bits[q.From]&(1<<(slot[q.To]-base)) != 0
			}
		}
	}
}

// reviseCoverage checks one carry variable's consumers against the gates
// that rewrite it (docs/spec-language.md, "Carry"). For each entry {target, gate},
// it calls report(entry, consumer, missed) for every consumer that the
// target's reset closure (reachability over A) does not contain
// (missed = true), or else that is not the gate and does not reach the gate
// over D (missed = false). Consumers are taken 64 at a time, as bit sets
// computed in one forward and one backward topological pass per chunk, so
// the cost is (steps + edges) per 64 consumers rather than per pair of
// consumer and entry. It stops when report returns false. The graph must
// be acyclic.
func (g *graph) reviseCoverage(consumers []int, entries [][2]int, report func(entry, consumer int, missed bool) bool) {
	if len(consumers) == 0 || len(entries) == 0 {
		return
	}
	order := g.topoOrder()
	if len(order) != g.n {
		return // not reached: commitEdges leaves A acyclic
	}
	pos := make(map[int]int, len(consumers)) // step -> 1 + its index in consumers
	for i, c := range consumers {
		pos[c] = i + 1
	}
	reset := make([]uint64, g.n)  // reset[x]: chunk consumers reachable from x over A
	before := make([]uint64, g.n) // before[x]: chunk consumers that reach x over D
	for base := 0; base < len(consumers); base += 64 {
		chunk := consumers[base:min(base+64, len(consumers))]
		clear(reset)
		clear(before)
		for k, c := range chunk {
			reset[c] |= 1 << k
			before[c] |= 1 << k
		}
		for i := len(order) - 1; i >= 0; i-- {
			x := order[i]
			for _, y := range g.asucc[x] {
				reset[x] |= reset[y]
			}
		}
		for _, x := range order {
			for _, y := range g.dsucc[x] {
				before[y] |= before[x]
			}
		}
		full := ^uint64(0) >> (64 - len(chunk))
		for e, tg := range entries {
			missed := full &^ reset[tg[0]]
			notAfter := full &^ missed &^ before[tg[1]]
			if k := pos[tg[1]] - base; pos[tg[1]] > 0 && k >= 1 && k <= len(chunk) {
				notAfter &^= 1 << (k - 1) // the gate itself reads the variable
			}
			for m := missed | notAfter; m != 0; m &= m - 1 {
				k := bits.TrailingZeros64(m)
				if !report(e, base+k, missed&(1<<k) != 0) {
					return
				}
			}
		}
	}
}
