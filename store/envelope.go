package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// State file formats. v1 files are still read; every write produces v2.
const (
	stateFormatV1 = "stratum.run-state.v1"
	stateFormat   = "stratum.run-state.v2"
)

// envelope is the content of a run's state.json: the engine's document
// plus what the store needs to trust it and to find the head of the event
// log without reading the log.
type envelope struct {
	// Version is 1 or 2 (the format read; encodeEnvelope writes 2).
	Version int
	RunID   string
	// Seq and Head are the acknowledged head of the event log.
	Seq  int64
	Head string
	// LogSize is the byte length of the event log up to and including the
	// head's line. Anything after it was never acknowledged.
	LogSize int64
	// Rev counts the run's writes (1 for Create); the head record carries
	// it too, which is how a state rolled back alone is recognised. v1
	// files have 0.
	Rev int64
	// Summary is the compacted summary, nil when none was written.
	Summary []byte
	// SavedAt is when this state was written (zero in v1 files).
	SavedAt time.Time
	State   []byte
	// Check is the file's check member (set by decodeEnvelope and
	// sealEnvelope): the head record carries it, so a state edited with a
	// recomputed check no longer matches the record.
	Check string
}

const checkPrefix = `{"check":"`

// encodeEnvelope renders the state file:
//
//	{"check":C,"format":F,"head":H,"logSize":N,"rev":R,"runId":ID,"runSummary":SUM,"savedAt":T,"seq":S,"state":DOC}\n
//
// (keys sorted, so the file is canonical JSON with the document last;
// SUM is null when the run has no summary). C is the SHA-256 of the file
// with the `"check":"C",` member removed, that is of "{" followed by every
// byte after that member, trailing newline included. Any changed byte of
// the file therefore fails the check.
func encodeEnvelope(e envelope) []byte {
	rest := make([]byte, 0, len(e.State)+len(e.Summary)+len(e.RunID)+hashHexLen+160)
	rest = append(rest, `"format":"`+stateFormat+`","head":"`...)
	rest = append(rest, e.Head...)
	rest = append(rest, `","logSize":`...)
	rest = strconv.AppendInt(rest, e.LogSize, 10)
	rest = append(rest, `,"rev":`...)
	rest = strconv.AppendInt(rest, e.Rev, 10)
	rest = append(rest, `,"runId":"`...)
	rest = append(rest, e.RunID...)
	rest = append(rest, `","runSummary":`...)
	if e.Summary == nil {
		rest = append(rest, "null"...)
	} else {
		rest = append(rest, e.Summary...)
	}
	rest = append(rest, `,"savedAt":"`...)
	rest = e.SavedAt.UTC().AppendFormat(rest, time.RFC3339Nano)
	rest = append(rest, `","seq":`...)
	rest = strconv.AppendInt(rest, e.Seq, 10)
	rest = append(rest, `,"state":`...)
	rest = append(rest, e.State...)
	rest = append(rest, "}\n"...)
	return withCheck(rest)
}

// sealEnvelope encodes e and records its check in it.
func sealEnvelope(e *envelope) []byte {
	b := encodeEnvelope(*e)
	e.Check = string(b[len(checkPrefix) : len(checkPrefix)+hashHexLen])
	return b
}

// withCheck prefixes the check member to rest (the file after it).
func withCheck(rest []byte) []byte {
	h := sha256.New()
	h.Write([]byte{'{'})
	h.Write(rest)
	out := make([]byte, 0, len(checkPrefix)+hashHexLen+2+len(rest))
	out = append(out, checkPrefix...)
	out = hex.AppendEncode(out, h.Sum(nil))
	out = append(out, `",`...)
	return append(out, rest...)
}

// verifyCheck checks the check member of data and returns the offset of
// the first byte after it.
func verifyCheck(data []byte, what string) (int, error) {
	head := len(checkPrefix) + hashHexLen + 2
	if len(data) < head || !bytes.HasPrefix(data, []byte(checkPrefix)) || string(data[head-2:head]) != `",` {
		return 0, fmt.Errorf("not a %s: it does not start with the check member", what)
	}
	stored := string(data[len(checkPrefix) : head-2])
	h := sha256.New()
	h.Write([]byte{'{'})
	h.Write(data[head:])
	if got := hex.EncodeToString(h.Sum(nil)); got != stored {
		return 0, fmt.Errorf("checksum mismatch: stored %q, computed %s", stored, got)
	}
	return head, nil
}

// decodeEnvelope checks and parses a state file (v1 or v2). It parses by
// the fixed layout instead of with encoding/json so that loading does not
// scan the (possibly large) document: the checksum already proves the
// bytes are those a writer produced.
func decodeEnvelope(data []byte) (envelope, error) {
	var e envelope
	head, err := verifyCheck(data, "state file")
	if err != nil {
		return e, err
	}
	e.Check = string(data[len(checkPrefix) : len(checkPrefix)+hashHexLen])
	p := layoutParser{data: data, pos: head}
	v1 := bytes.HasPrefix(data[head:], []byte(`"format":"`+stateFormatV1+`"`))
	if v1 {
		e.Version = 1
		p.literal(`"format":"` + stateFormatV1 + `","head":"`)
	} else {
		e.Version = 2
		p.literal(`"format":"` + stateFormat + `","head":"`)
	}
	e.Head = p.until('"')
	p.literal(`","logSize":`)
	e.LogSize = p.integer()
	if !v1 {
		p.literal(`,"rev":`)
		e.Rev = p.integer()
	}
	p.literal(`,"runId":"`)
	e.RunID = p.until('"')
	if !v1 {
		p.literal(`","runSummary":`)
		e.Summary = p.jsonValue()
		if string(e.Summary) == "null" {
			e.Summary = nil
		}
		p.literal(`,"savedAt":"`)
		e.SavedAt = p.time()
		p.literal(`","seq":`)
	} else {
		p.literal(`","seq":`)
	}
	e.Seq = p.integer()
	p.literal(`,"state":`)
	if p.err == nil {
		if !bytes.HasSuffix(data[p.pos:], []byte("}\n")) || len(data)-p.pos < 3 {
			p.err = errors.New("state document is missing or the file does not end with }\\n")
		} else {
			e.State = data[p.pos : len(data)-2]
		}
	}
	if p.err != nil {
		return envelope{}, fmt.Errorf("bad state file layout at byte %d: %v", p.pos, p.err)
	}
	if !isHashHex(e.Head) {
		return envelope{}, errors.New("head is not 64 lowercase hex digits")
	}
	if err := ValidateRunID(e.RunID); err != nil {
		return envelope{}, fmt.Errorf("state file names a bad run id: %v", err)
	}
	return e, nil
}

// layoutParser walks a byte slice expecting a fixed layout; the first
// mismatch sets err and makes every later step a no-op.
type layoutParser struct {
	data []byte
	pos  int
	err  error
}

func (p *layoutParser) literal(s string) {
	if p.err != nil {
		return
	}
	if !bytes.HasPrefix(p.data[p.pos:], []byte(s)) {
		p.err = fmt.Errorf("expected %q", s)
		return
	}
	p.pos += len(s)
}

// until returns the bytes up to (not including) the next c, leaving pos on c.
func (p *layoutParser) until(c byte) string {
	if p.err != nil {
		return ""
	}
	i := bytes.IndexByte(p.data[p.pos:], c)
	if i < 0 {
		p.err = fmt.Errorf("missing %q", c)
		return ""
	}
	s := string(p.data[p.pos : p.pos+i])
	p.pos += i
	return s
}

// integer reads a non-negative decimal without leading zeros.
func (p *layoutParser) integer() int64 {
	if p.err != nil {
		return 0
	}
	end := p.pos
	for end < len(p.data) && p.data[end] >= '0' && p.data[end] <= '9' {
		end++
	}
	digits := string(p.data[p.pos:end])
	if digits == "" || (len(digits) > 1 && digits[0] == '0') {
		p.err = errors.New("expected a non-negative integer")
		return 0
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		p.err = err
		return 0
	}
	p.pos = end
	return n
}

// time reads an RFC 3339 time up to the next '"'.
func (p *layoutParser) time() time.Time {
	s := p.until('"')
	if p.err != nil {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		p.err = fmt.Errorf("bad time %q", s)
		return time.Time{}
	}
	return t.UTC()
}

// jsonValue returns the compact JSON value (null or an object, as the
// store writes summaries) starting at pos. It relies on the value being
// what a writer produced (a checksum proved it): it tracks strings and
// nesting only, which finds the end without decoding.
func (p *layoutParser) jsonValue() []byte {
	if p.err != nil {
		return nil
	}
	end, ok := compactValueEnd(p.data[p.pos:])
	if !ok {
		p.err = errors.New("expected null or a JSON object")
		return nil
	}
	v := p.data[p.pos : p.pos+end]
	p.pos += end
	return v
}

// compactValueEnd returns the length of the null or object at the start of
// b.
func compactValueEnd(b []byte) (int, bool) {
	if bytes.HasPrefix(b, []byte("null")) {
		return 4, true
	}
	if len(b) == 0 || b[0] != '{' {
		return 0, false
	}
	depth, inString := 0, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case inString && c == '\\':
			i++
		case inString:
			inString = c != '"'
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
			if depth == 0 {
				return i + 1, true
			}
		}
	}
	return 0, false
}
