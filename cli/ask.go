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
// routes with the effective round limit, reads approve, revise or kill,
// then an optional note; the answer is recorded as decided by who. Revise
// is offered only while the gate can take one: past the limit a revise
// fails the run, and a menu choice must never lose the accepted work. End
// of input before a decision is driver.ErrNoAnswer; ctx ends when the gate
// is decided elsewhere.
func askGate(ctx context.Context, env *Env, term *terminal, e *engine.Engine, plan *ir.Plan, g engine.WaitingGate, who string) (driver.GateAnswer, error) {
	term.openGate()
	defer term.closeGate()
	if ctx.Err() != nil {
		return driver.GateAnswer{}, ctx.Err()
	}
	var b strings.Builder
	if g.Kind == engine.WaitInterrupted {
		fmt.Fprintf(&b, "\nstep %s of run %s: its last attempt started and never reported (its agent died); it may have left changes in the workspace.\n", g.StepID, g.RunID)
		fmt.Fprintf(&b, "  approve  run the attempt again\n  kill     fail it (the flow's on_fail, if any, applies)\n")
		fmt.Fprintf(&b, "  (or decide from another terminal: stratum gate approve|reject %s %s)\n", g.RunID, g.StepID)
		return askDecision(ctx, env, term, b.String(), "approve/kill", false, false, who)
	}
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
	canRevise := g.OnRevise != "" && g.RevisesLeft > 0
	if g.OnRevise != "" {
		fmt.Fprintf(&b, "  revise   %s\n", reviseLine(g))
	}
	fmt.Fprintf(&b, "  kill     %s\n", route(g.OnKill, "stop the flow (it fails)"))
	fmt.Fprintf(&b, "  (or decide from another terminal: stratum gate approve|reject|revise %s %s)\n", g.RunID, g.StepID)
	choices := "approve/kill"
	if canRevise {
		choices = "approve/revise/kill"
	}
	return askDecision(ctx, env, term, b.String(), choices, canRevise, g.OnRevise != "", who)
}

// askDecision shows the question and reads a decision (revise only when
// canRevise; hasRevise says whether the gate has a revise route at all),
// then an optional note for the record.
func askDecision(ctx context.Context, env *Env, term *terminal, question, choices string, canRevise, hasRevise bool, who string) (driver.GateAnswer, error) {
	fmt.Fprintf(env.Stderr, "%sdecision [%s]: ", question, choices)
	answer := driver.GateAnswer{ResolvedBy: who}
	for answer.Decision == "" {
		line, ok := term.next(ctx, true)
		if !ok {
			fmt.Fprintln(env.Stderr)
			if ctx.Err() != nil {
				return driver.GateAnswer{}, ctx.Err()
			}
			return driver.GateAnswer{}, driver.ErrNoAnswer
		}
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "a", "approve", "y", "yes":
			answer.Decision = engine.DecisionApprove
		case "k", "kill", "reject", "n", "no":
			answer.Decision = engine.DecisionKill
		case "r", "revise":
			if canRevise {
				answer.Decision = engine.DecisionRevise
				continue
			}
			if hasRevise {
				fmt.Fprintf(env.Stderr, "revise is not possible any more: it would fail the run and lose the work accepted so far.\n")
			} else {
				fmt.Fprintf(env.Stderr, "this gate has no revise route.\n")
			}
			fallthrough
		default:
			fmt.Fprintf(env.Stderr, "please answer %s: ", choices)
		}
	}
	fmt.Fprintf(env.Stderr, "note for the record (optional; Enter for none): ")
	note, ok := term.next(ctx, true)
	if !ok {
		fmt.Fprintln(env.Stderr)
		if ctx.Err() != nil {
			return driver.GateAnswer{}, ctx.Err() // decided elsewhere meanwhile
		}
	}
	answer.Note = strings.TrimSpace(note)
	return answer, nil
}

// reviseLine describes what a revise of g does, with the effective limit
// on rounds (the smaller of the flow's and the gate's), or why it is not
// offered.
func reviseLine(g engine.WaitingGate) string {
	if g.RevisesLeft > 0 {
		return fmt.Sprintf("send %s back for another round (revision %d of at most %d)", g.OnRevise, g.Round+1, g.MaxRounds)
	}
	return fmt.Sprintf("not offered: the %s allowed are used up, so a revise would fail the run", plural(g.MaxRounds, "revision"))
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
