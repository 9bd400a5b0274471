package engine

import (
	"strconv"

	"github.com/stratum-go/stratum/expr"
)

// An audit of a long run decodes a record for every finished step, and
// encoding/json spent a fifth of the audit's CPU on them (docs/engine.md,
// "Cancel, audit, poll"). A step record is written by the engine itself
// (encodeStepRecord, compact), so fastStepRecord reads the members the
// everyday step has by hand: status, tokens, task, counters, the ledger,
// the attempts with their plain fields, refs without a key order, and
// values. Anything else (a failure, a fanout, a subflow, a patch, an
// unknown or repeated member, whitespace, null) is left to encoding/json,
// and a fuzz test holds the two to the same record wherever the hand
// decoder answers.

// fastStepRecord decodes raw into rec (whose stepState must be new) as
// json.Unmarshal would; ok is false when raw is outside the shape it
// reads, and rec must then be decoded again from scratch.
func fastStepRecord(raw []byte, rec *stepRecord) bool {
	p := &summaryScan{b: raw}
	ss := rec.stepState
	p.fields(func(key []byte) uint32 { return scanRecordMember(p, rec, ss, key) })
	return !p.bad && p.i == len(p.b)
}

// scanRecordMember reads the value of member key and returns its bit (0:
// a member left to encoding/json, whose value is not read).
func scanRecordMember(p *summaryScan, rec *stepRecord, ss *stepState, key []byte) uint32 {
	switch string(key) {
	case "status":
		ss.Status = StepStatus(p.jsonString())
		return 1 << 0
	case "epoch":
		ss.Epoch = p.int()
		return 1 << 1
	case "dispatchToken":
		ss.DispatchToken = p.jsonString()
		return 1 << 2
	case "acceptedDispatchToken":
		ss.AcceptedDispatchToken = p.jsonString()
		return 1 << 3
	case "task":
		ss.Task = p.jsonString()
		return 1 << 4
	case "gateToken":
		ss.GateToken = p.jsonString()
		return 1 << 5
	case "gateDigest":
		ss.GateDigest = p.jsonString()
		return 1 << 6
	case "pastGateTokens":
		ss.PastGateTokens = scanArray(p, (*summaryScan).jsonString)
		return 1 << 7
	case "decision":
		ss.Decision = Decision(p.jsonString())
		return 1 << 8
	case "iterations":
		ss.Iterations = p.int()
		return 1 << 9
	case "fanoutEpoch":
		ss.FanoutEpoch = p.int()
		return 1 << 10
	case "spent":
		ss.Spent = scanLedger(p)
		return 1 << 11
	case "attempts":
		rec.Attempts = scanArray(p, scanRecordAttempt)
		return 1 << 12
	case "output":
		rec.Output = p.value()
		return 1 << 13
	case "outputRef":
		rec.OutputRef = scanRef(p)
		return 1 << 14
	}
	return 0
}

// scanRecordAttempt reads one attempt of a step record.
func scanRecordAttempt(p *summaryScan) (ra recordAttempt) {
	a := &ra.Attempt
	p.fields(func(key []byte) (bit uint32) {
		switch string(key) {
		case "attempt":
			a.Attempt, bit = p.int(), 1<<0
		case "at":
			a.At, bit = p.time(), 1<<1
		case "stage":
			n := p.int()
			a.Stage, bit = &n, 1<<2
		case "failureKind":
			a.FailureKind, bit = p.jsonString(), 1<<3
		case "usage":
			l := scanLedger(p)
			a.Usage, bit = &l, 1<<4
		case "durationMs":
			f := p.float()
			a.DurationMs, bit = &f, 1<<5
		case "model":
			a.Model, bit = p.jsonString(), 1<<6
		case "effort":
			a.Effort, bit = p.jsonString(), 1<<7
		case "task":
			a.Task, bit = p.jsonString(), 1<<8
		case "stderr":
			a.Stderr, bit = p.jsonString(), 1<<9
		case "result":
			ra.Result, bit = p.value(), 1<<10
		case "resultRef":
			ra.ResultRef, bit = scanRef(p), 1<<11
		}
		return bit
	})
	return ra
}

// scanLedger reads a ledger's members (each a number).
func scanLedger(p *summaryScan) (l Ledger) {
	p.fields(func(key []byte) (bit uint32) {
		switch string(key) {
		case "usd":
			l.USD, bit = p.float(), 1<<0
		case "tokens":
			l.Tokens, bit = p.float(), 1<<1
		case "dispatches":
			l.Dispatches, bit = p.float(), 1<<2
		case "ms":
			l.MS, bit = p.float(), 1<<3
		}
		return bit
	})
	return l
}

// scanRef reads {"seq":N}; a ref with a key order is left to
// encoding/json.
func scanRef(p *summaryScan) *valueRef {
	r := &valueRef{}
	p.fields(func(key []byte) uint32 {
		if string(key) != "seq" {
			return 0
		}
		r.Seq = int64(p.int())
		return 1
	})
	return r
}

// jsonString reads a JSON string as encoding/json decodes it, escapes included
// (the plain string without an allocation beyond its own).
func (p *summaryScan) jsonString() string {
	if p.peek() != '"' {
		p.bad = true
		return ""
	}
	start := p.i
	for p.i++; p.i < len(p.b); p.i++ {
		switch c := p.b[p.i]; {
		case c == '"':
			p.i++
			lit := p.b[start:p.i]
			if plainText(lit[1 : len(lit)-1]) { // no escape, control byte or invalid UTF-8
				return string(lit[1 : len(lit)-1])
			}
			s, ok := expr.UnquoteJSON(lit)
			if !ok {
				p.bad = true
			}
			return s
		case c == '\\':
			p.i++ // the escaped byte cannot end the string
		}
	}
	p.bad = true
	return ""
}

// float reads a JSON number as encoding/json decodes it into a float64:
// -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (p *summaryScan) float() float64 {
	if p.bad {
		return 0
	}
	start := p.i
	if p.peek() == '-' {
		p.i++
	}
	switch c := p.peek(); {
	case c == '0':
		p.i++
	case c >= '1' && c <= '9':
		p.digits()
	default:
		p.bad = true
		return 0
	}
	if p.peek() == '.' {
		p.i++
		if !p.digits() {
			p.bad = true
			return 0
		}
	}
	if c := p.peek(); c == 'e' || c == 'E' {
		p.i++
		if c := p.peek(); c == '+' || c == '-' {
			p.i++
		}
		if !p.digits() {
			p.bad = true
			return 0
		}
	}
	f, err := strconv.ParseFloat(string(p.b[start:p.i]), 64)
	if err != nil {
		p.bad = true
		return 0
	}
	return f
}

// digits skips a run of decimal digits, reporting whether there was one.
func (p *summaryScan) digits() bool {
	from := p.i
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		p.i++
	}
	return p.i > from
}

// value reads any JSON value, decoded as Value.UnmarshalJSON decodes it;
// null is left to encoding/json.
func (p *summaryScan) value() Value {
	if c := p.peek(); c == 0 || c == 'n' {
		p.bad = true
		return Value{}
	}
	n := valueEnd(p.b[p.i:])
	if n > len(p.b)-p.i { // an unterminated string: valueEnd assumes valid JSON
		p.bad = true
		return Value{}
	}
	var v Value
	if err := v.UnmarshalJSON(p.b[p.i : p.i+n]); err != nil {
		p.bad = true
		return Value{}
	}
	p.i += n
	return v
}
