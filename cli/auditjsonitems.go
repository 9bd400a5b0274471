package cli

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/expr"
)

// The events and steps of `stratum audit --json`, written as writeJSON
// writes them (two-space indent, HTML not escaped) without its
// reflection and re-indenting, which were a quarter of a long run's
// audit (docs/cli.md, "stratum audit"). The fields written by hand are
// the ones every event and step has (auditjsonfields.go lists them, and
// a type whose fields are not those is written by encoding/json, whole);
// the rarer parts (a failure, a fanout, a subflow, changes) are encoded
// compactly by encoding/json and indented by appendIndent.

// auditJSON is what writing the audit's events and steps reuses from
// one to the next: the bytes of the item being written, a compact
// encoding and its encoder, the newlines of an item's lines.
type auditJSON struct {
	buf     []byte
	compact bytes.Buffer
	enc     *json.Encoder
	nl      newlines
	// handEvents and handSteps say that engine.Event and engine.StepView
	// (with engine.Attempt and engine.Ledger) have the fields this file
	// writes by hand.
	handEvents, handSteps bool
}

// auditItemPrefix is the prefix of an event's or step's lines: they are
// the members of "events" and "steps", two levels into the document.
const auditItemPrefix = "    "

func newAuditJSON() *auditJSON {
	aj := &auditJSON{
		nl:         newlines{prefix: auditItemPrefix, indent: "  "},
		handEvents: eventFieldsKnown(),
		handSteps:  stepFieldsKnown(),
	}
	aj.enc = json.NewEncoder(&aj.compact)
	aj.enc.SetEscapeHTML(false)
	return aj
}

// event appends ev as indentedJSON(ev, auditItemPrefix) writes it. An
// event it cannot write (a time outside years 0-9999, a detail that is
// not JSON) is left to indentedJSON, for its error.
func (aj *auditJSON) event(dst []byte, ev engine.Event) ([]byte, error) {
	if aj.handEvents {
		if b, err := aj.appendEvent(dst, ev); err == nil {
			return b, nil
		}
	}
	s, err := indentedJSON(ev, auditItemPrefix)
	if err != nil {
		return dst, err
	}
	return append(dst, s...), nil
}

// step appends sv as indentedJSON(sv, auditItemPrefix) writes it.
func (aj *auditJSON) step(dst []byte, sv *engine.StepView) ([]byte, error) {
	if aj.handSteps {
		if b, err := aj.appendStep(dst, sv); err == nil {
			return b, nil
		}
	}
	return aj.reflected(dst, sv, 0)
}

// reflected appends v encoded by encoding/json and indented for a value
// depth levels into the item.
func (aj *auditJSON) reflected(dst []byte, v any, depth int) ([]byte, error) {
	aj.compact.Reset()
	if err := aj.enc.Encode(v); err != nil {
		return dst, err
	}
	c := aj.compact.Bytes()
	return aj.nl.appendIndent(dst, c[:len(c)-1], depth) // without Encode's newline
}

// object writes the members of one JSON object depth levels into the
// item: key by key, then the closing brace.
type object struct {
	aj      *auditJSON
	b       []byte
	depth   int
	members int
	err     error
}

func (aj *auditJSON) object(b []byte, depth int) object {
	return object{aj: aj, b: append(b, '{'), depth: depth}
}

// key starts a member: its separator, newline and indent, and its name
// (a name that needs no escape).
func (o *object) key(name string) {
	if o.members > 0 {
		o.b = append(o.b, ',')
	}
	o.members++
	o.b = o.aj.nl.append(o.b, o.depth+1)
	o.b = append(o.b, '"')
	o.b = append(o.b, name...)
	o.b = append(o.b, `": `...)
}

func (o *object) str(name, s string) {
	o.key(name)
	o.b = appendJSONString(o.b, s)
}

func (o *object) int(name string, n int64) {
	o.key(name)
	o.b = strconv.AppendInt(o.b, n, 10)
}

func (o *object) time(name string, t time.Time) {
	o.key(name)
	o.b = append(o.b, '"')
	b, err := t.AppendText(o.b) // what Time.MarshalJSON writes between its quotes
	if err != nil {
		o.fail(err)
		return
	}
	o.b = append(b, '"')
}

// value writes a recorded value as Value.MarshalJSON does.
func (o *object) value(name string, v engine.Value) {
	o.key(name)
	data, err := expr.EncodeJSON(v.Data)
	if err != nil {
		o.fail(err)
		return
	}
	o.json(data)
}

// json writes a JSON value, indented.
func (o *object) json(data []byte) {
	o.set(o.aj.nl.appendIndent(o.b, data, o.depth+1))
}

// reflected writes v as encoding/json does.
func (o *object) reflected(name string, v any) {
	o.key(name)
	o.set(o.aj.reflected(o.b, v, o.depth+1))
}

func (o *object) float(name string, f float64) {
	o.key(name)
	abs := math.Abs(f)
	switch {
	case math.IsInf(f, 0) || math.IsNaN(f):
		o.fail(&json.UnsupportedValueError{Str: strconv.FormatFloat(f, 'g', -1, 64)})
	case abs == 0 || abs >= 1e-6 && abs < 1e21:
		// encoding/json's form in this range; outside it, its own.
		o.b = strconv.AppendFloat(o.b, f, 'f', -1, 64)
	default:
		b, _ := json.Marshal(f)
		o.b = append(o.b, b...)
	}
}

func (o *object) fail(err error) {
	if o.err == nil {
		o.err = err
	}
}

// set makes b what is written so far, or records err (the object is then
// thrown away: its bytes do not matter).
func (o *object) set(b []byte, err error) {
	if err != nil {
		o.fail(err)
		return
	}
	o.b = b
}

// close ends the object: "}" after a newline unless it is empty.
func (o *object) close() ([]byte, error) {
	if o.members > 0 {
		o.b = o.aj.nl.append(o.b, o.depth)
	}
	return append(o.b, '}'), o.err
}

// appendEvent writes engine.Event: seq, at, type, stepId (omitzero),
// detail (omitzero: a nil detail), hash.
func (aj *auditJSON) appendEvent(b []byte, ev engine.Event) ([]byte, error) {
	o := aj.object(b, 0)
	o.int("seq", ev.Seq)
	o.time("at", ev.At)
	o.str("type", string(ev.Type))
	if ev.StepID != "" {
		o.str("stepId", ev.StepID)
	}
	if ev.Detail != nil {
		o.key("detail")
		o.json(ev.Detail)
	}
	o.str("hash", ev.Hash)
	return o.close()
}

// appendStep writes engine.StepView in its field order, each omitzero
// field left out when zero.
func (aj *auditJSON) appendStep(b []byte, sv *engine.StepView) ([]byte, error) {
	o := aj.object(b, 0)
	o.str("status", string(sv.Status))
	o.key("attempts")
	switch {
	case sv.Attempts == nil:
		o.b = append(o.b, "null"...)
	case len(sv.Attempts) == 0:
		o.b = append(o.b, "[]"...)
	default:
		o.b = append(o.b, '[')
		for i := range sv.Attempts {
			if i > 0 {
				o.b = append(o.b, ',')
			}
			o.b = aj.nl.append(o.b, 2)
			o.set(aj.appendAttempt(o.b, &sv.Attempts[i], 2))
		}
		o.b = aj.nl.append(o.b, 1)
		o.b = append(o.b, ']')
	}
	if sv.Epoch != 0 {
		o.int("epoch", int64(sv.Epoch))
	}
	if sv.DispatchToken != "" {
		o.str("dispatchToken", sv.DispatchToken)
	}
	if sv.Task != "" {
		o.str("task", sv.Task)
	}
	if sv.GateToken != "" {
		o.str("gateToken", sv.GateToken)
	}
	if sv.Decision != "" {
		o.str("decision", string(sv.Decision))
	}
	if sv.Output.Present {
		o.value("output", sv.Output)
	}
	if sv.Failure != nil {
		o.reflected("failure", sv.Failure)
	}
	if sv.Routed != nil {
		o.reflected("routed", sv.Routed)
	}
	if sv.Skip != nil {
		o.reflected("skip", sv.Skip)
	}
	if sv.Iterations != 0 {
		o.int("iterations", int64(sv.Iterations))
	}
	if sv.Fanout != nil {
		o.reflected("fanout", sv.Fanout)
	}
	if sv.Sub != nil {
		o.reflected("sub", sv.Sub)
	}
	o.ledger("spent", sv.Spent)
	if sv.Revision != nil {
		o.reflected("revision", sv.Revision)
	}
	if sv.Started != nil {
		o.reflected("started", sv.Started)
	}
	if sv.Interrupted != nil {
		o.reflected("interrupted", sv.Interrupted)
	}
	return o.close()
}

// appendAttempt writes engine.Attempt depth levels in, in its field
// order, each omitempty field left out when empty.
func (aj *auditJSON) appendAttempt(b []byte, at *engine.Attempt, depth int) ([]byte, error) {
	o := aj.object(b, depth)
	o.int("attempt", int64(at.Attempt))
	o.time("at", at.At)
	if at.Stage != nil {
		o.int("stage", int64(*at.Stage))
	}
	if at.Result.Present {
		o.value("result", at.Result)
	}
	if at.Failure != nil {
		o.reflected("failure", at.Failure)
	}
	if at.FailureKind != "" {
		o.str("failureKind", at.FailureKind)
	}
	if at.Usage != nil {
		o.ledger("usage", *at.Usage)
	}
	if at.DurationMs != nil {
		o.float("durationMs", *at.DurationMs)
	}
	if at.Model != "" {
		o.str("model", at.Model)
	}
	if at.Effort != "" {
		o.str("effort", at.Effort)
	}
	if at.Task != "" {
		o.str("task", at.Task)
	}
	if at.Stderr != "" {
		o.str("stderr", at.Stderr)
	}
	if at.Changes != nil {
		o.reflected("changes", at.Changes)
	}
	return o.close()
}

// ledger writes engine.Ledger: each amount left out when zero
// (omitempty).
func (o *object) ledger(name string, l engine.Ledger) {
	o.key(name)
	lo := o.aj.object(o.b, o.depth+1)
	for _, m := range [...]struct {
		name string
		v    float64
	}{{"usd", l.USD}, {"tokens", l.Tokens}, {"dispatches", l.Dispatches}, {"ms", l.MS}} {
		if m.v != 0 {
			lo.float(m.name, m.v)
		}
	}
	o.set(lo.close())
}
