package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/stratum-go/stratum/driver"
	"github.com/stratum-go/stratum/engine"
)

// askGate asks the person at the terminal to decide gate g: it shows the
// gate's view (each step under review with its task, output and the diff
// stat of its changes, each cut to a few lines; stratum gate show has them
// whole) and its routes with the effective round limit, reads approve,
// revise or kill, then an optional note; the answer is recorded as decided
// by who, with the digest of what was shown (the driver passes it). Revise
// is offered only while the gate can take one: past the limit a revise
// fails the run, and a menu choice must never lose the accepted work. End
// of input before a decision is driver.ErrNoAnswer; ctx ends when the gate
// is decided elsewhere.
func askGate(ctx context.Context, env *Env, term *terminal, gv engine.GateView, who string) (driver.GateAnswer, error) {
	g := gv.WaitingGate
	term.openGate()
	defer term.closeGate()
	if ctx.Err() != nil {
		return driver.GateAnswer{}, ctx.Err()
	}
	var b strings.Builder
	if g.Kind == engine.WaitInterrupted {
		fmt.Fprintf(&b, "\nstep %s of run %s: its last attempt started and never reported (its agent died); it may have left changes in the workspace.\n", g.StepID, g.RunID)
		writeUnderReview(&b, gv, askLimits)
		writeRoutes(&b, g)
		fmt.Fprintf(&b, "  (or decide from another terminal: stratum gate approve|reject %s %s)\n", g.RunID, g.StepID)
		return askDecision(ctx, env, term, b.String(), "approve/kill", false, false, who)
	}
	fmt.Fprintf(&b, "\ngate %s of run %s is waiting for your decision (%s).\n", g.StepID, g.RunID, roundLine(g))
	writeUnderReview(&b, gv, askLimits)
	writeRoutes(&b, g)
	canRevise := g.OnRevise != "" && g.RevisesLeft > 0
	fmt.Fprintf(&b, "  (or decide from another terminal: stratum gate %s %s %s --digest %s)\n", gateChoices(g), g.RunID, g.StepID, gv.Digest)
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
