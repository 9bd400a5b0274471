package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
)

// stateFormat names the layout of state.json; a different layout gets a
// new name.
const stateFormat = "stratum.run-state.v1"

// envelope is the content of a run's state.json: the engine's document
// plus what the store needs to trust it and to find the head of the event
// log without reading the log.
type envelope struct {
	RunID string
	// Seq and Head are the acknowledged head of the event log.
	Seq  int64
	Head string
	// LogSize is the byte length of the event log up to and including the
	// head's line. Anything after it was never acknowledged.
	LogSize int64
	State   []byte
}

const checkPrefix = `{"check":"`

// encodeEnvelope renders the state file:
//
//	{"check":C,"format":F,"head":H,"logSize":N,"runId":R,"seq":S,"state":DOC}\n
//
// (keys sorted, so the file is canonical JSON with the document last). C is
// the SHA-256 of the file with the `"check":"C",` member removed, that is
// of "{" followed by every byte after that member, trailing newline
// included. Any changed byte of the file therefore fails the check.
func encodeEnvelope(e envelope) []byte {
	rest := make([]byte, 0, len(e.State)+len(e.RunID)+hashHexLen+96)
	rest = append(rest, `"format":"`+stateFormat+`","head":"`...)
	rest = append(rest, e.Head...)
	rest = append(rest, `","logSize":`...)
	rest = strconv.AppendInt(rest, e.LogSize, 10)
	rest = append(rest, `,"runId":"`...)
	rest = append(rest, e.RunID...)
	rest = append(rest, `","seq":`...)
	rest = strconv.AppendInt(rest, e.Seq, 10)
	rest = append(rest, `,"state":`...)
	rest = append(rest, e.State...)
	rest = append(rest, "}\n"...)

	h := sha256.New()
	h.Write([]byte{'{'})
	h.Write(rest)
	out := make([]byte, 0, len(checkPrefix)+hashHexLen+2+len(rest))
	out = append(out, checkPrefix...)
	out = hex.AppendEncode(out, h.Sum(nil))
	out = append(out, `",`...)
	return append(out, rest...)
}

// decodeEnvelope checks and parses a state file. It parses by the fixed
// layout instead of with encoding/json so that loading does not scan the
// (possibly large) document: the checksum already proves the bytes are
// those a writer produced.
func decodeEnvelope(data []byte) (envelope, error) {
	var e envelope
	head := len(checkPrefix) + hashHexLen + 2
	if len(data) < head || !bytes.HasPrefix(data, []byte(checkPrefix)) || string(data[head-2:head]) != `",` {
		return e, errors.New("not a state file: it does not start with the check member")
	}
	stored := string(data[len(checkPrefix) : head-2])
	h := sha256.New()
	h.Write([]byte{'{'})
	h.Write(data[head:])
	if got := hex.EncodeToString(h.Sum(nil)); got != stored {
		return e, fmt.Errorf("checksum mismatch: stored %q, computed %s", stored, got)
	}
	p := layoutParser{data: data, pos: head}
	p.literal(`"format":"` + stateFormat + `","head":"`)
	e.Head = p.until('"')
	p.literal(`","logSize":`)
	e.LogSize = p.integer()
	p.literal(`,"runId":"`)
	e.RunID = p.until('"')
	p.literal(`","seq":`)
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
