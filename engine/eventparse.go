package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"unicode/utf8"

	"github.com/stratum-go/stratum/expr"
)

// An audit reads every record of a run's log (docs/engine.md, "Cost").
// The store hands each back in its canonical form (keys sorted, no
// whitespace, strings escaped one way), so the few shapes the engine
// writes are taken apart here by position instead of through
// encoding/json, which was a large part of a long audit's time. Anything
// not exactly in the expected shape goes to encoding/json.

// splitEventData is the stepId and detail of an event's data in the
// store's form: {"detail":D,"stepId":"S"}, either member optional.
func splitEventData(data []byte) (stepID string, detail []byte, ok bool) {
	switch {
	case len(data) == 0 || bytes.Equal(data, []byte("{}")):
		return "", nil, true
	case bytes.HasPrefix(data, []byte(`{"stepId":"`)):
		id, ok := plainString(data[len(`{"stepId":`) : len(data)-1])
		return id, nil, ok && data[len(data)-1] == '}'
	case !bytes.HasPrefix(data, []byte(`{"detail":`)) || data[len(data)-1] != '}':
		return "", nil, false
	}
	body := data[len(`{"detail":`) : len(data)-1]
	if len(body) > 0 && body[len(body)-1] == '"' {
		// A stepId member last. An unescaped `,"stepId":"` cannot be
		// inside a string, and an object's last member ends with '}'.
		const member = `,"stepId":`
		i := bytes.LastIndex(body, []byte(member))
		if i < 0 {
			return "", nil, false
		}
		id, ok := plainString(body[i+len(member):])
		if !ok {
			return "", nil, false
		}
		stepID, body = id, body[:i]
	}
	// Another member between (sorted after detail) would be in body.
	return stepID, body, len(body) > 0 && valueEnd(body) == len(body)
}

// valueEnd is where the first JSON value of b (valid JSON, no
// whitespace) ends.
func valueEnd(b []byte) int {
	depth := 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
		case '{', '[':
			depth++
			continue
		case '}', ']':
			depth--
		case ',', ':':
			if depth == 0 {
				return i
			}
			continue
		default:
			if depth == 0 {
				for i+1 < len(b) && b[i+1] != ',' && b[i+1] != '}' && b[i+1] != ']' && b[i+1] != ':' {
					i++
				}
			}
		}
		if depth == 0 {
			return i + 1
		}
	}
	return len(b)
}

// plainString is the JSON string literal b (quotes included) when it has
// no escapes.
func plainString(b []byte) (string, bool) {
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return "", false
	}
	in := b[1 : len(b)-1]
	if bytes.IndexByte(in, '"') >= 0 || !plainText(in) {
		return "", false
	}
	return string(in), true
}

// plainText reports string content JSON writes as it is: valid UTF-8
// without backslashes or control characters.
func plainText(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c == '\\' {
			return false
		}
	}
	return utf8.Valid(b)
}

// eventData decodes an event's stepId and detail.
func eventData(data []byte) (stepID string, detail json.RawMessage, err error) {
	if id, d, ok := splitEventData(data); ok {
		return id, d, nil
	}
	var d struct {
		StepID string          `json:"stepId"`
		Detail json.RawMessage `json:"detail"`
	}
	err = json.Unmarshal(data, &d)
	return d.StepID, d.Detail, err
}

// recordJSON is the payload of an internal record's detail
// ({"json":"…"}), unescaped.
func recordJSON(detail []byte) ([]byte, bool) {
	if !bytes.HasPrefix(detail, []byte(`{"json":"`)) || !bytes.HasSuffix(detail, []byte(`"}`)) {
		return nil, false
	}
	lit := detail[len(`{"json":`) : len(detail)-1]
	// The spec snapshot also holds its digest (hex: no escapes).
	if i := bytes.LastIndex(lit, []byte(`,"revisionDigest":"`)); i >= 0 {
		if _, ok := plainString(lit[i+len(`,"revisionDigest":`):]); ok {
			lit = lit[:i]
		}
	}
	return expr.UnquoteJSONBytes(lit)
}

// loggedResultOf is detail.result of an accepted result's detail
// ({"attempt":N,"result":R}).
func loggedResultOf(detail []byte) ([]byte, bool) {
	const head, mid = `{"attempt":`, `,"result":`
	if !bytes.HasPrefix(detail, []byte(head)) || detail[len(detail)-1] != '}' {
		return nil, false
	}
	rest := detail[len(head):]
	n := 0
	for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
		n++
	}
	if n == 0 || !bytes.HasPrefix(rest[n:], []byte(mid)) {
		return nil, false
	}
	r := rest[n+len(mid) : len(rest)-1]
	// A member after result (sorted after it) would be in r.
	return r, len(r) > 0 && valueEnd(r) == len(r)
}

// blobPayload is the JSON text an internal record's data holds
// ({"detail":{"json":"…"}}).
func blobPayload(data []byte) ([]byte, error) {
	if _, detail, ok := splitEventData(data); ok {
		if p, ok := recordJSON(detail); ok {
			return p, nil
		}
	}
	var d struct {
		Detail struct {
			JSON *string `json:"json"`
		} `json:"detail"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, err
	}
	if d.Detail.JSON == nil {
		return nil, errors.New("no JSON payload")
	}
	return []byte(*d.Detail.JSON), nil
}

// parseColdRefs reads a cold index chunk as the engine writes it:
// [{"id":"…","seq":N,"status":"…"},…], status optional, no escapes.
func parseColdRefs(b []byte) ([]coldRef, bool) {
	if len(b) < 2 || b[0] != '[' || b[len(b)-1] != ']' {
		return nil, false
	}
	refs := make([]coldRef, 0, coldChunkSize)
	rest := b[1 : len(b)-1]
	str := func(prefix string) (string, bool) {
		if !bytes.HasPrefix(rest, []byte(prefix)) {
			return "", false
		}
		rest = rest[len(prefix):]
		i := bytes.IndexByte(rest, '"')
		if i < 0 || !plainText(rest[:i]) {
			return "", false
		}
		s := string(rest[:i])
		rest = rest[i+1:]
		return s, true
	}
	for len(rest) > 0 {
		id, ok := str(`{"id":"`)
		if !ok || !bytes.HasPrefix(rest, []byte(`,"seq":`)) {
			return nil, false
		}
		rest = rest[len(`,"seq":`):]
		n := 0
		for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
			n++
		}
		seq, err := strconv.ParseInt(string(rest[:n]), 10, 64)
		if err != nil || (n > 1 && rest[0] == '0') {
			return nil, false
		}
		rest = rest[n:]
		r := coldRef{ID: id, Seq: seq}
		if bytes.HasPrefix(rest, []byte(`,"status":"`)) {
			rest = rest[1:]
			status, ok := str(`"status":"`)
			if !ok || status == "" {
				return nil, false
			}
			r.Status = StepStatus(status)
		}
		if len(rest) == 0 || rest[0] != '}' {
			return nil, false
		}
		rest = rest[1:]
		if len(rest) > 0 {
			if rest[0] != ',' || len(rest) == 1 {
				return nil, false
			}
			rest = rest[1:]
		}
		refs = append(refs, r)
	}
	return refs, true
}
