package expr

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
)

// decodeJSONTokens is DecodeJSON built on encoding/json's tokens: slow
// (about a tenth of an audit's CPU went here), but its refusals carry
// encoding/json's messages, which callers show in failure texts, and it is
// the reference the fast scanner is fuzzed against.
func decodeJSONTokens(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("decode json: unexpected data after the value")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder, depth int) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("decode json: %w", err)
	}
	switch t := tok.(type) {
	case json.Delim:
		if depth >= MaxJSONDepth {
			return nil, ErrJSONTooDeep
		}
		switch t {
		case '{':
			// The members are collected first and ordered once at the
			// end: Set, which keeps index keys sorted as they arrive, is
			// quadratic on a large object whose index keys come in
			// descending order or after named keys.
			var keys []string
			var vals []any
			var seen map[string]int // built once the object outgrows a scan
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, fmt.Errorf("decode json: %w", err)
				}
				key, _ := kt.(string)
				v, err := decodeValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				at := -1
				if seen != nil {
					if i, ok := seen[key]; ok {
						at = i
					}
				} else {
					at = slices.Index(keys, key)
				}
				if at >= 0 {
					vals[at] = v // a repeated key keeps its first position
					continue
				}
				keys = append(keys, key)
				vals = append(vals, v)
				if seen != nil {
					seen[key] = len(keys) - 1
				} else if len(keys) > smallObject {
					seen = make(map[string]int, 2*len(keys))
					for i, k := range keys {
						seen[k] = i
					}
				}
			}
			if _, err := dec.Token(); err != nil {
				return nil, fmt.Errorf("decode json: %w", err)
			}
			return objectFromMembers(keys, vals), nil
		case '[':
			arr := []any{}
			for dec.More() {
				v, err := decodeValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, fmt.Errorf("decode json: %w", err)
			}
			return arr, nil
		}
		return nil, fmt.Errorf("decode json: unexpected %v", t)
	case json.Number:
		f, err := t.Float64()
		if err != nil && !math.IsInf(f, 0) {
			return nil, fmt.Errorf("decode json: number %s: %w", t, err)
		}
		// JSON.parse turns an overflowing literal into ±Infinity, which
		// JSON cannot carry back out; refuse it rather than guess.
		if math.IsInf(f, 0) {
			return nil, fmt.Errorf("decode json: number %s is out of range", t)
		}
		return f, nil
	default:
		return t, nil // nil, bool, string
	}
}
