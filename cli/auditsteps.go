package cli

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/expr"
	"github.com/stratum-go/stratum/internal/eventtext"
	"github.com/stratum-go/stratum/ir"
)

// The steps part of `stratum audit` text (docs/cli.md, "stratum audit"):
// each step with its status, each of its attempts with the result it
// reported (accepted or not) or its failure, what it changed in the
// workspace, and its output; values are JSON as recorded, `&`, `<` and `>`
// as they are, control characters made visible.

// writeSteps writes the steps of a scope in declaration order (by id when
// the flow is not known), indented by depth.
func writeSteps(w io.Writer, a *engine.AuditReport, plan *ir.Plan, flow *ir.Flow, steps map[string]*engine.StepView, prefix string, depth int) {
	ids := make([]string, 0, len(steps))
	if flow != nil {
		for _, s := range flow.Steps {
			if steps[s.ID] != nil {
				ids = append(ids, s.ID)
			}
		}
	}
	if len(ids) != len(steps) {
		ids = ids[:0]
		for id := range steps {
			ids = append(ids, id)
		}
		sort.Strings(ids)
	}
	ind := strings.Repeat("  ", depth+1)
	for _, id := range ids {
		sv := steps[id]
		var decl *ir.Step
		if flow != nil {
			decl = flow.Step(id)
		}
		writeStep(w, a, plan, decl, prefix+id, sv, ind)
	}
}

// writeStep writes one step.
func writeStep(w io.Writer, a *engine.AuditReport, plan *ir.Plan, decl *ir.Step, id string, sv *engine.StepView, ind string) {
	head := fmt.Sprintf("%s%s: %s", ind, id, sv.Status)
	switch {
	case sv.Decision != "":
		head += " (" + string(sv.Decision) + ")"
	case sv.Skip != nil:
		head += " (" + eventtext.OneLine(sv.Skip.Reason) + ")"
	}
	if sv.Epoch > 0 {
		head += fmt.Sprintf(", round %d", sv.Epoch+1)
	}
	fmt.Fprintln(w, printable(head))
	in := ind + "  "
	if r := sv.Revision; r != nil {
		note := ""
		if r.Note != "" {
			note = ": " + eventtext.OneLine(r.Note)
		}
		by := ""
		if r.ResolvedBy != "" {
			by = " by " + r.ResolvedBy
		}
		fmt.Fprintf(w, "%ssent back by gate %s%s (revision %d)%s\n", in, r.Gate, by, r.Round, printable(note))
	}
	if r := sv.Routed; r != nil {
		fmt.Fprintf(w, "%srouted here by: %s\n", in, printable(eventtext.OneLine(r.Reason)))
	}
	if s := sv.Interrupted; s != nil {
		fmt.Fprintf(w, "%san earlier attempt was interrupted (started %s%s)\n", in, s.At.UTC().Format("2006-01-02T15:04:05Z"), byText(s.By))
	}
	for _, at := range sv.Attempts {
		writeAttempt(w, a.RunID, id, at, in)
	}
	if f := sv.Failure; f != nil && sv.Status == engine.StepFailed && len(sv.Attempts) == 0 {
		fmt.Fprintf(w, "%sfailure: %s\n", in, printable(eventtext.OneLine(f.Reason)))
	}
	if sv.Status == engine.StepWaitingGate || sv.Status == engine.StepInterrupted {
		fmt.Fprintf(w, "%swaiting for a decision: stratum gate show %s %s\n", in, a.RunID, id)
	}
	if fo := sv.Fanout; fo != nil {
		for _, it := range fo.Items {
			line := fmt.Sprintf("%s[%d]: %s", in, it.Index, it.Status)
			if it.PatchBytes > 0 {
				line += fmt.Sprintf(", a patch of %s (stratum diff %s %s/%d)", sizeText(it.PatchBytes), a.RunID, id, it.Index)
			}
			fmt.Fprintln(w, line)
			for _, at := range it.Attempts {
				writeAttempt(w, "", "", at, in+"  ")
			}
			if it.Output.Present {
				fmt.Fprintf(w, "%s  output: %s\n", in, compactJSON(it.Output))
			}
		}
	}
	if sub := sv.Sub; sub != nil {
		var flow *ir.Flow
		if plan != nil && decl != nil {
			flow = plan.Flow(decl.Run)
		}
		writeSteps(w, a, plan, flow, sub.Steps, id+"/", len(in)/2)
	}
	if sv.Output.Present && sv.Fanout == nil {
		fmt.Fprintf(w, "%soutput: %s\n", in, compactJSON(sv.Output))
	}
}

// writeAttempt writes one attempt: its outcome, what it was asked, what
// it reported, what it changed. runID and id, when set, name the step for
// stratum diff.
func writeAttempt(w io.Writer, runID, id string, at engine.Attempt, ind string) {
	line := fmt.Sprintf("%sattempt %d", ind, at.Attempt)
	if at.Stage != nil {
		line += fmt.Sprintf(" (stage %d)", *at.Stage+1)
	}
	var facts []string
	if at.Model != "" {
		facts = append(facts, at.Model)
	}
	if at.DurationMs != nil {
		facts = append(facts, fmt.Sprintf("%.0f ms", *at.DurationMs))
	}
	if len(facts) > 0 {
		line += " [" + strings.Join(facts, ", ") + "]"
	}
	if f := at.Failure; f != nil {
		kind := ""
		if at.FailureKind != "" {
			kind = " (" + at.FailureKind + ")"
		}
		line += ": rejected" + kind + ": " + eventtext.OneLine(f.Reason)
	} else {
		line += ": accepted"
	}
	fmt.Fprintln(w, printable(line))
	in := ind + "  "
	if at.Task != "" {
		fmt.Fprintf(w, "%stask: %s\n", in, printable(eventtext.OneLine(at.Task)))
	}
	if at.Result.Present {
		fmt.Fprintf(w, "%sresult: %s\n", in, compactJSON(at.Result))
	}
	if c := at.Changes; c != nil {
		switch {
		case !changed(c):
			fmt.Fprintf(w, "%schanges: none\n", in)
		default:
			where := ""
			if patchKept(c) && id != "" {
				where = fmt.Sprintf(" (stratum diff %s %s --attempt %d)", runID, id, at.Attempt)
			}
			fmt.Fprintf(w, "%schanges%s:\n", in, where)
			for _, l := range strings.Split(strings.TrimRight(printable(c.Stat), "\n"), "\n") {
				fmt.Fprintf(w, "%s  %s\n", in, l)
			}
		}
	}
	if at.Stderr != "" {
		fmt.Fprintf(w, "%sstderr (end): %s\n", in, printable(eventtext.OneLine(at.Stderr)))
	}
}

// compactJSON is a recorded value as one line of JSON, `&`, `<` and `>`
// as they are, control characters in strings escaped as JSON does.
func compactJSON(v engine.Value) string {
	b, err := expr.EncodeJSON(v.Data)
	if err != nil {
		return fmt.Sprintf("(cannot be shown: %v)", err)
	}
	return printable(string(b))
}

func byText(by string) string {
	if by == "" {
		return ""
	}
	return " by " + by
}
