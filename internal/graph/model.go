package graph

import (
	"fmt"
	"strings"

	"github.com/stratum-go/stratum/ir"
)

// Shape is how a node is drawn: one per step construct, and the output.
type Shape int

// The node shapes.
const (
	ShapeDo Shape = iota
	ShapeSet
	ShapeGate
	ShapeFanout
	ShapeRun
	ShapeEvaluate
	ShapeOutput
)

// EdgeKind is what an edge means.
type EdgeKind int

// The edge kinds.
const (
	// EdgeData: the target reads the source's output.
	EdgeData EdgeKind = iota
	// EdgeAfter: an ordering-only dependency.
	EdgeAfter
	// EdgeOnFail, EdgeApprove, EdgeRevise, EdgeKill: routes.
	EdgeOnFail
	EdgeApprove
	EdgeRevise
	EdgeKill
	// EdgeCalls: a run step calls a flow (To is the flow's name).
	EdgeCalls
	// EdgeOutput: the step whose output is the flow's result.
	EdgeOutput
)

// Label is the word written on an edge of this kind ("" for none).
func (k EdgeKind) Label() string {
	switch k {
	case EdgeAfter:
		return "after"
	case EdgeOnFail:
		return "on_fail"
	case EdgeApprove:
		return "approve"
	case EdgeRevise:
		return "revise"
	case EdgeKill:
		return "kill"
	case EdgeCalls:
		return "calls"
	}
	return ""
}

// Route reports whether an edge of this kind is a route rather than a
// dependency (it does not order the layout).
func (k EdgeKind) Route() bool {
	switch k {
	case EdgeOnFail, EdgeApprove, EdgeRevise, EdgeKill, EdgeCalls:
		return true
	}
	return false
}

// Node is one step (or a flow's output).
type Node struct {
	// Key is "flow/step", or "flow/" for the output node.
	Key string
	// Flow and Step are the flow's name and the step's id ("" for the
	// output node).
	Flow, Step string
	// Lines are the label: the step id, its construct, details.
	Lines     []string
	Shape     Shape
	RouteOnly bool
}

// Edge joins two nodes by their keys; To is a flow name for EdgeCalls.
type Edge struct {
	From, To string
	Kind     EdgeKind
}

// Flow is one flow's nodes, in declaration order (the output last).
type Flow struct {
	Name  string
	Entry bool
	Nodes []Node
	// First is the node key of the flow's first step in topological
	// order (where a DOT "calls" edge lands).
	First string
}

// Model is the drawing of some flows of a spec.
type Model struct {
	Flows []Flow
	Edges []Edge
	// Drawn is the set of flow names drawn.
	Drawn map[string]bool
}

// maxLabelExpr bounds how much of a when expression or fanout source a
// label shows; the spec has the rest.
const maxLabelExpr = 48

// Build draws flows (of one compiled plan).
func Build(flows []*ir.Flow) *Model {
	g := &Model{Drawn: map[string]bool{}}
	for _, f := range flows {
		g.Drawn[f.Name] = true
	}
	for _, f := range flows {
		gf := Flow{Name: f.Name, Entry: f.IsEntry}
		key := func(i int) string { return f.Name + "/" + f.Steps[i].ID }
		if len(f.Order) > 0 {
			gf.First = key(f.Order[0])
		}
		for i, s := range f.Steps {
			gf.Nodes = append(gf.Nodes, stepNode(f, s))
			data := dataDeps(s)
			for _, d := range s.Deps {
				kind := EdgeAfter
				if data[f.Steps[d].ID] {
					kind = EdgeData
				}
				g.Edges = append(g.Edges, Edge{From: key(d), To: key(i), Kind: kind})
			}
		}
		// Routes after dependencies, so that the DAG's shape is laid out
		// by its dependencies first.
		for i, s := range f.Steps {
			route := func(target string, kind EdgeKind) {
				if t := f.Step(target); target != "" && t != nil {
					g.Edges = append(g.Edges, Edge{From: key(i), To: key(t.Index), Kind: kind})
				}
			}
			route(s.OnFail, EdgeOnFail)
			if s.Gate != nil {
				route(s.Gate.OnApprove, EdgeApprove)
				route(s.Gate.OnRevise, EdgeRevise)
				route(s.Gate.OnKill, EdgeKill)
			}
			if s.Kind == ir.KindRun && g.Drawn[s.Run] {
				g.Edges = append(g.Edges, Edge{From: key(i), To: s.Run, Kind: EdgeCalls})
			}
		}
		if from := f.Output.From; from != nil && from.Kind == ir.RefStep && f.Step(from.Name) != nil {
			out := Node{Key: f.Name + "/", Flow: f.Name, Lines: []string{"output"}, Shape: ShapeOutput}
			if f.Output.ContractName != "" {
				out.Lines = append(out.Lines, f.Output.ContractName)
			}
			gf.Nodes = append(gf.Nodes, out)
			g.Edges = append(g.Edges, Edge{From: key(f.Step(from.Name).Index), To: out.Key, Kind: EdgeOutput})
		}
		g.Flows = append(g.Flows, gf)
	}
	return g
}

// dataDeps is the set of step ids whose output s references.
func dataDeps(s *ir.Step) map[string]bool {
	m := map[string]bool{}
	for _, site := range s.Sites {
		if site.Template == nil {
			continue
		}
		for _, r := range site.Template.Refs() {
			if r.Kind == ir.RefStep {
				m[r.Name] = true
			}
		}
	}
	return m
}

func stepNode(f *ir.Flow, s *ir.Step) Node {
	n := Node{Key: f.Name + "/" + s.ID, Flow: f.Name, Step: s.ID, Lines: []string{s.ID}, RouteOnly: s.RouteOnly()}
	switch s.Kind {
	case ir.KindDo:
		n.Shape = ShapeDo
		agent := string(s.Agent)
		if agent == "" {
			agent = ir.DefaultAgent
		}
		desc := "do (" + agent + ")"
		if s.Iterate != nil {
			desc += fmt.Sprintf(", iterate max %d", s.Iterate.Max)
		}
		n.Lines = append(n.Lines, desc)
	case ir.KindSet:
		n.Shape = ShapeSet
		n.Lines = append(n.Lines, "set")
	case ir.KindGate:
		n.Shape = ShapeGate
		desc := "gate"
		if s.Gate.MaxRounds > 0 {
			desc += fmt.Sprintf(", max_rounds %d", s.Gate.MaxRounds)
		}
		n.Lines = append(n.Lines, desc)
		if s.Gate.OnKill == "" {
			// A null kill route is not an edge; say what it does.
			n.Lines = append(n.Lines, "kill fails the flow")
		}
	case ir.KindFanout:
		n.Shape = ShapeFanout
		fo := s.Fanout
		over := ""
		if fo.Over != nil {
			over = strings.TrimSuffix(strings.TrimPrefix(fo.Over.Text, "${"), "}")
		}
		n.Lines = append(n.Lines, "fanout over "+clip(over))
		req := "all"
		switch {
		case fo.Require.Any:
			req = "any"
		case !fo.Require.All:
			req = fmt.Sprint(fo.Require.Count)
		}
		desc := fmt.Sprintf("%s, concurrency %d, require %s", plural(len(fo.Stages), "stage"), fo.Concurrency, req)
		if fo.Isolation == ir.IsolationWorktree {
			desc += ", worktrees"
		}
		if fo.Dispatch == "consumer" {
			desc += ", consumer"
		}
		n.Lines = append(n.Lines, desc)
		stages := make([]string, len(fo.Stages))
		for i, st := range fo.Stages {
			agent := string(st.Agent)
			if agent == "" {
				agent = ir.DefaultAgent
			}
			stages[i] = "do (" + agent + ")"
		}
		n.Lines = append(n.Lines, "each item: "+strings.Join(stages, " then "))
	case ir.KindRun:
		n.Shape = ShapeRun
		n.Lines = append(n.Lines, "run "+s.Run)
	case ir.KindEvaluate:
		n.Shape = ShapeEvaluate
		n.Lines = append(n.Lines, "evaluate")
	}
	if s.HasWhen {
		n.Lines = append(n.Lines, "when "+clip(s.When))
	}
	return n
}

func clip(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > maxLabelExpr {
		return string(r[:maxLabelExpr-3]) + "..."
	}
	return s
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
