package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
)

// hashHexLen is the length of a SHA-256 digest in lowercase hex.
const hashHexLen = 64

// maxEventTypeLen bounds NewEvent.Type.
const maxEventTypeLen = 64

// genesisHash is the prevHash of a run's first event. Deriving it from the
// run id binds the chain to its run: an event log copied under another id
// does not verify.
func genesisHash(runID string) string {
	sum := sha256.Sum256([]byte("stratum.run.v1\n" + runID))
	return hex.EncodeToString(sum[:])
}

// canonicalJSON rewrites one JSON value in the canonical form hashed by the
// event chain: object keys sorted by their UTF-8 bytes at every level, no
// insignificant whitespace, strings escaped as encoding/json does without
// HTML escaping, numbers kept exactly as written. Duplicate keys keep the
// last value (as encoding/json decodes them). It is idempotent.
func canonicalJSON(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("not valid JSON: data after the value")
	}
	return marshalCanonical(v)
}

// marshalCanonical encodes a value decoded with UseNumber. encoding/json
// sorts map keys; only HTML escaping and the trailing newline of Encoder
// need undoing.
func marshalCanonical(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}

// validEventType reports whether t is 1..64 bytes of [A-Za-z0-9_.:-]. The
// restriction keeps types printable and free of JSON escapes.
func validEventType(t string) bool {
	if t == "" || len(t) > maxEventTypeLen {
		return false
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == ':' || c == '-' {
			continue
		}
		return false
	}
	return true
}

// formatAt renders an event time in its one stored form.
func formatAt(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// eventBody is the canonical JSON of an event without its hash member: the
// exact bytes its hash covers. Keys in sorted order: at, begin (only when
// true: the first event of a write, see [Event.Begin]), data, prevHash,
// seq, type.
func eventBody(at string, begin bool, data []byte, prevHash string, seq int64, typ string) []byte {
	b := make([]byte, 0, len(data)+len(at)+len(typ)+hashHexLen+80)
	b = append(b, `{"at":"`...)
	b = append(b, at...)
	if begin {
		b = append(b, `","begin":true,"data":`...)
	} else {
		b = append(b, `","data":`...)
	}
	b = append(b, data...)
	b = append(b, `,"prevHash":"`...)
	b = append(b, prevHash...)
	b = append(b, `","seq":`...)
	b = strconv.AppendInt(b, seq, 10)
	b = append(b, `,"type":"`...)
	b = append(b, typ...)
	b = append(b, `"}`...)
	return b
}

// withHash inserts the hash member into an event body, giving the stored
// line (still canonical: "hash" sorts between "data" and "prevHash").
func withHash(body []byte, hash string) []byte {
	i := bytes.LastIndex(body, []byte(`,"prevHash":"`))
	line := make([]byte, 0, len(body)+len(hash)+10)
	line = append(line, body[:i]...)
	line = append(line, `,"hash":"`...)
	line = append(line, hash...)
	line = append(line, '"')
	line = append(line, body[i:]...)
	return line
}

// lineHash reads the hash an event line records, without checking it.
func lineHash(line []byte) (string, error) {
	i := bytes.LastIndex(line, []byte(`,"hash":"`))
	if i < 0 || len(line)-i < len(`,"hash":"`)+64 {
		return "", errors.New("not an event line")
	}
	h := string(line[i+len(`,"hash":"`):][:64])
	if !isHashHex(h) {
		return "", errors.New("not an event line")
	}
	return h, nil
}

func hashBody(body []byte) string {
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:])
}

// encodeEvent turns a caller's event into its stored line (without the
// newline) and hash. begin marks the first event of a write.
func encodeEvent(seq int64, prevHash string, e NewEvent, begin bool) (line []byte, hash string, err error) {
	ev, line, err := encodeStored(seq, prevHash, e, begin)
	return line, ev.Hash, err
}

// encodeStored is encodeEvent returning the event as Events reads it back.
func encodeStored(seq int64, prevHash string, e NewEvent, begin bool) (Event, []byte, error) {
	line, hash, data, at, err := encodeLine(seq, prevHash, e, begin)
	if err != nil {
		return Event{}, nil, err
	}
	return Event{Seq: seq, Type: e.Type, At: at, Data: data, PrevHash: prevHash, Hash: hash, Begin: begin}, line, nil
}

func encodeLine(seq int64, prevHash string, e NewEvent, begin bool) (line []byte, hash string, data []byte, at time.Time, err error) {
	if !validEventType(e.Type) {
		return nil, "", nil, at, fmt.Errorf("%w: event type %q: want 1 to %d of [A-Za-z0-9_.:-]", ErrInvalidInput, e.Type, maxEventTypeLen)
	}
	if e.At.IsZero() {
		return nil, "", nil, at, fmt.Errorf("%w: event %q has no time", ErrInvalidInput, e.Type)
	}
	if y := e.At.UTC().Year(); y < 1 || y > 9999 {
		return nil, "", nil, at, fmt.Errorf("%w: event %q: year %d outside 1..9999", ErrInvalidInput, e.Type, y)
	}
	data = []byte("null")
	if isCanonical(e.Data) {
		data = bytes.Clone(e.Data)
	} else if e.Data != nil {
		if data, err = canonicalJSON(e.Data); err != nil {
			return nil, "", nil, at, fmt.Errorf("%w: event %q data: %v", ErrInvalidInput, e.Type, err)
		}
	}
	// The time as stored, read back: RFC 3339 keeps nanoseconds but not
	// the monotonic reading or the zone.
	stamp := formatAt(e.At)
	at, _ = time.Parse(time.RFC3339Nano, stamp)
	body := eventBody(stamp, begin, data, prevHash, seq, e.Type)
	hash = hashBody(body)
	return withHash(body, hash), hash, data, at.UTC(), nil
}

// wireEvent is the stored line as encoding/json sees it.
type wireEvent struct {
	At       string          `json:"at"`
	Begin    bool            `json:"begin"`
	Data     json.RawMessage `json:"data"`
	Hash     string          `json:"hash"`
	PrevHash string          `json:"prevHash"`
	Seq      int64           `json:"seq"`
	Type     string          `json:"type"`
}

// decodeEvent parses a stored line (without its newline) and checks it
// completely: it must be exactly the canonical line its fields encode to,
// and its hash must be the hash of its body. Any changed byte fails one of
// the two. The error text says which check failed. Data aliases line.
//
// A line [checkLineFast] is sure of costs one allocation (the two hashes);
// any other is decided, and its error written, by [decodeEventRebuilt].
func decodeEvent(line []byte) (Event, error) {
	var h bodyHasher
	p, ok := checkLineFast(line, &h)
	if !ok {
		return decodeEventRebuilt(line)
	}
	var both [2 * hashHexLen]byte
	hashes := string(append(append(both[:0], p.hash...), p.prevHash...))
	return Event{Seq: p.seq, Type: eventType(p.typ), At: p.at, Data: p.data[:len(p.data):len(p.data)],
		PrevHash: hashes[hashHexLen:], Hash: hashes[:hashHexLen], Begin: p.begin}, nil
}

// decodeEventRebuilt is [decodeEvent] the slow way, by rebuilding the line
// from its fields and comparing. It is the reference the fast check is
// held to, and writes the error texts.
func decodeEventRebuilt(line []byte) (Event, error) {
	w, fast := splitLine(line)
	fast = fast && isCanonical(w.Data)
	if !fast {
		w = wireEvent{}
		if err := json.Unmarshal(line, &w); err != nil {
			return Event{}, fmt.Errorf("not a valid event line: %v", err)
		}
	}
	if !isHashHex(w.Hash) || !isHashHex(w.PrevHash) {
		return Event{}, errors.New("hash or prevHash is not 64 lowercase hex digits")
	}
	if !validEventType(w.Type) {
		return Event{}, fmt.Errorf("bad event type %q", w.Type)
	}
	at, err := time.Parse(time.RFC3339Nano, w.At)
	if err != nil {
		return Event{}, fmt.Errorf("bad event time: %v", err)
	}
	if w.Data == nil {
		return Event{}, errors.New("event has no data member")
	}
	data := []byte(w.Data)
	if !fast {
		if data, err = canonicalJSON(w.Data); err != nil {
			return Event{}, fmt.Errorf("event data: %v", err)
		}
	}
	body := eventBody(formatAt(at), w.Begin, data, w.PrevHash, w.Seq, w.Type)
	if !bytes.Equal(withHash(body, w.Hash), line) {
		return Event{}, errors.New("event line is not in canonical form")
	}
	if got := hashBody(body); got != w.Hash {
		return Event{}, fmt.Errorf("hash mismatch: stored %s, computed %s", w.Hash, got)
	}
	return Event{Seq: w.Seq, Type: w.Type, At: at.UTC(), Data: data[:len(data):len(data)], PrevHash: w.PrevHash, Hash: w.Hash, Begin: w.Begin}, nil
}

func isHashHex(s string) bool {
	if len(s) != hashHexLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
