package graph

import (
	"fmt"
	"io"
	"strings"
)

// Mermaid.

// WriteMermaid writes g as a Mermaid flowchart.
func WriteMermaid(w io.Writer, g *Model) {
	fmt.Fprintln(w, "flowchart TD")
	ids := mermaidIDs(g)
	for i, f := range g.Flows {
		title := "flow " + f.Name
		if f.Entry {
			title += " (entry)"
		}
		fmt.Fprintf(w, "  subgraph %s[\"%s\"]\n", mermaidFlowID(i), mermaidText(title))
		fmt.Fprintln(w, "    direction TB")
		for _, n := range f.Nodes {
			open, closing := mermaidShape(n.Shape)
			fmt.Fprintf(w, "    %s%s\"%s\"%s\n", ids[n.Key], open, mermaidLabel(n.Lines), closing)
		}
		fmt.Fprintln(w, "  end")
	}
	flowIDs := map[string]string{}
	for i, f := range g.Flows {
		flowIDs[f.Name] = mermaidFlowID(i)
	}
	styles := map[EdgeKind][]string{}
	for i, e := range g.Edges {
		to := ids[e.To]
		if e.Kind == EdgeCalls {
			to = flowIDs[e.To]
		}
		from := ids[e.From]
		switch e.Kind {
		case EdgeData, EdgeOutput:
			fmt.Fprintf(w, "  %s --> %s\n", from, to)
		case EdgeAfter, EdgeCalls, EdgeRevise:
			fmt.Fprintf(w, "  %s -. %s .-> %s\n", from, e.Kind.Label(), to)
		case EdgeOnFail:
			fmt.Fprintf(w, "  %s == %s ==> %s\n", from, e.Kind.Label(), to)
		default:
			fmt.Fprintf(w, "  %s -- %s --> %s\n", from, e.Kind.Label(), to)
		}
		styles[e.Kind] = append(styles[e.Kind], fmt.Sprint(i))
	}
	for _, ks := range []struct {
		kind  EdgeKind
		style string
	}{
		{EdgeAfter, "stroke:#888"},
		{EdgeOnFail, "stroke:#c62828"},
		{EdgeApprove, "stroke:#2e7d32"},
		{EdgeRevise, "stroke:#ef6c00"},
		{EdgeKill, "stroke:#c62828"},
		{EdgeCalls, "stroke:#5e35b1"},
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
	for _, f := range g.Flows {
		for _, n := range f.Nodes {
			switch n.Shape {
			case ShapeGate:
				add("gate", ids[n.Key])
			case ShapeFanout:
				add("fanout", ids[n.Key])
			case ShapeRun:
				add("run", ids[n.Key])
			case ShapeOutput:
				add("output", ids[n.Key])
			}
			if n.RouteOnly {
				add("routeOnly", ids[n.Key])
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
func mermaidIDs(g *Model) map[string]string {
	ids := map[string]string{}
	used := map[string]bool{}
	for _, f := range g.Flows {
		for _, n := range f.Nodes {
			flow, step, _ := strings.Cut(n.Key, "/")
			if step == "" {
				step = "output"
			}
			base := mermaidName(flow) + "__" + mermaidName(step)
			if n.Shape == ShapeOutput {
				base = mermaidName(flow) + "__out"
			}
			id := base
			for k := 2; used[id]; k++ {
				id = fmt.Sprintf("%s_%d", base, k)
			}
			used[id] = true
			ids[n.Key] = id
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

func mermaidShape(s Shape) (string, string) {
	switch s {
	case ShapeSet:
		return "[/", "/]"
	case ShapeGate:
		return "{", "}"
	case ShapeFanout:
		return "{{", "}}"
	case ShapeRun:
		return "[[", "]]"
	case ShapeEvaluate:
		return ">", "]"
	case ShapeOutput:
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

// WriteDOT writes g as a Graphviz digraph.
func WriteDOT(w io.Writer, g *Model) {
	fmt.Fprintln(w, "digraph stratum {")
	fmt.Fprintln(w, "  compound=true;")
	fmt.Fprintln(w, "  rankdir=TB;")
	fmt.Fprintln(w, `  node [fontname="Helvetica", fontsize=11, shape=box];`)
	fmt.Fprintln(w, `  edge [fontname="Helvetica", fontsize=9];`)
	for i, f := range g.Flows {
		title := "flow " + f.Name
		if f.Entry {
			title += " (entry)"
		}
		fmt.Fprintf(w, "  subgraph cluster_%d {\n", i)
		fmt.Fprintf(w, "    label=%s;\n", dotQuote(title))
		fmt.Fprintln(w, "    style=rounded;")
		for _, n := range f.Nodes {
			attrs := []string{"label=" + dotQuote(strings.Join(n.Lines, "\n"))}
			shape, fill := dotShape(n.Shape)
			attrs = append(attrs, shape...)
			var style []string
			if fill != "" {
				style = append(style, "filled")
				attrs = append(attrs, "fillcolor="+dotQuote(fill))
			}
			if n.RouteOnly {
				style = append(style, "dashed")
			}
			if len(style) > 0 {
				attrs = append(attrs, "style="+dotQuote(strings.Join(style, ",")))
			}
			fmt.Fprintf(w, "    %s [%s];\n", dotQuote(n.Key), strings.Join(attrs, ", "))
		}
		fmt.Fprintln(w, "  }")
	}
	clusters := map[string]int{}
	firsts := map[string]string{}
	for i, f := range g.Flows {
		clusters[f.Name] = i
		firsts[f.Name] = f.First
	}
	for _, e := range g.Edges {
		to := e.To
		var attrs []string
		if l := e.Kind.Label(); l != "" {
			attrs = append(attrs, "label="+dotQuote(l))
		}
		switch e.Kind {
		case EdgeAfter:
			attrs = append(attrs, "style=dashed", `color="#888888"`)
		case EdgeOnFail:
			attrs = append(attrs, "style=bold", `color="#c62828"`)
		case EdgeApprove:
			attrs = append(attrs, `color="#2e7d32"`)
		case EdgeRevise:
			attrs = append(attrs, "style=dashed", `color="#ef6c00"`, "constraint=false")
		case EdgeKill:
			attrs = append(attrs, `color="#c62828"`)
		case EdgeCalls:
			to = firsts[e.To]
			if to == "" {
				continue
			}
			attrs = append(attrs, "style=dashed", `color="#5e35b1"`, fmt.Sprintf("lhead=cluster_%d", clusters[e.To]))
		}
		fmt.Fprintf(w, "  %s -> %s", dotQuote(e.From), dotQuote(to))
		if len(attrs) > 0 {
			fmt.Fprintf(w, " [%s]", strings.Join(attrs, ", "))
		}
		fmt.Fprintln(w, ";")
	}
	fmt.Fprintln(w, "}")
}

// dotShape returns a node's shape attributes and its fill colour ("" for
// none).
func dotShape(s Shape) ([]string, string) {
	switch s {
	case ShapeSet:
		return []string{"shape=parallelogram"}, ""
	case ShapeGate:
		return []string{"shape=diamond"}, "#fff8e1"
	case ShapeFanout:
		return []string{"shape=hexagon"}, "#e3f2fd"
	case ShapeRun:
		return []string{"shape=box", "peripheries=2"}, "#ede7f6"
	case ShapeEvaluate:
		return []string{"shape=cds"}, ""
	case ShapeOutput:
		return []string{"shape=ellipse"}, "#e8f5e9"
	}
	return []string{"shape=box"}, ""
}

// dotQuote writes s as a DOT quoted string; a newline becomes a centred
// line break.
func dotQuote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) + `"`
}
