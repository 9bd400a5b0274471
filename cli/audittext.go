package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/internal/eventtext"
	"github.com/stratum-go/stratum/ir"
)

// streamAuditText writes the trace as it is read (docs/cli.md, "stratum
// audit"): a long run's events and steps are never all in memory.
func streamAuditText(ctx context.Context, out io.Writer, e *engine.Engine, runID, chain string) error {
	w := bufio.NewWriterSize(out, auditOutputBuffer)
	var line []byte // the event or step being written, reused
	var head *engine.AuditReport
	var decls []ir.StepOutline // the entry flow's steps not yet passed
	stepsBegun := false
	rep, err := e.AuditStream(ctx, runID, engine.AuditOptions{}, engine.AuditVisitor{
		Header: func(a *engine.AuditReport) error {
			head = a
			if f := a.Outline.Flow(a.Flow); f != nil {
				decls = f.Steps
			}
			fmt.Fprintf(w, "run %s (flow %s): %s\n", a.RunID, a.Flow, a.Status)
			fmt.Fprintf(w, "created %s, updated %s, revision %s\n", a.CreatedAt.UTC().Format(time.RFC3339), a.UpdatedAt.UTC().Format(time.RFC3339), a.RevisionDigest)
			return nil
		},
		Event: func(ev engine.Event) error {
			desc := eventtext.Describe(ev)
			if desc == "" {
				desc = describeDebit(ev)
			}
			line = appendEventLine(line[:0], ev, desc)
			_, err := w.Write(line)
			return err
		},
		Step: func(id string, sv *engine.StepView) error {
			if !stepsBegun {
				stepsBegun = true
				fmt.Fprintln(w, "steps:")
			}
			// The steps come in declaration order.
			var decl *ir.StepOutline
			for len(decls) > 0 && decl == nil {
				if decls[0].ID == id {
					decl = &decls[0]
				}
				decls = decls[1:]
			}
			line = appendStep(line[:0], head, decl, id, sv, "  ")
			_, err := w.Write(line)
			return err
		},
	})
	if err != nil {
		return err
	}
	if !stepsBegun {
		fmt.Fprintln(w, "steps:")
	}
	switch {
	case rep.Output.Present:
		fmt.Fprintf(w, "output: %s\n", compactJSON(rep.Output))
	case rep.Failure != nil:
		fmt.Fprintf(w, "failure: %s%s\n", printable(rep.Failure.Reason), eventtext.CauseNote(rep.Failure.Cause, rep.Failure.Step))
	}
	if l := rep.Ledger.Spent; !l.IsZero() {
		b, _ := json.Marshal(l)
		fmt.Fprintf(w, "spent: %s\n", b)
	}
	if chain != "" {
		fmt.Fprintln(w, chain)
	}
	return w.Flush()
}

// appendEventLine appends one event's line of the trace: as
// fmt.Sprintf("%5d  %s  %s\n", seq, time, printable(desc)) writes it.
func appendEventLine(b []byte, ev engine.Event, desc string) []byte {
	start := len(b)
	b = strconv.AppendInt(b, ev.Seq, 10)
	if n := len(b) - start; n < 5 {
		// Right-aligned in five columns, as %5d.
		b = append(b, "     "[:5-n]...)
		copy(b[start+5-n:], b[start:start+n])
		copy(b[start:start+5-n], "     ")
	}
	b = append(b, "  "...)
	b = ev.At.UTC().AppendFormat(b, "2006-01-02T15:04:05.000Z")
	b = append(b, "  "...)
	b = appendPrintable(b, desc)
	return append(b, '\n')
}
