package cli

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/expr"
	"github.com/stratum-go/stratum/ir"
)

// The steps part of `stratum audit` text (docs/cli.md, "stratum audit"):
// each step with its status, each of its attempts with the result it
// reported (accepted or not) or its failure, what it changed in the
// workspace, and its output; values are JSON as recorded, `&`, `<` and `>`
// as they are, control characters made visible. Lines are appended to a
// byte slice the caller reuses from step to step: fmt's formatting was
// most of what writing a long run's steps cost.

// appendSteps appends the steps of a subflow in declaration order (by id
// when the flow is not known), indented by depth.
func appendSteps(b []byte, a *engine.AuditReport, flow *ir.FlowOutline, steps map[string]*engine.StepView, prefix string, depth int) []byte {
	ids := make([]string, 0, len(steps))
	decls := make([]*ir.StepOutline, 0, len(steps))
	if flow != nil {
		for i, s := range flow.Steps {
			if steps[s.ID] != nil {
				ids, decls = append(ids, s.ID), append(decls, &flow.Steps[i])
			}
		}
	}
	if len(ids) != len(steps) {
		ids, decls = ids[:0], nil
		for id := range steps {
			ids = append(ids, id)
		}
		sort.Strings(ids)
	}
	ind := strings.Repeat("  ", depth+1)
	for i, id := range ids {
		var decl *ir.StepOutline
		if decls != nil {
			decl = decls[i]
		}
		b = appendStep(b, a, decl, prefix+id, steps[id], ind)
	}
	return b
}

// appendStep appends one step.
func appendStep(b []byte, a *engine.AuditReport, decl *ir.StepOutline, id string, sv *engine.StepView, ind string) []byte {
	line := len(b)
	b = append(b, ind...)
	b = append(b, id...)
	b = append(b, ": "...)
	b = append(b, sv.Status...)
	switch {
	case sv.Decision != "":
		b = append(b, " ("...)
		b = append(b, sv.Decision...)
		b = append(b, ')')
	case sv.Skip != nil:
		b = append(b, " ("...)
		b = appendOneLine(b, sv.Skip.Reason)
		b = append(b, ')')
	}
	if sv.Epoch > 0 {
		b = append(b, ", round "...)
		b = strconv.AppendInt(b, int64(sv.Epoch)+1, 10)
	}
	b = printableFrom(b, line)
	b = append(b, '\n')
	in := ind + "  "
	if r := sv.Revision; r != nil {
		b = append(b, in...)
		b = append(b, "sent back by gate "...)
		b = append(b, r.Gate...)
		if r.ResolvedBy != "" {
			b = append(b, " by "...)
			b = append(b, r.ResolvedBy...)
		}
		b = append(b, " (revision "...)
		b = strconv.AppendInt(b, int64(r.Round), 10)
		b = append(b, ')')
		if r.Note != "" {
			note := len(b)
			b = append(b, ": "...)
			b = appendOneLine(b, r.Note)
			b = printableFrom(b, note)
		}
		b = append(b, '\n')
	}
	if r := sv.Routed; r != nil {
		b = appendTextLine(b, in, "routed here by", r.Reason)
	}
	if s := sv.Interrupted; s != nil {
		b = append(b, in...)
		b = append(b, "an earlier attempt was interrupted (started "...)
		b = s.At.UTC().AppendFormat(b, "2006-01-02T15:04:05Z")
		b = append(b, byText(s.By)...)
		b = append(b, ")\n"...)
	}
	for i := range sv.Attempts {
		b = appendAttempt(b, a.RunID, id, &sv.Attempts[i], in)
	}
	if f := sv.Failure; f != nil && sv.Status == engine.StepFailed && len(sv.Attempts) == 0 {
		b = appendTextLine(b, in, "failure", f.Reason)
	}
	if sv.Status == engine.StepWaitingGate || sv.Status == engine.StepInterrupted {
		b = append(b, in...)
		b = append(b, "waiting for a decision: stratum gate show "...)
		b = append(b, a.RunID...)
		b = append(b, ' ')
		b = append(b, id...)
		b = append(b, '\n')
	}
	if fo := sv.Fanout; fo != nil {
		for _, it := range fo.Items {
			b = append(b, in...)
			b = append(b, '[')
			b = strconv.AppendInt(b, int64(it.Index), 10)
			b = append(b, "]: "...)
			b = append(b, it.Status...)
			if it.PatchBytes > 0 {
				b = append(b, ", a patch of "...)
				b = append(b, sizeText(it.PatchBytes)...)
				b = append(b, " (stratum diff "...)
				b = append(b, a.RunID...)
				b = append(b, ' ')
				b = append(b, id...)
				b = append(b, '/')
				b = strconv.AppendInt(b, int64(it.Index), 10)
				b = append(b, ')')
			}
			b = append(b, '\n')
			for i := range it.Attempts {
				b = appendAttempt(b, "", "", &it.Attempts[i], in+"  ")
			}
			if it.Output.Present {
				b = appendValueLine(b, in+"  ", "output", it.Output)
			}
		}
	}
	if sub := sv.Sub; sub != nil {
		var flow *ir.FlowOutline
		if decl != nil {
			flow = a.Outline.Flow(decl.Run)
		}
		b = appendSteps(b, a, flow, sub.Steps, id+"/", len(in)/2)
	}
	if sv.Output.Present && sv.Fanout == nil {
		b = appendValueLine(b, in, "output", sv.Output)
	}
	return b
}

// appendAttempt appends one attempt: its outcome, what it was asked,
// what it reported, what it changed. runID and id, when set, name the
// step for stratum diff.
func appendAttempt(b []byte, runID, id string, at *engine.Attempt, ind string) []byte {
	line := len(b)
	b = append(b, ind...)
	b = append(b, "attempt "...)
	b = strconv.AppendInt(b, int64(at.Attempt), 10)
	if at.Stage != nil {
		b = append(b, " (stage "...)
		b = strconv.AppendInt(b, int64(*at.Stage)+1, 10)
		b = append(b, ')')
	}
	if at.Model != "" || at.DurationMs != nil {
		b = append(b, " ["...)
		b = append(b, at.Model...)
		if at.DurationMs != nil {
			if at.Model != "" {
				b = append(b, ", "...)
			}
			b = strconv.AppendFloat(b, *at.DurationMs, 'f', 0, 64) // as %.0f
			b = append(b, " ms"...)
		}
		b = append(b, ']')
	}
	if f := at.Failure; f != nil {
		b = append(b, ": rejected"...)
		if at.FailureKind != "" {
			b = append(b, " ("...)
			b = append(b, at.FailureKind...)
			b = append(b, ')')
		}
		b = append(b, ": "...)
		b = appendOneLine(b, f.Reason)
	} else {
		b = append(b, ": accepted"...)
	}
	b = printableFrom(b, line)
	b = append(b, '\n')
	in := ind + "  "
	if at.Task != "" {
		b = appendTextLine(b, in, "task", at.Task)
	}
	if at.Result.Present {
		b = appendValueLine(b, in, "result", at.Result)
	}
	if c := at.Changes; c != nil {
		b = append(b, in...)
		switch {
		case !changed(c):
			b = append(b, "changes: none\n"...)
		default:
			b = append(b, "changes"...)
			if patchKept(c) && id != "" {
				b = append(b, " (stratum diff "...)
				b = append(b, runID...)
				b = append(b, ' ')
				b = append(b, id...)
				b = append(b, " --attempt "...)
				b = strconv.AppendInt(b, int64(at.Attempt), 10)
				b = append(b, ')')
			}
			b = append(b, ":\n"...)
			for _, l := range strings.Split(strings.TrimRight(printable(c.Stat), "\n"), "\n") {
				b = append(b, in...)
				b = append(b, "  "...)
				b = append(b, l...)
				b = append(b, '\n')
			}
		}
	}
	if at.Stderr != "" {
		b = appendTextLine(b, in, "stderr (end)", at.Stderr)
	}
	return b
}

// appendCompactJSON appends a recorded value as one line of JSON, `&`,
// `<` and `>` as they are, control characters in strings escaped as
// JSON does (compactJSON).
func appendCompactJSON(b []byte, v engine.Value) []byte {
	s, err := expr.EncodeJSON(v.Data)
	if err != nil {
		return append(b, compactJSON(v)...)
	}
	return appendPrintable(b, s)
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

// appendTextLine appends the line "in label: text", text on one line and
// printable.
func appendTextLine(b []byte, in, label, text string) []byte {
	b = append(b, in...)
	b = append(b, label...)
	b = append(b, ": "...)
	b = appendPrintableOneLine(b, text)
	return append(b, '\n')
}

// appendValueLine appends the line "in label: value", the value as
// compact JSON.
func appendValueLine(b []byte, in, label string, v engine.Value) []byte {
	b = append(b, in...)
	b = append(b, label...)
	b = append(b, ": "...)
	b = appendCompactJSON(b, v)
	return append(b, '\n')
}
