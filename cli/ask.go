package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/stratum-go/stratum/driver"
	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/ir"
)

// maxShownOutput bounds how much of a step output a gate question shows.
const maxShownOutput = 600

// askGate asks the person at the terminal to decide gate g: it shows what
// the gate follows (the outputs of the steps it depends on) and its
// routes, then reads approve, revise or kill. End of input is
// driver.ErrNoAnswer; ctx ends when the gate is decided elsewhere.
func askGate(ctx context.Context, env *Env, term *terminal, e *engine.Engine, plan *ir.Plan, g engine.WaitingGate) (engine.Decision, error) {
	term.openGate()
	defer term.closeGate()
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\ngate %s of run %s is waiting for your decision.\n", g.StepID, g.RunID)
	for _, dep := range gateInputs(ctx, e, plan, g) {
		fmt.Fprintf(&b, "  %s\n", dep)
	}
	route := func(target, none string) string {
		if target == "" {
			return none
		}
		return "go to " + target
	}
	fmt.Fprintf(&b, "  approve  %s\n", route(g.OnApprove, "continue the flow"))
	canRevise := g.OnRevise != ""
	if canRevise {
		limit := ""
		if g.MaxRounds > 0 {
			limit = fmt.Sprintf(", round %d of at most %d", g.Round+1, g.MaxRounds)
		}
		fmt.Fprintf(&b, "  revise   send %s back for another round%s\n", g.OnRevise, limit)
	}
	fmt.Fprintf(&b, "  kill     %s\n", route(g.OnKill, "stop the flow (it fails)"))
	fmt.Fprintf(&b, "  (or decide from another terminal: stratum gate approve|reject|revise %s %s)\n", g.RunID, g.StepID)
	choices := "approve/kill"
	if canRevise {
		choices = "approve/revise/kill"
	}
	prompt := fmt.Sprintf("decision [%s]: ", choices)
	fmt.Fprint(env.Stderr, b.String()+prompt)
	for {
		line, ok := term.next(ctx, true)
		if !ok {
			fmt.Fprintln(env.Stderr)
			if ctx.Err() != nil {
				return "", ctx.Err()
			}
			return "", driver.ErrNoAnswer
		}
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "a", "approve", "y", "yes":
			return engine.DecisionApprove, nil
		case "k", "kill", "reject", "n", "no":
			return engine.DecisionKill, nil
		case "r", "revise":
			if canRevise {
				return engine.DecisionRevise, nil
			}
		}
		fmt.Fprintf(env.Stderr, "please answer %s: ", choices)
	}
}

// gateInputs describes the outputs of the steps gate g depends on, one
// line each, for the person deciding.
func gateInputs(ctx context.Context, e *engine.Engine, plan *ir.Plan, g engine.WaitingGate) []string {
	if plan == nil {
		return nil
	}
	flow := plan.Flow(g.Flow)
	steps := func(a *engine.AuditReport) map[string]*engine.StepView { return a.Steps }
	local := g.StepID
	a, err := e.Audit(ctx, g.RunID)
	if err != nil || flow == nil {
		return nil
	}
	if parent, child, ok := strings.Cut(g.StepID, "/"); ok {
		rs := flow.Step(parent)
		ps := a.Steps[parent]
		if rs == nil || ps == nil || ps.Sub == nil {
			return nil
		}
		flow, local = plan.Flow(rs.Run), child
		steps = func(*engine.AuditReport) map[string]*engine.StepView { return ps.Sub.Steps }
	}
	if flow == nil || flow.Step(local) == nil {
		return nil
	}
	var out []string
	for _, i := range flow.Step(local).Deps {
		dep := flow.Steps[i]
		ss := steps(a)[dep.ID]
		if ss == nil || !ss.Output.Present {
			continue
		}
		b, _ := json.Marshal(ss.Output)
		text := string(b)
		if r := []rune(text); len(r) > maxShownOutput {
			text = string(r[:maxShownOutput]) + "..."
		}
		out = append(out, fmt.Sprintf("%s output: %s", dep.ID, text))
	}
	return out
}
