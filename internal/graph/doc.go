// Package graph is the drawing model of a compiled spec's step graph
// (docs/cli.md, "stratum graph"): flows of nodes (one per step, with its
// label lines and shape) and the edges between them (data and after
// dependencies, on_fail and gate routes, subflow calls, the flow's
// output), independent of any output syntax, so that every picture of a
// spec draws the same graph. It writes the model as a Mermaid flowchart
// or a Graphviz digraph, and lays it out in layers with coordinates for
// the SVG of `stratum serve` (docs/serve.md).
//
// graph imports only ir of the module; cli and web draw with it.
package graph
