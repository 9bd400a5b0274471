package mcp

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"
)

// maxIDBytes bounds the id a frameScanner keeps: an id longer than this
// (JSON text) is known to be present but is not recovered.
const maxIDBytes = 4 << 10

// maxKeyBytes bounds the top-level keys a frameScanner reads; the keys it
// looks for ("id", "method", "result", "error", escaped or not) are
// shorter.
const maxKeyBytes = 64

// frameScanner reads just enough of a frame to answer it when it cannot
// be decoded: the members "id", "method", "result" and "error" of the
// top-level object, and how deep the frame nests. It is a byte-level
// state machine with no recursion and constant memory (beyond one id), so
// input nested a million deep, truncated, invalid or longer than the
// frame limit costs one pass and no stack; it can be fed a frame in
// pieces as it arrives. It does not validate: on broken input it reports
// what a reader scanning left to right would have seen so far.
type frameScanner struct {
	started, closed bool
	top             byte // first significant byte: '{', '[', or that of a scalar
	depth, maxDepth int

	inString, escaped bool
	// state at depth 1 of a top-level object: '{' or ',' (a key may
	// start), 'k' (a key ended), ':' (a value may start), 's' (inside a
	// scalar value), 'v' (a value ended)
	prev     byte
	capture  byte // what the current string or scalar is: 'k' key, 'i' id value, 0 nothing
	buf      []byte
	overflow bool // the capture outgrew its bound
	keyIsID  bool // the last key was "id"

	idCount   int             // complete "id" members of the top-level object
	id        json.RawMessage // the last one's JSON text; nil if too long or a container
	idKind    byte            // the first byte of the last one: '"', '-', a digit, 'n', '{', ...
	hasMethod bool            // a "method" member (the frame is a request or notification)
	hasResult bool            // a "result" or "error" member (a response)
}

// scanFrame scans a whole frame.
func scanFrame(frame []byte) *frameScanner {
	s := &frameScanner{}
	s.feed(frame)
	return s
}

// feed scans the next piece of the frame.
func (s *frameScanner) feed(p []byte) {
	for i := 0; i < len(p) && !s.closed; {
		if s.inString {
			i = s.stringPart(p, i)
			continue
		}
		c := p[i]
		i++
		switch c {
		case ' ', '\t', '\r', '\n':
			s.endScalar()
		case '"':
			s.endScalar()
			s.startValue(c)
			s.inString = true
			if s.depth == 1 && s.top == '{' {
				switch s.prev {
				case '{', ',':
					s.begin('k', c)
				case ':':
					if s.keyIsID {
						s.begin('i', c)
						s.idKind = c
					}
					s.prev = 's'
				}
			}
		case '{', '[':
			s.endScalar()
			s.startValue(c)
			if s.depth == 1 && s.prev == ':' {
				if s.keyIsID { // an id that is an object or array: present, unusable
					s.idCount, s.id, s.idKind = s.idCount+1, nil, c
				}
				s.prev = 's'
			}
			s.depth++
			s.maxDepth = max(s.maxDepth, s.depth)
			if s.depth == 1 && s.top == '{' {
				s.prev = '{'
			}
		case '}', ']':
			s.endScalar()
			s.depth--
			switch {
			case s.depth <= 0:
				s.closed = true
			case s.depth == 1:
				s.prev = 'v'
			}
		case ':':
			s.endScalar()
			if s.depth == 1 && s.prev == 'k' {
				s.prev = ':'
			}
		case ',':
			s.endScalar()
			if s.depth == 1 {
				s.prev = ','
			}
		default: // a byte of a number, true, false, null or garbage
			s.startValue(c)
			if s.depth == 1 && s.prev == ':' {
				if s.keyIsID {
					s.begin('i', 0)
					s.idKind = c
				}
				s.prev = 's'
			}
			if s.capture == 'i' {
				s.add([]byte{c})
			}
		}
	}
}

// startValue notes the first significant byte of the frame.
func (s *frameScanner) startValue(c byte) {
	if !s.started {
		s.started, s.top = true, c
		if c != '{' && c != '[' && c != '"' {
			s.closed = true // a scalar frame has no members to find
		}
	}
}

// stringPart scans inside a string from p[i] and returns where it
// stopped: after the closing quote, or at the end of p. Linear in the
// string: the closing quote is searched for again only when the one found
// turns out to be escaped.
func (s *frameScanner) stringPart(p []byte, i int) int {
	start := i
	if s.escaped { // the escape began at the end of the previous piece
		s.escaped = false
		i++
	}
	q := -1 // index in p of the next quote at or after i, if known
	for i < len(p) {
		if q < i {
			if q = bytes.IndexByte(p[i:], '"'); q < 0 {
				q = len(p)
			} else {
				q += i
			}
		}
		b := bytes.IndexByte(p[i:q], '\\')
		if b < 0 {
			if q == len(p) {
				break // the string goes on in the next piece
			}
			s.add(p[start : q+1])
			s.inString = false
			if s.depth == 0 {
				s.closed = true // a string frame
			}
			s.endCapture()
			return q + 1
		}
		i += b + 2 // past the backslash and the byte it escapes
		if i > len(p) {
			s.escaped = true
		}
	}
	s.add(p[start:])
	return len(p)
}

// begin starts capturing a key or an id value.
func (s *frameScanner) begin(what, first byte) {
	s.capture, s.buf, s.overflow = what, s.buf[:0], false
	if first != 0 {
		s.buf = append(s.buf, first)
	}
}

func (s *frameScanner) add(p []byte) {
	if s.capture == 0 || s.overflow {
		return
	}
	bound := maxIDBytes
	if s.capture == 'k' {
		bound = maxKeyBytes
	}
	if len(s.buf)+len(p) > bound {
		s.overflow, s.buf = true, s.buf[:0]
		return
	}
	s.buf = append(s.buf, p...)
}

// endScalar ends a number or literal at depth 1 on the byte after it.
func (s *frameScanner) endScalar() {
	if s.depth == 1 && s.prev == 's' && !s.inString {
		s.prev = 'v'
		s.endCapture()
	}
}

// endCapture settles a key or value that just ended.
func (s *frameScanner) endCapture() {
	if s.depth != 1 {
		return
	}
	switch s.capture {
	case 'k':
		s.prev = 'k'
		s.keyIsID = false
		if key, err := memberName(s.buf); !s.overflow && err == nil {
			switch string(key) {
			case "id":
				s.keyIsID = true
			case "method":
				s.hasMethod = true
			case "result", "error":
				s.hasResult = true
			}
		}
	case 'i':
		s.idCount++
		s.id = nil
		if !s.overflow {
			s.id = append(json.RawMessage(nil), s.buf...)
		}
	default:
		if s.prev == 's' {
			s.prev = 'v'
		}
	}
	if s.prev == 's' {
		s.prev = 'v'
	}
	s.capture = 0
}

// isResponse reports a frame that looks like a response (it has a result
// or error member and no method): a response is never answered.
func (s *frameScanner) isResponse() bool { return s.hasResult && !s.hasMethod }

// answerID is the id to answer an undecodable frame with: the frame's own
// (the last, if it has several), else nil for null.
func (s *frameScanner) answerID() json.RawMessage {
	echo, _ := checkID(s.id)
	return echo
}

// idProblem says why the frame's id cannot be passed to the SDK as it is
// ("" when it can: a string, an exact integer, null or no id at all).
func (s *frameScanner) idProblem() string {
	switch {
	case s.idCount > 1:
		return "the message has more than one id member"
	case s.idCount == 0, s.idKind == '"', s.idKind == 'n':
		return ""
	}
	if _, usable := checkID(s.id); !usable {
		return "an id must be a string or an integer of magnitude at most 2^53"
	}
	return ""
}

// maxExactInt is the largest integer every JSON reader holds exactly (a
// float64's 53-bit mantissa): a larger id would come back changed.
const maxExactInt = 1 << 53

// checkID vets the JSON text of an id. It returns the text to echo in an
// answer (nil: answer with a null id) and whether the SDK can take the id
// as it is: a string, or an integer of magnitude at most 2^53 (the SDK
// reads numbers as float64 and answers with their integer part, so 1.5
// would be answered as 1).
func checkID(raw json.RawMessage) (echo json.RawMessage, usable bool) {
	if len(raw) == 0 {
		return nil, false
	}
	switch c := raw[0]; {
	case c == '"':
		var str string
		if json.Unmarshal(raw, &str) != nil {
			return nil, false
		}
		if !utf8.Valid(raw) {
			raw, _ = json.Marshal(str) // as the SDK would read it
		}
		return raw, true
	case c == '-' || (c >= '0' && c <= '9'):
		if !json.Valid(raw) {
			return nil, false
		}
		if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
			return raw, n >= -maxExactInt && n <= maxExactInt
		}
		// 1e2 or 1.0: fine if integral and below 2^53, where every
		// integer is exact.
		f, err := strconv.ParseFloat(string(raw), 64)
		return raw, err == nil && f == math.Trunc(f) && math.Abs(f) < maxExactInt
	}
	return nil, false // null, true, false, garbage
}
