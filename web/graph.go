package web

import (
	"fmt"
	"strings"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/internal/graph"
	"github.com/stratum-go/stratum/ir"
)

// The step graph of a run: the graph `stratum graph` draws (package
// internal/graph), laid out in layers and written as inline SVG by the
// run template, each node coloured by its step's status. The geometry is
// numbers computed here; every label is text the template escapes.

type svgLine struct {
	X, Y int
	Text string
}

type svgNode struct {
	Key    string
	Href   string
	Shape  string
	Status string
	// Class is the node's classes: "node", its shape, its status.
	Class string
	X, Y  int
	W, H  int
	// Points is the outline of a polygon shape ("" for a rectangle).
	Points string
	// Inner is a second outline (a run step's double border).
	Inner string
	Lines []svgLine
	Title string
}

type svgEdge struct {
	Path  string
	Kind  string
	Label string
	LX    int
	LY    int
}

type svgFlow struct {
	graph.Box
	TX, TY int
	Title  string
}

type graphView struct {
	W, H  int
	Flows []svgFlow
	Nodes []svgNode
	Edges []svgEdge
	// Compact: node ids only (a large graph).
	Compact bool
	// Status lists every node's status, for the page's version of the
	// graph (the geometry never changes during a run).
	Status []string
}

// compactNodes is the most nodes a graph may have to be drawn with every
// label line.
const compactNodes = 150

var shapeNames = map[graph.Shape]string{
	graph.ShapeDo: "do", graph.ShapeSet: "set", graph.ShapeGate: "gate", graph.ShapeFanout: "fanout",
	graph.ShapeRun: "run", graph.ShapeEvaluate: "evaluate", graph.ShapeOutput: "output",
}

var edgeNames = map[graph.EdgeKind]string{
	graph.EdgeData: "data", graph.EdgeAfter: "after", graph.EdgeOnFail: "onfail", graph.EdgeApprove: "approve",
	graph.EdgeRevise: "revise", graph.EdgeKill: "kill", graph.EdgeCalls: "calls", graph.EdgeOutput: "output",
}

// drawGraph draws a run's plan. The entry flow's nodes take their steps'
// status; a flow called by exactly one run step of the entry flow takes
// that call's subflow statuses.
func drawGraph(plan *ir.Plan, entry *ir.Flow, steps map[string]*engine.StepView, runID string) *graphView {
	m := graph.Build(plan.Flows)
	n := 0
	for _, f := range m.Flows {
		n += len(f.Nodes)
	}
	// A large graph draws each node with its id alone, no tooltip and no
	// edge labels: text is most of what a browser spends on an SVG.
	compact := n > compactNodes
	opts := graph.Options{}
	if compact {
		opts.MaxLines = 1
	}
	d := graph.Layout(m, opts)
	status := map[string]string{} // node key -> status
	anchor := map[string]string{} // node key -> the step card's id
	for _, st := range entry.Steps {
		if sv := steps[st.ID]; sv != nil {
			status[entry.Name+"/"+st.ID] = string(sv.Status)
		}
		anchor[entry.Name+"/"+st.ID] = st.ID
	}
	callers := map[string][]*ir.Step{}
	for _, st := range entry.Steps {
		if st.Kind == ir.KindRun {
			callers[st.Run] = append(callers[st.Run], st)
		}
	}
	for name, cs := range callers {
		if len(cs) != 1 || name == entry.Name {
			continue
		}
		f := plan.Flow(name)
		if f == nil {
			continue
		}
		for _, st := range f.Steps {
			anchor[name+"/"+st.ID] = cs[0].ID + "/" + st.ID
		}
		if sv := steps[cs[0].ID]; sv != nil && sv.Sub != nil {
			for id, ssv := range sv.Sub.Steps {
				status[name+"/"+id] = string(ssv.Status)
			}
		}
	}
	g := &graphView{W: d.W, H: d.H, Compact: compact}
	for _, b := range d.Flows {
		title := "flow " + b.Name
		if b.Entry {
			title += " (entry)"
		}
		g.Flows = append(g.Flows, svgFlow{Box: b, TX: b.X + 12, TY: b.Y + 18, Title: title})
	}
	for _, p := range d.Nodes {
		n := svgNode{Key: p.Key, Shape: shapeNames[p.Shape], Status: "none", X: p.X, Y: p.Y, W: p.W, H: p.H}
		if !compact {
			n.Title = strings.Join(p.Lines, "\n")
		}
		if st, ok := status[p.Key]; ok {
			n.Status = st
		}
		if id, ok := anchor[p.Key]; ok {
			n.Href = "#step-" + id
		}
		if p.RouteOnly {
			n.Shape += " routeonly"
		}
		n.Class = "node " + n.Shape + " " + statusClass(n.Status)
		n.Points, n.Inner = outline(p)
		top := p.Y + (p.H-len(p.Shown)*graph.LineHeight)/2 + graph.LineHeight - 3
		for i, l := range p.Shown {
			n.Lines = append(n.Lines, svgLine{X: p.X + p.W/2, Y: top + i*graph.LineHeight, Text: l})
		}
		g.Nodes = append(g.Nodes, n)
		g.Status = append(g.Status, n.Status)
	}
	for _, e := range d.Edges {
		se := svgEdge{Path: edgePath(&e), Kind: edgeNames[e.Kind], LX: e.Label.X, LY: e.Label.Y}
		if !compact {
			se.Label = e.Kind.Label()
		}
		g.Edges = append(g.Edges, se)
	}
	return g
}

// edgePath is an edge's curve as short SVG path data: a straight line
// when the curve is one (an edge between two nodes one above the other),
// else the cubic Bézier curve. (One path per edge: a browser culls the
// paths out of view, while one path holding many edges, shorter to
// write, is drawn whole for every tile of the picture, which costs a
// large graph seconds.)
func edgePath(e *graph.Routed) string {
	f, c1, c2, t := e.From, e.C1, e.C2, e.To
	if f.X == c1.X && c1.X == c2.X && c2.X == t.X {
		return fmt.Sprintf("M%d %dV%d", f.X, f.Y, t.Y)
	}
	if f.Y == c1.Y && c1.Y == c2.Y && c2.Y == t.Y {
		return fmt.Sprintf("M%d %dH%d", f.X, f.Y, t.X)
	}
	return fmt.Sprintf("M%d %dC%d %d %d %d %d %d", f.X, f.Y, c1.X, c1.Y, c2.X, c2.Y, t.X, t.Y)
}

// outline is a node's polygon, for the shapes that are not rectangles.
func outline(p graph.Placed) (points, inner string) {
	x, y, w, h := p.X, p.Y, p.W, p.H
	pts := func(xy ...int) string {
		var b strings.Builder
		for i := 0; i+1 < len(xy); i += 2 {
			if i > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(&b, "%d,%d", xy[i], xy[i+1])
		}
		return b.String()
	}
	const k = 14
	switch p.Shape {
	case graph.ShapeSet:
		return pts(x+k, y, x+w, y, x+w-k, y+h, x, y+h), ""
	case graph.ShapeGate:
		return pts(x+k, y, x+w-k, y, x+w, y+k, x+w, y+h-k, x+w-k, y+h, x+k, y+h, x, y+h-k, x, y+k), ""
	case graph.ShapeFanout:
		return pts(x+k, y, x+w-k, y, x+w, y+h/2, x+w-k, y+h, x+k, y+h, x, y+h/2), ""
	case graph.ShapeEvaluate:
		return pts(x, y, x+w-k, y, x+w, y+h/2, x+w-k, y+h, x, y+h), ""
	case graph.ShapeRun:
		return "", pts(x+4, y+4, x+w-4, y+4, x+w-4, y+h-4, x+4, y+h-4)
	}
	return "", ""
}
