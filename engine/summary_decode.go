package engine

import (
	"strconv"
	"time"
	"unicode/utf8"
)

// Listing 10,000 runs decodes 10,000 summaries, and encoding/json spent
// most of a listing's CPU on them (docs/engine.md, "Listings"). The
// summary has a fixed shape that the engine itself writes compacted, so
// fastSummary reads exactly that shape by hand: every member the engine
// writes, each at most once, strings without escapes, integers, times in
// UTC. Anything else (whitespace, an escape, null, an unknown or repeated
// member, a number with a fraction) is left to encoding/json, and a
// fuzz test holds the two to the same result wherever fastSummary
// answers.

// summaryScan reads a compacted JSON text; bad is set at the first byte
// outside the shape it reads, and every read after that is a no-op.
type summaryScan struct {
	b   []byte
	i   int
	bad bool
}

// fastSummary decodes raw as json.Unmarshal would into a storedSummary;
// ok is false when raw is outside the shape it reads (not necessarily
// invalid: the caller then asks encoding/json).
func fastSummary(raw []byte) (s storedSummary, ok bool) {
	p := &summaryScan{b: raw}
	var seen uint32
	p.object(func(key string) {
		bit := scanSummaryMember(p, &s, key)
		if bit == 0 || seen&bit != 0 {
			p.bad = true
		}
		seen |= bit
	})
	return s, !p.bad && p.i == len(p.b)
}

// scanSummaryMember reads the value of member key into s and returns the
// member's bit (0 for an unknown member, whose value is not read).
func scanSummaryMember(p *summaryScan, s *storedSummary, key string) uint32 {
	r := &s.RunSummary
	switch key {
	case "v":
		s.Format = p.int()
		return 1 << 0
	case "runId":
		r.RunID = p.str()
		return 1 << 1
	case "flow":
		r.Flow = p.str()
		return 1 << 2
	case "status":
		r.Status = RunStatus(p.str())
		return 1 << 3
	case "createdAt":
		r.CreatedAt = p.time()
		return 1 << 4
	case "updatedAt":
		r.UpdatedAt = p.time()
		return 1 << 5
	case "failureCause":
		r.FailureCause = FailureCause(p.str())
		return 1 << 6
	case "rounds":
		r.Rounds = p.int()
		return 1 << 7
	case "steps":
		r.Steps = p.int()
		return 1 << 8
	case "done":
		r.Done = p.int()
		return 1 << 9
	case "current":
		r.Current = p.str()
		return 1 << 10
	case "gateWaits":
		r.GateWaits = p.bool()
		return 1 << 11
	case "waiting":
		r.Waiting = scanArray(p, scanWaiting)
		return 1 << 12
	case "error":
		r.Error = p.str()
		return 1 << 13
	case "cancelRequested":
		s.CancelRequested = p.bool()
		return 1 << 14
	case "background":
		s.Background = p.bool()
		return 1 << 15
	case "gates":
		s.Gates = scanArray(p, scanGate)
		return 1 << 16
	case "more":
		s.More = p.bool()
		return 1 << 17
	}
	return 0
}

// scanWaiting reads one Waiting object.
func scanWaiting(p *summaryScan) (w Waiting) {
	var seen uint8
	p.object(func(key string) {
		var bit uint8
		switch key {
		case "stepId":
			bit, w.StepID = 1, p.str()
		case "kind":
			bit, w.Kind = 2, WaitingKind(p.str())
		case "paused":
			bit, w.Paused = 4, p.str()
		}
		if bit == 0 || seen&bit != 0 {
			p.bad = true
		}
		seen |= bit
	})
	return w
}

// scanGate reads one WaitingGate object.
func scanGate(p *summaryScan) (g WaitingGate) {
	var seen uint16
	p.object(func(key string) {
		var bit uint16
		switch key {
		case "runId":
			bit, g.RunID = 1<<0, p.str()
		case "flow":
			bit, g.Flow = 1<<1, p.str()
		case "stepId":
			bit, g.StepID = 1<<2, p.str()
		case "kind":
			bit, g.Kind = 1<<3, WaitingKind(p.str())
		case "gateToken":
			bit, g.GateToken = 1<<4, p.str()
		case "onApprove":
			bit, g.OnApprove = 1<<5, p.str()
		case "onRevise":
			bit, g.OnRevise = 1<<6, p.str()
		case "onKill":
			bit, g.OnKill = 1<<7, p.str()
		case "round":
			bit, g.Round = 1<<8, p.int()
		case "maxRounds":
			bit, g.MaxRounds = 1<<9, p.int()
		case "revisesLeft":
			bit, g.RevisesLeft = 1<<10, p.int()
		case "digest":
			bit, g.Digest = 1<<11, p.str()
		}
		if bit == 0 || seen&bit != 0 {
			p.bad = true
		}
		seen |= bit
	})
	return g
}

// scanArray reads a JSON array of elements read by elem. An empty array
// is an empty, non-nil slice, as encoding/json makes it.
func scanArray[T any](p *summaryScan, elem func(*summaryScan) T) []T {
	if !p.expect('[') {
		return nil
	}
	out := []T{}
	if p.peek() == ']' {
		p.i++
		return out
	}
	for !p.bad {
		out = append(out, elem(p))
		if p.peek() == ',' {
			p.i++
			continue
		}
		p.expect(']')
		break
	}
	return out
}

// object reads {"key":value,...}, calling member for each key with the
// scan at the value, which member must read.
func (p *summaryScan) object(member func(key string)) {
	if !p.expect('{') {
		return
	}
	if p.peek() == '}' {
		p.i++
		return
	}
	for !p.bad {
		key := p.str()
		if !p.expect(':') {
			return
		}
		member(key)
		if p.peek() == ',' {
			p.i++
			continue
		}
		p.expect('}')
		return
	}
}

func (p *summaryScan) peek() byte {
	if p.bad || p.i >= len(p.b) {
		return 0
	}
	return p.b[p.i]
}

func (p *summaryScan) expect(c byte) bool {
	if p.peek() != c {
		p.bad = true
		return false
	}
	p.i++
	return true
}

// str reads a string without escapes or control characters, in valid
// UTF-8 (encoding/json would replace invalid bytes).
func (p *summaryScan) str() string {
	if !p.expect('"') {
		return ""
	}
	start, ascii := p.i, true
	for ; p.i < len(p.b); p.i++ {
		c := p.b[p.i]
		switch {
		case c == '"':
			s := p.b[start:p.i]
			p.i++
			if !ascii && !utf8.Valid(s) {
				p.bad = true
				return ""
			}
			return string(s)
		case c == '\\' || c < 0x20:
			p.bad = true
			return ""
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	p.bad = true
	return ""
}

// int reads an integer: -?(0|[1-9][0-9]*) not followed by a fraction or
// an exponent, within an int.
func (p *summaryScan) int() int {
	if p.bad {
		return 0
	}
	start := p.i
	if p.peek() == '-' {
		p.i++
	}
	digits := p.i
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		p.i++
	}
	if n := p.i - digits; n == 0 || n > 1 && p.b[digits] == '0' {
		p.bad = true
		return 0
	}
	if c := p.peek(); c == '.' || c == 'e' || c == 'E' {
		p.bad = true
		return 0
	}
	n, err := strconv.ParseInt(string(p.b[start:p.i]), 10, strconv.IntSize)
	if err != nil {
		p.bad = true
		return 0
	}
	return int(n)
}

func (p *summaryScan) bool() bool {
	switch {
	case p.bad:
	case len(p.b)-p.i >= 4 && string(p.b[p.i:p.i+4]) == "true":
		p.i += 4
		return true
	case len(p.b)-p.i >= 5 && string(p.b[p.i:p.i+5]) == "false":
		p.i += 5
		return false
	}
	p.bad = true
	return false
}

// time reads an RFC 3339 time in UTC ("Z"), parsed as time.Time's own
// UnmarshalJSON parses it; another offset is left to encoding/json.
func (p *summaryScan) time() time.Time {
	s := p.str()
	var t time.Time
	if p.bad || len(s) == 0 || s[len(s)-1] != 'Z' || t.UnmarshalText([]byte(s)) != nil {
		p.bad = true
		return time.Time{}
	}
	return t
}
