package mcp

import (
	"encoding/json"
	"fmt"
)

// specSource turns a spec argument into the source text the validator
// reads. YAML text is used as it is; a JSON object is used as the JSON
// text the client sent (JSON is YAML), so the key order of the document
// is kept and the positions of diagnostics point into that text.
func specSource(raw json.RawMessage) ([]byte, error) {
	if len(raw) == 0 {
		return nil, argErrorf("spec is missing: pass the spec as YAML text (a string) or as a JSON object")
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, argErrorf("spec is not a valid JSON string (%v): pass the YAML text as one JSON string", err)
		}
		return []byte(s), nil
	case '{':
		return append([]byte(nil), raw...), nil
	}
	return nil, argErrorf("spec must be YAML text (a string) or a JSON object, not %s", jsonKind(raw))
}

// jsonKind names the kind of a JSON value for an error message.
func jsonKind(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case '{':
		return "an object"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return fmt.Sprintf("a number (%.20s)", raw)
}
