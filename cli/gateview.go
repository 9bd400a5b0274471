package cli

import (
	"fmt"
	"io"
	"strings"
	"unicode"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/expr"
)

// What a person deciding a gate reads (docs/cli.md, "stratum gate"):
// the work under review, step by step — the task each step was given,
// rendered, its output (JSON, indented, never HTML-escaped), the diff stat
// of what it changed in the workspace (or, for a worktree fanout, the
// size of each item's patch) — then the routes with the effective round
// limit and the digest a decision passes to be refused if the content
// changed. `stratum gate show` prints it whole; the terminal question of
// `stratum run --gate ask` prints it with each block cut to a few lines.

// viewLimits bound the blocks of a gate view; zero means no cut.
type viewLimits struct {
	lines int // lines of each task, output and stat block
}

// askLimits are the cuts of the terminal question.
var askLimits = viewLimits{lines: 12}

// writeUnderReview writes what a gate view shows for review.
func writeUnderReview(w io.Writer, g engine.GateView, lim viewLimits) {
	if len(g.UnderReview) == 0 {
		fmt.Fprintf(w, "  nothing under review (the gate follows no step)\n")
		return
	}
	more := "stratum gate show " + g.RunID + " " + g.StepID
	for _, r := range g.UnderReview {
		fmt.Fprintf(w, "  %s (%s)\n", r.StepID, r.Status)
		if r.Task != "" {
			fmt.Fprintf(w, "    task:\n")
			writeBlock(w, r.Task, lim, more)
		}
		if r.Output.Present {
			label := "output"
			if r.OutputTruncated {
				label = fmt.Sprintf("output (cut at %d KiB; stratum audit --json %s has all of it)", engine.MaxReviewOutput>>10, g.RunID)
			}
			fmt.Fprintf(w, "    %s:\n", label)
			writeBlock(w, outputText(r.Output, r.OutputTruncated), lim, more)
		}
		if c := r.WorkChanges; c != nil {
			writeWorkChanges(w, g.RunID, r.StepID, c, lim, more)
		}
		if len(r.Changes) > 0 {
			fmt.Fprintf(w, "    changes of its worktree items:\n")
			for _, it := range r.Changes {
				if it.Bytes == 0 {
					fmt.Fprintf(w, "      %s/%d: no changes\n", r.StepID, it.ItemIndex)
					continue
				}
				fmt.Fprintf(w, "      %s/%d: a patch of %s (stratum diff %s %s/%d)\n", r.StepID, it.ItemIndex, sizeText(it.Bytes), g.RunID, r.StepID, it.ItemIndex)
			}
		}
	}
}

// writeWorkChanges writes the changes a do step's accepted attempt made.
func writeWorkChanges(w io.Writer, runID, stepID string, c *engine.Changes, lim viewLimits, more string) {
	switch {
	case !changed(c):
		fmt.Fprintf(w, "    changes: none (the workspace files are as before the attempt)\n")
	case !patchKept(c):
		fmt.Fprintf(w, "    changes (the patch was not recorded):\n")
		writeBlock(w, c.Stat, lim, more)
	default:
		fmt.Fprintf(w, "    changes (a patch of %s: stratum diff %s %s):\n", sizeText(c.PatchBytes), runID, stepID)
		writeBlock(w, c.Stat, lim, more)
	}
	if c.HeadBefore != c.HeadAfter {
		fmt.Fprintf(w, "    commits: HEAD moved from %s to %s\n", short(c.HeadBefore), short(c.HeadAfter))
	}
}

// changed reports whether an attempt changed the workspace.
func changed(c *engine.Changes) bool {
	return c.TreeBefore != c.TreeAfter || c.HeadBefore != c.HeadAfter || c.PatchBytes > 0
}

// patchKept reports an attempt whose patch is in the run's log (stratum
// diff can print it): it changed files and the patch was under the limit.
func patchKept(c *engine.Changes) bool { return c.PatchBytes > 0 && !c.PatchOmitted }

// outputText is an output as a person reads it: indented JSON, or the
// cut JSON text of a truncated output as it is.
func outputText(v engine.Value, truncated bool) string {
	if s, ok := v.Data.(string); ok && truncated {
		return s
	}
	return indentJSON(v)
}

// indentJSON is a value as indented JSON, `&`, `<` and `>` as they are.
func indentJSON(v engine.Value) string {
	var b strings.Builder
	if err := writeJSON(&b, v); err != nil {
		raw, _ := expr.EncodeJSON(v.Data)
		return string(raw)
	}
	return strings.TrimRight(b.String(), "\n")
}

// writeBlock writes text indented under its label, cut to lim.lines lines
// (the rest is counted and where to read it said), control characters
// made visible.
func writeBlock(w io.Writer, text string, lim viewLimits, more string) {
	lines := strings.Split(strings.TrimRight(printable(text), "\n"), "\n")
	cut := 0
	if lim.lines > 0 && len(lines) > lim.lines {
		cut = len(lines) - lim.lines
		lines = lines[:lim.lines]
	}
	for _, l := range lines {
		fmt.Fprintf(w, "      %s\n", l)
	}
	if cut > 0 {
		word := "lines"
		if cut == 1 {
			word = "line"
		}
		fmt.Fprintf(w, "      ... (%d more %s: %s)\n", cut, word, more)
	}
}

// printable makes the control characters of recorded text visible (an
// agent's output must not move the cursor or recolour a person's
// terminal); newlines and tabs stay.
func printable(s string) string {
	if !strings.ContainsFunc(s, isControl) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if isControl(r) {
			fmt.Fprintf(&b, "\\u%04x", r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func isControl(r rune) bool { return r != '\n' && r != '\t' && unicode.IsControl(r) }

// writeRoutes writes what each decision does, with the effective limit on
// revise rounds.
func writeRoutes(w io.Writer, g engine.WaitingGate) {
	route := func(target, none string) string {
		if target == "" {
			return none
		}
		return "go to " + target
	}
	if g.Kind == engine.WaitInterrupted {
		fmt.Fprintf(w, "  approve  run the attempt again\n  kill     fail it (the flow's on_fail, if any, applies)\n")
		return
	}
	fmt.Fprintf(w, "  approve  %s\n", route(g.OnApprove, "continue the flow"))
	if g.OnRevise != "" {
		fmt.Fprintf(w, "  revise   %s\n", reviseLine(g))
	}
	fmt.Fprintf(w, "  kill     %s\n", route(g.OnKill, "stop the flow (it fails)"))
}

// writeGateView writes a whole gate view for a person (stratum gate show).
func writeGateView(w io.Writer, g engine.GateView) {
	if g.Kind == engine.WaitInterrupted {
		fmt.Fprintf(w, "step %s of run %s (flow %s): its last attempt started and never reported (its agent died); it may have left changes in the workspace.\n",
			g.StepID, g.RunID, g.Flow)
		fmt.Fprintf(w, "\nthe attempt's task:\n")
		writeUnderReview(w, g, viewLimits{})
	} else {
		fmt.Fprintf(w, "gate %s of run %s (flow %s) is waiting for a decision: %s.\n", g.StepID, g.RunID, g.Flow, roundLine(g.WaitingGate))
		fmt.Fprintf(w, "\nunder review:\n")
		writeUnderReview(w, g, viewLimits{})
	}
	fmt.Fprintf(w, "\ndecisions:\n")
	writeRoutes(w, g.WaitingGate)
	fmt.Fprintf(w, "\ndigest: %s\ntoken:  %s\n", g.Digest, g.GateToken)
	fmt.Fprintf(w, "decide: stratum gate %s %s %s --digest %s [--note TEXT]\n", gateChoices(g.WaitingGate), g.RunID, g.StepID, g.Digest)
	fmt.Fprintf(w, "        (refused if what is under review is no longer what this shows)\n")
}

// roundLine says where a gate stands in its revise rounds.
func roundLine(g engine.WaitingGate) string {
	switch {
	case g.OnRevise == "":
		return "no revise route"
	case g.RevisesLeft > 0:
		return fmt.Sprintf("revisions so far: %d of at most %d", g.Round, g.MaxRounds)
	}
	return fmt.Sprintf("revisions so far: %d of at most %d: a revise would fail the run", g.Round, g.MaxRounds)
}

func short(sha string) string {
	if sha == "" {
		return "(no commit)"
	}
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

func sizeText(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 10<<10:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return plural(n, "byte")
}

// gateChoices are the decisions stratum gate can make on a waiting gate:
// revise only while the gate can take one more (a revise past the limit
// would fail the run) and never on an interrupted attempt.
func gateChoices(g engine.WaitingGate) string {
	if g.Kind != engine.WaitInterrupted && g.OnRevise != "" && g.RevisesLeft > 0 {
		return "approve|reject|revise"
	}
	return "approve|reject"
}
