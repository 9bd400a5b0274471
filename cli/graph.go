package cli

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/stratum-go/stratum/internal/graph"
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
	g := graph.Build(flows)
	w := bufio.NewWriter(env.Stdout)
	if c.format == "dot" {
		graph.WriteDOT(w, g)
	} else {
		graph.WriteMermaid(w, g)
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
