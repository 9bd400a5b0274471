package cli

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/internal/eventtext"
	"github.com/stratum-go/stratum/ir"
)

// The steps and events of the audit's text as fmt wrote them before they
// were appended by hand (auditsteps.go): the reference the appending
// forms are held to.

func fmtEventLine(ev engine.Event, desc string) string {
	return fmt.Sprintf("%5d  %s  %s\n", ev.Seq, ev.At.UTC().Format("2006-01-02T15:04:05.000Z"), printable(desc))
}

// textSamples are strings with what the appending forms must treat as
// printable and OneLine do: white space runs, control characters (C0,
// DEL, C1), invalid UTF-8, and all of them together.
var textSamples = []string{
	"", "plain", "  lead and trail  ", "a\n\tb\r\nc", "esc \x1b[31mred\x1b[0m", "del\x7f", "c1 \u0085 \u009f \u00a0 nbsp",
	"bad \xff utf8", "bad \xff and \x01 control", "\u2028 line sep \u3000 ideographic", "\v\f", "\x00", "\xc2", "\xc2\x85",
	"tab\tonly", "\U0001F600 wide",
}

// TestAppendText: the appending forms write what printable,
// eventtext.OneLine and fmt write.
func TestAppendText(t *testing.T) {
	for _, s := range textSamples {
		checkAppendText(t, s)
	}
}

func checkAppendText(t *testing.T, s string) {
	t.Helper()
	if got, want := string(appendPrintable([]byte("x"), s)), "x"+printable(s); got != want {
		t.Errorf("appendPrintable(%q) = %q, want %q", s, got, want)
	}
	if got, want := string(appendOneLine([]byte("x"), s)), "x"+eventtext.OneLine(s); got != want {
		t.Errorf("appendOneLine(%q) = %q, want %q", s, got, want)
	}
	if got, want := string(appendPrintableOneLine([]byte("x"), s)), "x"+printable(eventtext.OneLine(s)); got != want {
		t.Errorf("appendPrintableOneLine(%q) = %q, want %q", s, got, want)
	}
}

// TestAppendEventLine: an event's line as fmt wrote it, sequence numbers
// of every width included.
func TestAppendEventLine(t *testing.T) {
	zone := time.FixedZone("x", 5*3600+1800)
	for _, seq := range []int64{0, 1, 9, 12, 999, 9999, 10000, 123456, -1, -1234, -12345, math.MaxInt64, math.MinInt64} {
		for _, desc := range textSamples {
			ev := engine.Event{Seq: seq, At: auditTime.In(zone)}
			if got, want := string(appendEventLine([]byte("x"), ev, desc)), "x"+fmtEventLine(ev, desc); got != want {
				t.Errorf("appendEventLine(%d, %q) = %q, want %q", seq, desc, got, want)
			}
		}
	}
}

// textSteps are steps with every part the text shows, for the audit's
// step writer.
func textSteps(t testing.TB, s string) []*engine.StepView {
	stage := 1
	dur := 5120.5
	return append(auditSteps(t),
		&engine.StepView{Status: engine.StepSkipped, Skip: &engine.SkipInfo{Reason: s}, Epoch: 1},
		&engine.StepView{Status: engine.StepWaitingGate, Epoch: 3, Decision: engine.Decision(s),
			Revision: &engine.Revision{Gate: "review", Round: 2, Note: s, ResolvedBy: "ann"}, Routed: &engine.Failure{Reason: s},
			Interrupted: &engine.AttemptStart{At: auditTime, By: s}},
		&engine.StepView{Status: engine.StepInterrupted, Revision: &engine.Revision{Gate: s, Round: 1}, Interrupted: &engine.AttemptStart{At: auditTime}},
		&engine.StepView{Status: engine.StepFailed, Failure: &engine.Failure{Reason: s}},
		&engine.StepView{Status: engine.StepFailed, Failure: &engine.Failure{Reason: s}, Attempts: []engine.Attempt{
			{Attempt: 1, Model: s, Failure: &engine.Failure{Reason: s}, FailureKind: s, Task: s, Stderr: s, Result: jsonValue(t, `{"v":"\u0085 <&>"}`),
				Changes: &engine.Changes{HeadBefore: "a", HeadAfter: "b", TreeBefore: "c", TreeAfter: "d", Stat: s + "\n f | 1 +\n\n", PatchBytes: 10}},
			{Attempt: 2, Stage: &stage, DurationMs: &dur, Changes: &engine.Changes{HeadBefore: "a", HeadAfter: "a", TreeBefore: "c", TreeAfter: "c"}},
			{Attempt: 3, Model: "m", DurationMs: &dur, Changes: &engine.Changes{HeadBefore: "a", HeadAfter: "b", TreeBefore: "c", TreeAfter: "d", Stat: "x", PatchBytes: 5, PatchOmitted: true}},
		}},
		&engine.StepView{Status: engine.StepSucceeded, Fanout: &engine.FanoutView{Items: []engine.ItemView{
			{Index: 0, Status: engine.StepSucceeded, PatchBytes: 20 << 10, Output: jsonValue(t, `[1]`), Attempts: []engine.Attempt{{Attempt: 1, Stage: &stage, Task: s}}},
			{Index: 1, Status: engine.StepStatus(s), PatchBytes: 3 << 20},
			{Index: 2, Status: engine.StepFailed},
		}}, Output: jsonValue(t, `"not shown: a fanout's output is its items'"`)},
		&engine.StepView{Status: engine.StepSucceeded, Sub: &engine.SubflowView{Steps: map[string]*engine.StepView{
			"b": {Status: engine.StepSucceeded, Output: jsonValue(t, `1`), Attempts: []engine.Attempt{{Attempt: 1, Task: s}}},
			"a": {Status: engine.StepFailed, Failure: &engine.Failure{Reason: s}, Sub: &engine.SubflowView{Steps: map[string]*engine.StepView{"z": {Status: engine.StepPending}}}},
		}}},
		&engine.StepView{Status: engine.StepSucceeded, Output: engine.Some(math.NaN())},
	)
}

// TestAppendStep: a step's lines as fmt wrote them, for each kind of
// step and text.
func TestAppendStep(t *testing.T) {
	for _, s := range textSamples {
		checkAppendSteps(t, s, -0.4)
	}
}

func checkAppendSteps(t *testing.T, s string, ms float64) {
	t.Helper()
	a := &engine.AuditReport{RunID: "run-1"}
	for _, sv := range textSteps(t, s) {
		for i := range sv.Attempts {
			if sv.Attempts[i].DurationMs != nil {
				sv.Attempts[i].DurationMs = &ms
			}
		}
		var want strings.Builder
		fmtStep(&want, a, nil, nil, "st"+s, sv, "  ")
		if got := string(appendStep([]byte("x"), a, nil, "st"+s, sv, "  ")); got != "x"+want.String() {
			t.Errorf("appendStep(%+v):\n got %q\nwant %q", sv, got, "x"+want.String())
		}
	}
}

// FuzzAppendText holds the appending forms to printable, OneLine and
// fmt over any text and duration.
func FuzzAppendText(f *testing.F) {
	for _, s := range textSamples {
		f.Add(s, int64(len(s)), 1.5)
	}
	f.Fuzz(func(t *testing.T, s string, seq int64, ms float64) {
		checkAppendText(t, s)
		ev := engine.Event{Seq: seq, At: auditTime.Add(time.Duration(seq))}
		if got, want := string(appendEventLine(nil, ev, s)), fmtEventLine(ev, s); got != want {
			t.Errorf("appendEventLine(%d, %q) = %q, want %q", seq, s, got, want)
		}
		checkAppendSteps(t, s, ms)
	})
}

// The reference: auditsteps.go as it was written with fmt.

func fmtSteps(w io.Writer, a *engine.AuditReport, plan *ir.Plan, flow *ir.Flow, steps map[string]*engine.StepView, prefix string, depth int) {
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
		fmtStep(w, a, plan, decl, prefix+id, sv, ind)
	}
}

// fmtStep writes one step.
func fmtStep(w io.Writer, a *engine.AuditReport, plan *ir.Plan, decl *ir.Step, id string, sv *engine.StepView, ind string) {
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
		fmtAttempt(w, a.RunID, id, at, in)
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
				fmtAttempt(w, "", "", at, in+"  ")
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
		fmtSteps(w, a, plan, flow, sub.Steps, id+"/", len(in)/2)
	}
	if sv.Output.Present && sv.Fanout == nil {
		fmt.Fprintf(w, "%soutput: %s\n", in, compactJSON(sv.Output))
	}
}

// fmtAttempt writes one attempt: its outcome, what it was asked, what
// it reported, what it changed. runID and id, when set, name the step for
// stratum diff.
func fmtAttempt(w io.Writer, runID, id string, at engine.Attempt, ind string) {
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
