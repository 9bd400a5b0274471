package engine

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"math/bits"
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
	// What a listing saves (listDecoder): with names, the strings that
	// repeat from run to run are shared; a runId equal to id is id itself;
	// with skipGates the gates are read (and checked) but not kept.
	names     *names
	id        string
	skipGates bool
}

// fastSummary decodes raw as json.Unmarshal would into a storedSummary;
// ok is false when raw is outside the shape it reads (not necessarily
// invalid: the caller then asks encoding/json).
func fastSummary(raw []byte) (s storedSummary, ok bool) {
	p := &summaryScan{b: raw}
	ok = p.summary(&s)
	return s, ok
}

// summary reads the whole of p.b into s.
func (p *summaryScan) summary(s *storedSummary) bool {
	p.fields(func(key []byte) uint32 { return scanSummaryMember(p, s, key) })
	return !p.bad && p.i == len(p.b)
}

// listDecoder decodes the summaries of a listing, for one goroutine. A
// listing of 10,000 runs made a string of every member of every summary,
// most of them the same few flow names, statuses and step ids; the
// decoder shares those (names), takes a run's id from the store's
// listing rather than copying it out of the summary, and does not build
// the gates, which a listing of runs does not show (docs/engine.md,
// "Listings").
type listDecoder struct {
	names names
	scan  summaryScan // reused: a scan passed to scanArray's elem is on the heap
}

// decode reads raw, the summary of the run the store lists as id, into s
// as decodeSummary would, except that s.Gates is left nil.
func (d *listDecoder) decode(raw []byte, id string, s *storedSummary) bool {
	d.scan = summaryScan{b: raw, names: &d.names, id: id, skipGates: true}
	ok := d.scan.stored(s)
	d.scan.b = nil // raw is not kept
	s.Gates = nil  // read only by encoding/json
	return ok
}

// stored reads the stored summary p.b into s: by hand in the shape the
// engine writes (summary), else with encoding/json; false when there is
// none of this format.
func (p *summaryScan) stored(s *storedSummary) bool {
	if len(p.b) == 0 {
		return false
	}
	if !p.summary(s) {
		*s = storedSummary{}
		if err := json.Unmarshal(p.b, s); err != nil {
			return false
		}
	}
	return s.Format == summaryFormat
}

// maxNames bounds what a listDecoder keeps: past it, strings are no
// longer shared (a listing of runs of many distinct flows and steps
// costs what it did without sharing, not an unbounded table).
const maxNames = 1024

// names shares equal strings.
type names struct{ m map[string]string }

// of is b as a string, the same string for equal b.
func (n *names) of(b []byte) string {
	if s, ok := n.m[string(b)]; ok { // the lookup copies nothing
		return s
	}
	s := string(b)
	if n.m == nil {
		n.m = make(map[string]string)
	}
	if len(n.m) < maxNames {
		n.m[s] = s
	}
	return s
}

// scanSummaryMember reads the value of member key into s and returns the
// member's bit (0 for an unknown member, whose value is not read).
func scanSummaryMember(p *summaryScan, s *storedSummary, key []byte) uint32 {
	r := &s.RunSummary
	switch string(key) {
	case "v":
		s.Format = p.int()
		return 1 << 0
	case "runId":
		r.RunID = p.runID()
		return 1 << 1
	case "flow":
		r.Flow = p.name()
		return 1 << 2
	case "status":
		r.Status = RunStatus(p.name())
		return 1 << 3
	case "createdAt":
		r.CreatedAt = p.time()
		return 1 << 4
	case "updatedAt":
		r.UpdatedAt = p.time()
		return 1 << 5
	case "failureCause":
		r.FailureCause = FailureCause(p.name())
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
		r.Current = p.name()
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
		if p.skipGates {
			skipArray(p, scanGate)
		} else {
			s.Gates = scanArray(p, scanGate)
		}
		return 1 << 16
	case "more":
		s.More = p.bool()
		return 1 << 17
	}
	return 0
}

// scanWaiting reads one Waiting object.
func scanWaiting(p *summaryScan) (w Waiting) {
	p.fields(func(key []byte) (bit uint32) {
		switch string(key) {
		case "stepId":
			bit, w.StepID = 1, p.name()
		case "kind":
			bit, w.Kind = 2, WaitingKind(p.name())
		case "paused":
			bit, w.Paused = 4, p.name()
		}
		return bit
	})
	return w
}

// scanGate reads one WaitingGate object (its strings empty when p skips
// gates: see text).
func scanGate(p *summaryScan) (g WaitingGate) {
	p.fields(func(key []byte) (bit uint32) {
		switch string(key) {
		case "runId":
			bit, g.RunID = 1<<0, p.text()
		case "flow":
			bit, g.Flow = 1<<1, p.text()
		case "stepId":
			bit, g.StepID = 1<<2, p.text()
		case "kind":
			bit, g.Kind = 1<<3, WaitingKind(p.text())
		case "gateToken":
			bit, g.GateToken = 1<<4, p.text()
		case "onApprove":
			bit, g.OnApprove = 1<<5, p.text()
		case "onRevise":
			bit, g.OnRevise = 1<<6, p.text()
		case "onKill":
			bit, g.OnKill = 1<<7, p.text()
		case "round":
			bit, g.Round = 1<<8, p.int()
		case "maxRounds":
			bit, g.MaxRounds = 1<<9, p.int()
		case "revisesLeft":
			bit, g.RevisesLeft = 1<<10, p.int()
		case "digest":
			bit, g.Digest = 1<<11, p.text()
		}
		return bit
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

// skipArray reads a JSON array as scanArray does, keeping nothing.
func skipArray[T any](p *summaryScan, elem func(*summaryScan) T) {
	if !p.expect('[') {
		return
	}
	if p.peek() == ']' {
		p.i++
		return
	}
	for !p.bad {
		elem(p)
		if p.peek() == ',' {
			p.i++
			continue
		}
		p.expect(']')
		return
	}
}

// object reads {"key":value,...}, calling member for each key with the
// scan at the value, which member must read. The key is p.b's own bytes
// (a switch on string(key) copies nothing).
func (p *summaryScan) object(member func(key []byte)) {
	if !p.expect('{') {
		return
	}
	if p.peek() == '}' {
		p.i++
		return
	}
	for !p.bad {
		key := p.raw()
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

// fields reads an object whose members are each read by member, which
// returns the member's bit (0 for a member it does not read): an unknown
// or repeated member leaves the shape read (p.bad).
func (p *summaryScan) fields(member func(key []byte) uint32) {
	var seen uint32
	p.object(func(key []byte) {
		bit := member(key)
		if bit == 0 || seen&bit != 0 {
			p.bad = true
		}
		seen |= bit
	})
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

// raw reads a string without escapes or control characters, in valid
// UTF-8 (encoding/json would replace invalid bytes), and returns its
// bytes (p.b's own: not to be kept). Eight bytes at a time are looked at
// (see special) up to the first that is not plain ASCII: the closing
// quote ends the string, anything else is read by rawRest.
func (p *summaryScan) raw() []byte {
	if !p.expect('"') {
		return nil
	}
	b, start := p.b, p.i
	i := start
	for ; i+8 <= len(b); i += 8 {
		if m := special(binary.LittleEndian.Uint64(b[i:])); m != 0 {
			i += bits.TrailingZeros64(m) / 8
			if b[i] == '"' {
				p.i = i + 1
				return b[start:i]
			}
			break
		}
	}
	p.i = i
	return p.rawRest(start)
}

// rawRest is raw from p.i on, one byte at a time, for a string that
// started at start and is plain ASCII up to p.i.
func (p *summaryScan) rawRest(start int) []byte {
	ascii := true
	for ; p.i < len(p.b); p.i++ {
		c := p.b[p.i]
		switch {
		case c == '"':
			s := p.b[start:p.i]
			p.i++
			if !ascii && !utf8.Valid(s) {
				p.bad = true
				return nil
			}
			return s
		case c == '\\' || c < 0x20:
			p.bad = true
			return nil
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	p.bad = true
	return nil
}

// special marks the bytes of w (eight, little-endian) that are '"',
// '\\', control characters (below 0x20) or outside ASCII: the top bit of
// each such byte is set, and the lowest set bit is in the first such
// byte (a byte above it may be marked falsely). A byte x below n borrows
// in x - n and has its top bit set there while clear in x ("Bit
// Twiddling Hacks", hasless); no byte before the first such one borrows,
// so none is marked. A byte equal to c is a byte below 1 in x XOR c.
func special(w uint64) uint64 {
	const ones, tops = 0x0101010101010101, 0x8080808080808080
	below := func(x uint64, n uint64) uint64 { return (x - n*ones) &^ x & tops }
	return w&tops | below(w, 0x20) | below(w^('"'*ones), 1) | below(w^('\\'*ones), 1)
}

// str reads a string (see raw).
func (p *summaryScan) str() string { return string(p.raw()) }

// name reads a string that repeats from run to run: shared through
// p.names when there is one.
func (p *summaryScan) name() string {
	b := p.raw()
	if p.names == nil {
		return string(b)
	}
	return p.names.of(b)
}

// runID reads the run's id: p.id when it is equal.
func (p *summaryScan) runID() string {
	if b := p.raw(); string(b) != p.id { // the comparison copies nothing
		return string(b)
	}
	return p.id
}

// text reads a gate's string: "" when gates are skipped.
func (p *summaryScan) text() string {
	if p.skipGates {
		p.raw()
		return ""
	}
	return p.str()
}

// int reads an integer: -?(0|[1-9][0-9]*) not followed by a fraction or
// an exponent, within an int (what strconv.ParseInt accepts, without
// making a string of it).
func (p *summaryScan) int() int {
	if p.bad {
		return 0
	}
	neg := p.peek() == '-'
	if neg {
		p.i++
	}
	digits := p.i
	var n uint64
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		if p.i-digits == 19 { // 20 digits: beyond any int64
			p.bad = true
			return 0
		}
		n = n*10 + uint64(p.b[p.i]-'0')
		p.i++
	}
	if d := p.i - digits; d == 0 || d > 1 && p.b[digits] == '0' {
		p.bad = true
		return 0
	}
	if c := p.peek(); c == '.' || c == 'e' || c == 'E' {
		p.bad = true
		return 0
	}
	switch {
	case !neg && n <= math.MaxInt:
		return int(n)
	case neg && n <= -math.MinInt:
		return int(-n) // -(1<<63) wraps to itself, math.MinInt
	}
	p.bad = true
	return 0
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
// UnmarshalJSON parses it; another offset is left to encoding/json. The
// shape the engine writes (2006-01-02T15:04:05.999999999Z, every field
// in range) is read by hand, anything else by time.Time.UnmarshalText.
func (p *summaryScan) time() time.Time {
	s := p.raw()
	if p.bad || len(s) == 0 || s[len(s)-1] != 'Z' {
		p.bad = true
		return time.Time{}
	}
	if t, ok := utcTime(s); ok {
		return t
	}
	var t time.Time
	if t.UnmarshalText(s) != nil {
		p.bad = true
		return time.Time{}
	}
	return t
}

// utcTime reads s, a time in the shape 2006-01-02T15:04:05Z with 1 to 9
// digits of a fraction after the seconds or none, every field in the
// range time.Parse checks; ok is false for anything else (which may still
// be a time). The time is made by time.Date, as time.Parse makes it.
func utcTime(s []byte) (_ time.Time, ok bool) {
	if len(s) < len("2006-01-02T15:04:05Z") || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' || s[len(s)-1] != 'Z' {
		return time.Time{}, false
	}
	ok = true
	num := func(b []byte, lo, hi int) int {
		n := 0
		for _, c := range b {
			if c < '0' || c > '9' {
				ok = false
				return 0
			}
			n = n*10 + int(c-'0')
		}
		if n < lo || n > hi {
			ok = false
		}
		return n
	}
	year, month := num(s[0:4], 0, 9999), num(s[5:7], 1, 12)
	if !ok {
		return time.Time{}, false
	}
	day, hour, minute, sec := num(s[8:10], 1, daysIn(month, year)), num(s[11:13], 0, 23), num(s[14:16], 0, 59), num(s[17:19], 0, 59)
	nsec := 0
	switch frac := s[19 : len(s)-1]; {
	case len(frac) == 0:
	case len(frac) < 2 || len(frac) > 10 || frac[0] != '.':
		return time.Time{}, false
	default:
		nsec = num(frac[1:], 0, math.MaxInt)
		for range 10 - len(frac) {
			nsec *= 10
		}
	}
	if !ok {
		return time.Time{}, false
	}
	return time.Date(year, time.Month(month), day, hour, minute, sec, nsec, time.UTC), true
}

// daysIn is the number of days of month (1 to 12) in year.
func daysIn(month, year int) int {
	if month == 2 && year%4 == 0 && (year%100 != 0 || year%400 == 0) {
		return 29
	}
	return [...]int{31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}[month-1]
}
