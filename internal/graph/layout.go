package graph

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Layout places a Model on a plane for a picture drawn without a layout
// engine (the SVG of stratum serve): each flow is a column of layers, a
// step one layer below the lowest of its dependencies (data, after,
// output edges; routes do not order the layout), the steps of a layer
// ordered by where their dependencies are and wrapped into rows of at most
// MaxRow nodes, the flows side by side. It costs time linear in the nodes
// and edges, so a flow of a thousand steps is laid out in about a
// millisecond.

// Layout geometry, in SVG user units (pixels at scale 1).
const (
	NodeWidth  = 200
	LineHeight = 15
	nodePad    = 8
	gapX       = 28
	gapY       = 42
	flowPad    = 20
	flowTitle  = 26
	flowGap    = 56
	// routeRoom is the room on a flow's right for its routes' curves.
	routeRoom = 110
	// MaxRow is the most nodes one row holds; a wider layer wraps.
	MaxRow = 8
	// MaxLineRunes bounds a label line; the full text is in Placed.Lines.
	MaxLineRunes = 27
)

// Point is a position on the plane.
type Point struct{ X, Y int }

// Placed is a node with its box.
type Placed struct {
	Node
	X, Y, W, H int
	// Shown are the label lines as drawn (cut to MaxLineRunes).
	Shown []string
}

// Center is the middle of the node's box.
func (p *Placed) Center() Point { return Point{p.X + p.W/2, p.Y + p.H/2} }

// Routed is an edge with its path: a cubic Bézier curve from From to To
// with control points C1 and C2, and where its label goes.
type Routed struct {
	Edge
	From, C1, C2, To Point
	Label            Point
}

// Path is the curve as SVG path data.
func (r *Routed) Path() string {
	return fmt.Sprintf("M%d %d C%d %d %d %d %d %d", r.From.X, r.From.Y, r.C1.X, r.C1.Y, r.C2.X, r.C2.Y, r.To.X, r.To.Y)
}

// Box is a flow's frame.
type Box struct {
	Name       string
	Entry      bool
	X, Y, W, H int
}

// Drawing is a laid-out Model.
type Drawing struct {
	W, H  int
	Flows []Box
	Nodes []Placed
	Edges []Routed
}

// Options adjust a layout.
type Options struct {
	// MaxLines, when positive, bounds the label lines a node shows (a
	// large graph shows only the step ids).
	MaxLines int
}

// Layout lays m out.
func Layout(m *Model, opts Options) *Drawing {
	d := &Drawing{}
	at := map[string]int{} // node key -> index in d.Nodes
	flowBox := map[string]int{}
	x := flowGap / 2
	for _, f := range m.Flows {
		w, h := layoutFlow(m, f, d, at, x+flowPad, flowTitle+flowPad, opts)
		if hasRoutes(m, f) {
			w += routeRoom
		}
		flowBox[f.Name] = len(d.Flows)
		d.Flows = append(d.Flows, Box{Name: f.Name, Entry: f.Entry, X: x, Y: 8, W: w + 2*flowPad, H: h + flowTitle + 2*flowPad - 8})
		x += w + 2*flowPad + flowGap
		d.H = max(d.H, h+flowTitle+2*flowPad+8)
	}
	d.W = max(x-flowGap/2, NodeWidth)
	for _, e := range m.Edges {
		src, ok := at[e.From]
		if !ok {
			continue
		}
		if e.Kind == EdgeCalls {
			bi, ok := flowBox[e.To]
			if !ok {
				continue
			}
			b := d.Flows[bi]
			d.Edges = append(d.Edges, callEdge(e, &d.Nodes[src], b))
			continue
		}
		dst, ok := at[e.To]
		if !ok {
			continue
		}
		d.Edges = append(d.Edges, route(e, &d.Nodes[src], &d.Nodes[dst]))
	}
	return d
}

// hasRoutes reports whether a route (other than a call) leaves a node of
// f: its curve goes out on the flow's right.
func hasRoutes(m *Model, f Flow) bool {
	prefix := f.Name + "/"
	for _, e := range m.Edges {
		if e.Kind.Route() && e.Kind != EdgeCalls && strings.HasPrefix(e.From, prefix) {
			return true
		}
	}
	return false
}

// layoutFlow places one flow's nodes with their top left at (x0, y0) and
// returns the size they take.
func layoutFlow(m *Model, f Flow, d *Drawing, at map[string]int, x0, y0 int, opts Options) (w, h int) {
	n := len(f.Nodes)
	if n == 0 {
		return NodeWidth, 0
	}
	idx := make(map[string]int, n)
	for i, nd := range f.Nodes {
		idx[nd.Key] = i
	}
	deps := make([][]int, n)
	for _, e := range m.Edges {
		if e.Kind.Route() {
			continue
		}
		from, ok1 := idx[e.From]
		to, ok2 := idx[e.To]
		if ok1 && ok2 && from != to {
			deps[to] = append(deps[to], from)
		}
	}
	layer := layers(deps)
	// Order within a layer: by the mean position of the dependencies in
	// the layer above (declaration order breaks ties and orders the
	// first layer), one pass from the top.
	nl := 0
	for _, l := range layer {
		nl = max(nl, l+1)
	}
	byLayer := make([][]int, nl)
	for i, l := range layer {
		byLayer[l] = append(byLayer[l], i)
	}
	pos := make([]float64, n)
	for l, nodes := range byLayer {
		if l > 0 {
			key := make(map[int]float64, len(nodes))
			for _, i := range nodes {
				if len(deps[i]) == 0 {
					key[i] = float64(i) / float64(n)
					continue
				}
				s := 0.0
				for _, dp := range deps[i] {
					s += pos[dp]
				}
				key[i] = s / float64(len(deps[i]))
			}
			slices.SortStableFunc(nodes, func(a, b int) int { return cmp.Compare(key[a], key[b]) })
		}
		for k, i := range nodes {
			pos[i] = float64(k)
		}
	}
	placed := make([]Placed, n)
	for i, nd := range f.Nodes {
		lines := nd.Lines
		if opts.MaxLines > 0 && len(lines) > opts.MaxLines {
			lines = lines[:opts.MaxLines]
		}
		placed[i] = Placed{Node: nd, W: NodeWidth, Shown: shownLines(lines)}
		placed[i].H = 2*nodePad + LineHeight*len(placed[i].Shown)
		if nd.Shape == ShapeGate || nd.Shape == ShapeFanout {
			placed[i].H += 6 // pointed ends need room
		}
	}
	// Rows: each layer wraps into rows of MaxRow nodes.
	var rows [][]int
	for _, nodes := range byLayer {
		for len(nodes) > MaxRow {
			rows = append(rows, nodes[:MaxRow])
			nodes = nodes[MaxRow:]
		}
		rows = append(rows, nodes)
	}
	widest := 0
	for _, r := range rows {
		widest = max(widest, len(r))
	}
	w = widest*NodeWidth + (widest-1)*gapX
	y := y0
	for _, r := range rows {
		rh := 0
		for _, i := range r {
			rh = max(rh, placed[i].H)
		}
		rw := len(r)*NodeWidth + (len(r)-1)*gapX
		x := x0 + (w-rw)/2
		for _, i := range r {
			placed[i].X, placed[i].Y = x, y+(rh-placed[i].H)/2
			x += NodeWidth + gapX
		}
		y += rh + gapY
	}
	for i := range placed {
		at[placed[i].Key] = len(d.Nodes)
		d.Nodes = append(d.Nodes, placed[i])
	}
	return w, y - gapY - y0
}

// layers gives each node its longest-path depth over deps. A cycle (never
// in a validated plan) puts its nodes below the others rather than loop.
func layers(deps [][]int) []int {
	n := len(deps)
	layer := make([]int, n)
	state := make([]byte, n) // 0 new, 1 in progress, 2 done
	var visit func(i int) int
	visit = func(i int) int {
		switch state[i] {
		case 2:
			return layer[i]
		case 1:
			return n // a cycle
		}
		state[i] = 1
		l := 0
		for _, d := range deps[i] {
			if dl := visit(d); dl < n {
				l = max(l, dl+1)
			}
		}
		state[i], layer[i] = 2, min(l, n-1)
		return layer[i]
	}
	for i := range deps {
		visit(i)
	}
	return layer
}

// shownLines cuts label lines to MaxLineRunes, marking the cut.
func shownLines(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		if r := []rune(l); len(r) > MaxLineRunes {
			l = string(r[:MaxLineRunes-1]) + "…"
		}
		out[i] = strings.TrimSpace(l)
	}
	return out
}

// route draws a dependency downwards from the bottom of src to the top of
// dst, and a route (which may point anywhere, a revise upwards) out of
// the right side of src into the right side of dst.
func route(e Edge, src, dst *Placed) Routed {
	r := Routed{Edge: e}
	if !e.Kind.Route() {
		r.From = Point{src.X + src.W/2, src.Y + src.H}
		r.To = Point{dst.X + dst.W/2, dst.Y}
		dy := max((r.To.Y-r.From.Y)/2, gapY/2)
		r.C1 = Point{r.From.X, r.From.Y + dy}
		r.C2 = Point{r.To.X, r.To.Y - dy}
	} else {
		r.From = Point{src.X + src.W, src.Y + src.H/2}
		r.To = Point{dst.X + dst.W, dst.Y + dst.H/2}
		bulge := 40 + min(abs(r.To.Y-r.From.Y)/6, routeRoom-50)
		r.C1 = Point{r.From.X + bulge, r.From.Y}
		r.C2 = Point{r.To.X + bulge, r.To.Y}
	}
	// The curve's midpoint (t = 1/2).
	r.Label = Point{(r.From.X + 3*r.C1.X + 3*r.C2.X + r.To.X) / 8, (r.From.Y + 3*r.C1.Y + 3*r.C2.Y + r.To.Y) / 8}
	return r
}

// callEdge draws a run step's call into the called flow's frame.
func callEdge(e Edge, src *Placed, b Box) Routed {
	r := Routed{Edge: e}
	r.From = Point{src.X + src.W, src.Y + src.H/2}
	r.To = Point{b.X, b.Y + flowTitle/2}
	if b.X < src.X {
		r.From.X = src.X
		r.To.X = b.X + b.W
	}
	mx := (r.From.X + r.To.X) / 2
	r.C1 = Point{mx, r.From.Y}
	r.C2 = Point{mx, r.To.Y}
	r.Label = Point{mx, (r.From.Y + r.To.Y) / 2}
	return r
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
