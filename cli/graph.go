package cli

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/stratum-go/stratum/ir"
)

// graphCmd is "stratum graph": draw a spec's compiled DAG as a Mermaid
// flowchart or a Graphviz digraph (docs/cli.md, "stratum graph").
type graphCmd struct {
	flow   string
	format string
}

func (*graphCmd) Name() string     { return "graph" }
func (*graphCmd) Synopsis() string { return "[--flow NAME] [--format mermaid|dot] SPEC" }
func (*graphCmd) Short() string    { return "draw a spec's step graph (Mermaid or Graphviz)" }
func (*graphCmd) Long() string {
	return `Graph validates SPEC (a file, or - for standard input) and prints its compiled
step graph: a Mermaid flowchart (the default; GitHub renders it inside a
` + "```mermaid" + ` block) or a Graphviz digraph (--format dot; render it with
"dot -Tsvg").

Every flow is a box of its own (only NAME with --flow). Each step is one
node labelled with its id and construct:

  do        rectangle        "do (agent)", with iterate/when when declared
  set       parallelogram
  gate      diamond          its approve/revise/kill routes are labelled edges
  fanout    hexagon          what it runs over, stages, concurrency, require
  run       double rectangle a dashed "calls" edge to the called flow
  evaluate  flag shape

Edges: a solid arrow is a data dependency (the step reads the other's
output); a dotted "after" arrow is an ordering-only dependency; thick
"on_fail" arrows and "approve", "revise" and "kill" arrows are routes.
Route-only steps (run only when routed to) have a dashed border. The
"output" node shows which step's output is the flow's result.

Exit status: 0 drawn; 1 when SPEC is invalid (its problems are printed
like "stratum validate"); 2 for a usage error, an unreadable file or an
unknown --flow.`
}

func (c *graphCmd) SetFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.flow, "flow", "", "draw only the flow `NAME`")
	fs.StringVar(&c.format, "format", "mermaid", "output `FORMAT`: mermaid or dot")
}

func (c *graphCmd) Run(ctx context.Context, env *Env, args []string) error {
	if c.format != "mermaid" && c.format != "dot" {
		return usagef("unknown format %q (want mermaid or dot)", c.format)
	}
	if len(args) != 1 {
		return usagef("expected one spec file (or - for standard input), got %d arguments", len(args))
	}
	plan, err := loadPlan(env, args[0])
	if err != nil {
		return err
	}
	flows := plan.Flows
	if c.flow != "" {
		f := plan.Flow(c.flow)
		if f == nil {
			names := make([]string, len(plan.Flows))
			for i, f := range plan.Flows {
				names[i] = f.Name
			}
			return usagef("spec has no flow %q (flows: %s)", c.flow, strings.Join(names, ", "))
		}
		flows = []*ir.Flow{f}
	}
	g := buildGraph(flows)
	w := bufio.NewWriter(env.Stdout)
	if c.format == "dot" {
		writeDOT(w, g)
	} else {
		writeMermaid(w, g)
	}
	return w.Flush()
}

// loadPlan reads and compiles a spec file ("-" is standard input). An
// unreadable file is a usage error; an invalid spec prints its diagnostics
// on stderr in validate's text format and ends the command with status 1.
func loadPlan(env *Env, name string) (*ir.Plan, error) {
	src, display, err := readSpec(env, "graph", name)
	if err != nil {
		return nil, err
	}
	plan, ds := ir.Build(src)
	if len(ds) > 0 {
		_ = writeResult(env.Stderr, "text", display, ds)
		fmt.Fprintf(env.Stderr, "invalid: %s in %s\n", plural(len(ds), "problem"), display)
		return nil, exitCode(ExitFailure)
	}
	return plan, nil
}

// readSpec reads a spec file or standard input for command cmd. A file
// that cannot be read ends the command with status 2 and one line saying
// why, as in stratum validate and migrate: the command's synopsis would
// only hide the reason.
func readSpec(env *Env, cmd, name string) (src []byte, display string, err error) {
	if name == "-" {
		src, err = readBounded(env.Stdin)
		display = "<stdin>"
	} else {
		src, err = readFile(name)
		display = name
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "stratum %s: %v\n", cmd, err)
		return nil, "", exitCode(ExitUsage)
	}
	return src, display, nil
}

// The drawing model: flows of nodes and edges, independent of the output
// syntax, so that Mermaid and DOT always draw the same graph.

type nodeShape int

const (
	shapeDo nodeShape = iota
	shapeSet
	shapeGate
	shapeFanout
	shapeRun
	shapeEvaluate
	shapeOutput
)

type edgeKind int

const (
	edgeData edgeKind = iota
	edgeAfter
	edgeOnFail
	edgeApprove
	edgeRevise
	edgeKill
	edgeCalls
	edgeOutput
)

func (k edgeKind) label() string {
	switch k {
	case edgeAfter:
		return "after"
	case edgeOnFail:
		return "on_fail"
	case edgeApprove:
		return "approve"
	case edgeRevise:
		return "revise"
	case edgeKill:
		return "kill"
	case edgeCalls:
		return "calls"
	}
	return ""
}

type graphNode struct {
	key       string // "flow/step", or "flow/" for the output node
	lines     []string
	shape     nodeShape
	routeOnly bool
}

type graphEdge struct {
	from, to string // node keys; to is a flow name for edgeCalls
	kind     edgeKind
}

type graphFlow struct {
	name  string
	entry bool
	nodes []graphNode
	// first is the node key of the flow's first step in topological
	// order (where a DOT "calls" edge lands).
	first string
}

type graphModel struct {
	flows []graphFlow
	edges []graphEdge
	drawn map[string]bool // flow names drawn
}

// maxLabelExpr bounds how much of a when expression or fanout source a
// label shows; the spec has the rest.
const maxLabelExpr = 48

func buildGraph(flows []*ir.Flow) *graphModel {
	g := &graphModel{drawn: map[string]bool{}}
	for _, f := range flows {
		g.drawn[f.Name] = true
	}
	for _, f := range flows {
		gf := graphFlow{name: f.Name, entry: f.IsEntry}
		key := func(i int) string { return f.Name + "/" + f.Steps[i].ID }
		if len(f.Order) > 0 {
			gf.first = key(f.Order[0])
		}
		for i, s := range f.Steps {
			gf.nodes = append(gf.nodes, stepNode(f, s))
			data := dataDeps(s)
			for _, d := range s.Deps {
				kind := edgeAfter
				if data[f.Steps[d].ID] {
					kind = edgeData
				}
				g.edges = append(g.edges, graphEdge{from: key(d), to: key(i), kind: kind})
			}
		}
		// Routes after dependencies, so that the DAG's shape is laid out
		// by its dependencies first.
		for i, s := range f.Steps {
			route := func(target string, kind edgeKind) {
				if t := f.Step(target); target != "" && t != nil {
					g.edges = append(g.edges, graphEdge{from: key(i), to: key(t.Index), kind: kind})
				}
			}
			route(s.OnFail, edgeOnFail)
			if s.Gate != nil {
				route(s.Gate.OnApprove, edgeApprove)
				route(s.Gate.OnRevise, edgeRevise)
				route(s.Gate.OnKill, edgeKill)
			}
			if s.Kind == ir.KindRun && g.drawn[s.Run] {
				g.edges = append(g.edges, graphEdge{from: key(i), to: s.Run, kind: edgeCalls})
			}
		}
		if from := f.Output.From; from != nil && from.Kind == ir.RefStep && f.Step(from.Name) != nil {
			out := graphNode{key: f.Name + "/", lines: []string{"output"}, shape: shapeOutput}
			if f.Output.ContractName != "" {
				out.lines = append(out.lines, f.Output.ContractName)
			}
			gf.nodes = append(gf.nodes, out)
			g.edges = append(g.edges, graphEdge{from: key(f.Step(from.Name).Index), to: out.key, kind: edgeOutput})
		}
		g.flows = append(g.flows, gf)
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

func stepNode(f *ir.Flow, s *ir.Step) graphNode {
	n := graphNode{key: f.Name + "/" + s.ID, lines: []string{s.ID}, routeOnly: s.RouteOnly()}
	switch s.Kind {
	case ir.KindDo:
		n.shape = shapeDo
		agent := string(s.Agent)
		if agent == "" {
			agent = ir.DefaultAgent
		}
		desc := "do (" + agent + ")"
		if s.Iterate != nil {
			desc += fmt.Sprintf(", iterate max %d", s.Iterate.Max)
		}
		n.lines = append(n.lines, desc)
	case ir.KindSet:
		n.shape = shapeSet
		n.lines = append(n.lines, "set")
	case ir.KindGate:
		n.shape = shapeGate
		desc := "gate"
		if s.Gate.MaxRounds > 0 {
			desc += fmt.Sprintf(", max_rounds %d", s.Gate.MaxRounds)
		}
		n.lines = append(n.lines, desc)
		if s.Gate.OnKill == "" {
			// A null kill route is not an edge; say what it does.
			n.lines = append(n.lines, "kill fails the flow")
		}
	case ir.KindFanout:
		n.shape = shapeFanout
		fo := s.Fanout
		over := ""
		if fo.Over != nil {
			over = strings.TrimSuffix(strings.TrimPrefix(fo.Over.Text, "${"), "}")
		}
		n.lines = append(n.lines, "fanout over "+clip(over))
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
		n.lines = append(n.lines, desc)
		stages := make([]string, len(fo.Stages))
		for i, st := range fo.Stages {
			agent := string(st.Agent)
			if agent == "" {
				agent = ir.DefaultAgent
			}
			stages[i] = "do (" + agent + ")"
		}
		n.lines = append(n.lines, "each item: "+strings.Join(stages, " then "))
	case ir.KindRun:
		n.shape = shapeRun
		n.lines = append(n.lines, "run "+s.Run)
	case ir.KindEvaluate:
		n.shape = shapeEvaluate
		n.lines = append(n.lines, "evaluate")
	}
	if s.HasWhen {
		n.lines = append(n.lines, "when "+clip(s.When))
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

// Mermaid.

func writeMermaid(w io.Writer, g *graphModel) {
	fmt.Fprintln(w, "flowchart TD")
	ids := mermaidIDs(g)
	for i, f := range g.flows {
		title := "flow " + f.name
		if f.entry {
			title += " (entry)"
		}
		fmt.Fprintf(w, "  subgraph %s[\"%s\"]\n", mermaidFlowID(i), mermaidText(title))
		fmt.Fprintln(w, "    direction TB")
		for _, n := range f.nodes {
			open, closing := mermaidShape(n.shape)
			fmt.Fprintf(w, "    %s%s\"%s\"%s\n", ids[n.key], open, mermaidLabel(n.lines), closing)
		}
		fmt.Fprintln(w, "  end")
	}
	flowIDs := map[string]string{}
	for i, f := range g.flows {
		flowIDs[f.name] = mermaidFlowID(i)
	}
	styles := map[edgeKind][]string{}
	for i, e := range g.edges {
		to := ids[e.to]
		if e.kind == edgeCalls {
			to = flowIDs[e.to]
		}
		from := ids[e.from]
		switch e.kind {
		case edgeData, edgeOutput:
			fmt.Fprintf(w, "  %s --> %s\n", from, to)
		case edgeAfter, edgeCalls, edgeRevise:
			fmt.Fprintf(w, "  %s -. %s .-> %s\n", from, e.kind.label(), to)
		case edgeOnFail:
			fmt.Fprintf(w, "  %s == %s ==> %s\n", from, e.kind.label(), to)
		default:
			fmt.Fprintf(w, "  %s -- %s --> %s\n", from, e.kind.label(), to)
		}
		styles[e.kind] = append(styles[e.kind], fmt.Sprint(i))
	}
	for _, ks := range []struct {
		kind  edgeKind
		style string
	}{
		{edgeAfter, "stroke:#888"},
		{edgeOnFail, "stroke:#c62828"},
		{edgeApprove, "stroke:#2e7d32"},
		{edgeRevise, "stroke:#ef6c00"},
		{edgeKill, "stroke:#c62828"},
		{edgeCalls, "stroke:#5e35b1"},
	} {
		if idx := styles[ks.kind]; len(idx) > 0 {
			fmt.Fprintf(w, "  linkStyle %s %s\n", strings.Join(idx, ","), ks.style)
		}
	}
	classes := map[string][]string{}
	var order []string
	add := func(class, id string) {
		if classes[class] == nil {
			order = append(order, class)
		}
		classes[class] = append(classes[class], id)
	}
	for _, f := range g.flows {
		for _, n := range f.nodes {
			switch n.shape {
			case shapeGate:
				add("gate", ids[n.key])
			case shapeFanout:
				add("fanout", ids[n.key])
			case shapeRun:
				add("run", ids[n.key])
			case shapeOutput:
				add("output", ids[n.key])
			}
			if n.routeOnly {
				add("routeOnly", ids[n.key])
			}
		}
	}
	defs := map[string]string{
		"gate":      "fill:#fff8e1,stroke:#f9a825",
		"fanout":    "fill:#e3f2fd,stroke:#1565c0",
		"run":       "fill:#ede7f6,stroke:#5e35b1",
		"output":    "fill:#e8f5e9,stroke:#2e7d32",
		"routeOnly": "stroke-dasharray:5 5",
	}
	for _, c := range order {
		fmt.Fprintf(w, "  classDef %s %s\n", c, defs[c])
		fmt.Fprintf(w, "  class %s %s\n", strings.Join(classes[c], ","), c)
	}
}

func mermaidFlowID(i int) string { return fmt.Sprintf("flow%d", i) }

// mermaidIDs gives every node a Mermaid id made of its flow's and step's
// names (dashes become underscores, since "a--b" would read as an edge),
// made unique with a numeric suffix when two names collide that way.
func mermaidIDs(g *graphModel) map[string]string {
	ids := map[string]string{}
	used := map[string]bool{}
	for _, f := range g.flows {
		for _, n := range f.nodes {
			flow, step, _ := strings.Cut(n.key, "/")
			if step == "" {
				step = "output"
			}
			base := mermaidName(flow) + "__" + mermaidName(step)
			if n.shape == shapeOutput {
				base = mermaidName(flow) + "__out"
			}
			id := base
			for k := 2; used[id]; k++ {
				id = fmt.Sprintf("%s_%d", base, k)
			}
			used[id] = true
			ids[n.key] = id
		}
	}
	return ids
}

func mermaidName(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

func mermaidShape(s nodeShape) (string, string) {
	switch s {
	case shapeSet:
		return "[/", "/]"
	case shapeGate:
		return "{", "}"
	case shapeFanout:
		return "{{", "}}"
	case shapeRun:
		return "[[", "]]"
	case shapeEvaluate:
		return ">", "]"
	case shapeOutput:
		return "([", "])"
	}
	return "[", "]"
}

func mermaidLabel(lines []string) string {
	parts := make([]string, len(lines))
	for i, l := range lines {
		parts[i] = mermaidText(l)
	}
	return strings.Join(parts, "<br/>")
}

// mermaidText escapes text for a double-quoted Mermaid label with entity
// codes, so that quotes, angle brackets and '#' stay literal.
func mermaidText(s string) string {
	return strings.NewReplacer("#", "#35;", "\"", "#quot;", "<", "#lt;", ">", "#gt;").Replace(s)
}

// Graphviz DOT.

func writeDOT(w io.Writer, g *graphModel) {
	fmt.Fprintln(w, "digraph stratum {")
	fmt.Fprintln(w, "  compound=true;")
	fmt.Fprintln(w, "  rankdir=TB;")
	fmt.Fprintln(w, `  node [fontname="Helvetica", fontsize=11, shape=box];`)
	fmt.Fprintln(w, `  edge [fontname="Helvetica", fontsize=9];`)
	for i, f := range g.flows {
		title := "flow " + f.name
		if f.entry {
			title += " (entry)"
		}
		fmt.Fprintf(w, "  subgraph cluster_%d {\n", i)
		fmt.Fprintf(w, "    label=%s;\n", dotQuote(title))
		fmt.Fprintln(w, "    style=rounded;")
		for _, n := range f.nodes {
			attrs := []string{"label=" + dotQuote(strings.Join(n.lines, "\n"))}
			shape, fill := dotShape(n.shape)
			attrs = append(attrs, shape...)
			var style []string
			if fill != "" {
				style = append(style, "filled")
				attrs = append(attrs, "fillcolor="+dotQuote(fill))
			}
			if n.routeOnly {
				style = append(style, "dashed")
			}
			if len(style) > 0 {
				attrs = append(attrs, "style="+dotQuote(strings.Join(style, ",")))
			}
			fmt.Fprintf(w, "    %s [%s];\n", dotQuote(n.key), strings.Join(attrs, ", "))
		}
		fmt.Fprintln(w, "  }")
	}
	clusters := map[string]int{}
	firsts := map[string]string{}
	for i, f := range g.flows {
		clusters[f.name] = i
		firsts[f.name] = f.first
	}
	for _, e := range g.edges {
		to := e.to
		var attrs []string
		if l := e.kind.label(); l != "" {
			attrs = append(attrs, "label="+dotQuote(l))
		}
		switch e.kind {
		case edgeAfter:
			attrs = append(attrs, "style=dashed", `color="#888888"`)
		case edgeOnFail:
			attrs = append(attrs, "style=bold", `color="#c62828"`)
		case edgeApprove:
			attrs = append(attrs, `color="#2e7d32"`)
		case edgeRevise:
			attrs = append(attrs, "style=dashed", `color="#ef6c00"`, "constraint=false")
		case edgeKill:
			attrs = append(attrs, `color="#c62828"`)
		case edgeCalls:
			to = firsts[e.to]
			if to == "" {
				continue
			}
			attrs = append(attrs, "style=dashed", `color="#5e35b1"`, fmt.Sprintf("lhead=cluster_%d", clusters[e.to]))
		}
		fmt.Fprintf(w, "  %s -> %s", dotQuote(e.from), dotQuote(to))
		if len(attrs) > 0 {
			fmt.Fprintf(w, " [%s]", strings.Join(attrs, ", "))
		}
		fmt.Fprintln(w, ";")
	}
	fmt.Fprintln(w, "}")
}

// dotShape returns a node's shape attributes and its fill colour ("" for
// none).
func dotShape(s nodeShape) ([]string, string) {
	switch s {
	case shapeSet:
		return []string{"shape=parallelogram"}, ""
	case shapeGate:
		return []string{"shape=diamond"}, "#fff8e1"
	case shapeFanout:
		return []string{"shape=hexagon"}, "#e3f2fd"
	case shapeRun:
		return []string{"shape=box", "peripheries=2"}, "#ede7f6"
	case shapeEvaluate:
		return []string{"shape=cds"}, ""
	case shapeOutput:
		return []string{"shape=ellipse"}, "#e8f5e9"
	}
	return []string{"shape=box"}, ""
}

// dotQuote writes s as a DOT quoted string; a newline becomes a centred
// line break.
func dotQuote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) + `"`
}
