package expr

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
)

// Object is a JSON object that remembers the order in which its keys were
// first set. Setting an existing key replaces its value in place, as
// JavaScript objects (and so the reference) do. The zero value is empty and
// ready to use.
type Object struct {
	keys []string
	vals map[string]any
}

// NewObject returns an empty object with room for n keys.
func NewObject(n int) *Object {
	return &Object{keys: make([]string, 0, n), vals: make(map[string]any, n)}
}

// Len reports the number of keys.
func (o *Object) Len() int {
	if o == nil {
		return 0
	}
	return len(o.keys)
}

// Keys returns the keys in insertion order. The slice must not be modified.
func (o *Object) Keys() []string {
	if o == nil {
		return nil
	}
	return o.keys
}

// Get returns the value stored under key.
func (o *Object) Get(key string) (any, bool) {
	if o == nil {
		return nil, false
	}
	v, ok := o.vals[key]
	return v, ok
}

// Set stores v under key, appending the key if it is new.
func (o *Object) Set(key string, v any) {
	if o.vals == nil {
		o.vals = make(map[string]any)
	}
	if _, ok := o.vals[key]; !ok {
		o.keys = append(o.keys, key)
	}
	o.vals[key] = v
}

// MarshalJSON writes the object compactly with its keys in order.
func (o *Object) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	if err := writeJSON(&buf, o); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// EncodeJSON writes v as compact JSON, objects in key order. It fails on a
// value outside the model or a non-finite number.
func EncodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	if err := writeJSON(&buf, v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func writeJSON(buf *bytes.Buffer, v any) error {
	switch v := v.(type) {
	case nil:
		buf.WriteString("null")
	case bool:
		if v {
			buf.WriteString("true")
		} else {
			buf.WriteString("false")
		}
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("encode json: non-finite number %v", v)
		}
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		buf.Write(b)
	case string:
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		buf.Write(b)
	case []any:
		buf.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeJSON(buf, e); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case *Object:
		buf.WriteByte('{')
		for i, k := range v.Keys() {
			if i > 0 {
				buf.WriteByte(',')
			}
			b, err := json.Marshal(k)
			if err != nil {
				return err
			}
			buf.Write(b)
			buf.WriteByte(':')
			if err := writeJSON(buf, v.vals[k]); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	default:
		return fmt.Errorf("encode json: %T is not a JSON value", v)
	}
	return nil
}

// ErrJSONTooDeep is returned by DecodeJSON for input nested deeper than
// MaxJSONDepth.
var ErrJSONTooDeep = errors.New("json nested too deeply")

// MaxJSONDepth bounds the nesting of decoded JSON so that hostile input
// cannot exhaust the stack of later recursive walks.
const MaxJSONDepth = 512

// DecodeJSON decodes one JSON document into the value model: numbers become
// float64, objects *Object (key order kept; a repeated key keeps its first
// position and its last value), arrays []any. Trailing data is an error.
func DecodeJSON(data []byte) (any, error) {
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
			obj := NewObject(4)
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
				obj.Set(key, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, fmt.Errorf("decode json: %w", err)
			}
			return obj, nil
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

// FromGo converts a value decoded by encoding/json into map[string]any (or
// built by hand from ints, maps and slices) into the value model. Map keys are
// sorted, since a Go map has no order to keep. It fails on types JSON cannot
// represent.
func FromGo(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("convert %T: %w", v, err)
	}
	return DecodeJSON(b)
}
