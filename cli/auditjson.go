package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/stratum-go/stratum/engine"
)

// auditOutputBuffer is the size of the buffer an audit is written
// through: a long run's audit is megabytes, written in few syscalls.
const auditOutputBuffer = 64 << 10

// streamAuditJSON writes the audit document (the answer of stratum_audit)
// as it is read: the header, then each event, then each step (in
// declaration order), in the layout writeJSON gives. Events are written
// by [auditJSON.event], steps by [auditJSON.step], both byte for byte
// what writeJSON writes (docs/cli.md, "stratum audit").
func streamAuditJSON(ctx context.Context, out io.Writer, e *engine.Engine, runID string) error {
	w := bufio.NewWriterSize(out, auditOutputBuffer)
	var between, after string // the header between "events": [ … ] and "steps": { … }, and after it
	steps, events := 0, 0
	closeEvents := func() {
		if events > 0 {
			w.WriteString("\n  ")
		}
		w.WriteString("]")
		w.WriteString(between)
		events = -1
	}
	aj := newAuditJSON()
	_, err := e.AuditStream(ctx, runID, engine.AuditOptions{}, engine.AuditVisitor{
		Header: func(a *engine.AuditReport) error {
			doc, err := indentedJSON(a, "")
			if err != nil {
				return err
			}
			const eventsAt, stepsAt = "\n  \"events\": []", "\n  \"steps\": {}"
			i, j := strings.Index(doc, eventsAt), strings.Index(doc, stepsAt)
			if i < 0 || j < i {
				return fmt.Errorf("internal error: audit document without events and steps")
			}
			w.WriteString(doc[:i+len(eventsAt)-1]) // up to "events": [
			between = doc[i+len(eventsAt) : j+len(stepsAt)-1]
			after = doc[j+len(stepsAt):]
			return nil
		},
		Event: func(ev engine.Event) error {
			b := aj.buf[:0]
			if events > 0 {
				b = append(b, ',')
			}
			b = append(b, "\n    "...)
			b, err := aj.event(b, ev)
			if err != nil {
				return err
			}
			aj.buf = b
			events++
			_, err = w.Write(b)
			return err
		},
		Step: func(id string, sv *engine.StepView) error {
			if events >= 0 {
				closeEvents()
			}
			b := aj.buf[:0]
			if steps > 0 {
				b = append(b, ',')
			}
			b = append(b, "\n    "...)
			b = appendJSONKey(b, id)
			b = append(b, ": "...)
			b, err := aj.step(b, sv)
			if err != nil {
				return err
			}
			aj.buf = b
			steps++
			_, err = w.Write(b)
			return err
		},
	})
	if err != nil {
		return err
	}
	if events >= 0 {
		closeEvents()
	}
	if steps > 0 {
		w.WriteString("\n  ")
	}
	w.WriteString("}")
	w.WriteString(after)
	return w.Flush()
}

// appendJSONKey appends a step id as json.Marshal writes it: HTML
// characters escaped, unlike writeJSON.
func appendJSONKey(b []byte, id string) []byte {
	if !strings.ContainsAny(id, "<>&") {
		return appendJSONString(b, id)
	}
	k, _ := json.Marshal(id) // a string always encodes
	return append(b, k...)
}

// indentedJSON is v as writeJSON writes it (two-space indent, HTML not
// escaped), each line after the first prefixed, without the newline.
func indentedJSON(v any, prefix string) (string, error) {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent(prefix, "  ")
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}
