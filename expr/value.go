package expr

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
)

// Object is a JSON object with JavaScript's property order, which str(),
// rendering and every JSON output of the reference observe: keys that are
// canonical array indices ("0", "1", ... "4294967294") come first in
// ascending numeric order, then all other keys in the order they were first
// set. Setting an existing key replaces its value in place. The zero value
// is empty and ready to use.
type Object struct {
	keys   []string // index keys (ascending), then other keys (first-set order)
	vals   []any    // vals[i] belongs to keys[i]
	nIndex int      // how many leading keys are array indices
	// pos maps keys to positions once the object is too large for a
	// linear scan to be the faster lookup.
	pos map[string]int
}

// smallObject is the size up to which lookups scan the keys instead of
// hashing: objects in ensures are mostly a handful of fields.
const smallObject = 8

// NewObject returns an empty object with room for n keys.
func NewObject(n int) *Object {
	return &Object{keys: make([]string, 0, n), vals: make([]any, 0, n)}
}

// Len reports the number of keys.
func (o *Object) Len() int {
	if o == nil {
		return 0
	}
	return len(o.keys)
}

// Keys returns the keys in property order. The slice must not be modified.
func (o *Object) Keys() []string {
	if o == nil {
		return nil
	}
	return o.keys
}

func (o *Object) find(key string) int {
	if o.pos != nil {
		if i, ok := o.pos[key]; ok {
			return i
		}
		return -1
	}
	for i, k := range o.keys {
		if k == key {
			return i
		}
	}
	return -1
}

// Get returns the value stored under key.
func (o *Object) Get(key string) (any, bool) {
	if o == nil {
		return nil, false
	}
	if i := o.find(key); i >= 0 {
		return o.vals[i], true
	}
	return nil, false
}

// Set stores v under key, adding the key in property order if it is new.
func (o *Object) Set(key string, v any) {
	if i := o.find(key); i >= 0 {
		o.vals[i] = v
		return
	}
	at := len(o.keys)
	if idx, ok := arrayIndex(key); ok {
		// Among the index keys, keeping them ascending.
		at = sort.Search(o.nIndex, func(i int) bool {
			j, _ := arrayIndex(o.keys[i])
			return j > idx
		})
		o.nIndex++
	}
	o.keys = slices.Insert(o.keys, at, key)
	o.vals = slices.Insert(o.vals, at, v)
	switch {
	case o.pos != nil && at == len(o.keys)-1:
		o.pos[key] = at
	case o.pos != nil || len(o.keys) > smallObject:
		o.pos = make(map[string]int, len(o.keys))
		for i, k := range o.keys {
			o.pos[k] = i
		}
	}
}

// arrayIndex reports whether key is a canonical array index as JavaScript
// defines it (an integer 0..2^32-2 written without sign or leading zeros),
// and its value.
func arrayIndex(key string) (uint64, bool) {
	if len(key) == 0 || len(key) > 10 || (key[0] == '0' && len(key) > 1) {
		return 0, false
	}
	var n uint64
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	return n, n <= 4294967294
}

// objectFromMembers builds an object from distinct keys in first-set order
// and their values, in O(n log n): index keys sorted numerically first, then
// the others in the order given.
func objectFromMembers(keys []string, vals []any) *Object {
	type indexKey struct {
		n   uint64
		pos int
	}
	var index []indexKey
	for i, k := range keys {
		if n, ok := arrayIndex(k); ok {
			index = append(index, indexKey{n, i})
		}
	}
	o := &Object{keys: make([]string, 0, len(keys)), vals: make([]any, 0, len(keys)), nIndex: len(index)}
	if len(index) == 0 {
		o.keys = append(o.keys, keys...)
		o.vals = append(o.vals, vals...)
	} else {
		slices.SortFunc(index, func(a, b indexKey) int { return cmp.Compare(a.n, b.n) })
		for _, e := range index {
			o.keys = append(o.keys, keys[e.pos])
			o.vals = append(o.vals, vals[e.pos])
		}
		for i, k := range keys {
			if _, ok := arrayIndex(k); !ok {
				o.keys = append(o.keys, k)
				o.vals = append(o.vals, vals[i])
			}
		}
	}
	if len(o.keys) > smallObject {
		o.pos = make(map[string]int, len(o.keys))
		for i, k := range o.keys {
			o.pos[k] = i
		}
	}
	return o
}

// MarshalJSON writes the object as EncodeJSON does.
func (o *Object) MarshalJSON() ([]byte, error) {
	return EncodeJSON(o)
}

// EncodeJSON writes v as compact JSON exactly as JavaScript's JSON.stringify
// does: objects in property order, numbers as FormatNumber writes them, and
// strings escaping only '"', '\\' and control characters (no HTML escaping,
// U+2028 and U+2029 raw). It fails on a value outside the model or a
// non-finite number.
func EncodeJSON(v any) ([]byte, error) {
	return appendJSON(nil, v)
}

func appendJSON(b []byte, v any) ([]byte, error) {
	var err error
	switch v := v.(type) {
	case nil:
		b = append(b, "null"...)
	case bool:
		if v {
			b = append(b, "true"...)
		} else {
			b = append(b, "false"...)
		}
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("encode json: non-finite number %v", v)
		}
		b = appendNumber(b, v)
	case string:
		b = appendQuoted(b, v)
	case []any:
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendJSON(b, e); err != nil {
				return nil, err
			}
		}
		b = append(b, ']')
	case *Object:
		b = append(b, '{')
		for i, k := range v.Keys() {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendQuoted(b, k)
			b = append(b, ':')
			if b, err = appendJSON(b, v.vals[i]); err != nil {
				return nil, err
			}
		}
		b = append(b, '}')
	default:
		return nil, fmt.Errorf("encode json: %T is not a JSON value", v)
	}
	return b, nil
}

// ErrJSONTooDeep is returned by DecodeJSON for input nested deeper than
// MaxJSONDepth.
var ErrJSONTooDeep = errors.New("json nested too deeply")

// MaxJSONDepth bounds the nesting of decoded JSON so that hostile input
// cannot exhaust the stack of later recursive walks. It matches
// encoding/json's own limit: a binding may legitimately be deeper than the
// 128 levels an expression can read (the depth check happens only when the
// binding is used; docs/expressions.md, "Limits"), so decoding must not refuse
// it first.
const MaxJSONDepth = 10000

// DecodeJSON decodes one JSON document into the value model: numbers become
// float64, objects *Object (property order as JSON.parse gives it; a
// repeated key keeps its first position and its last value), arrays []any.
// Invalid UTF-8 and lone surrogate escapes in strings become U+FFFD.
// Trailing data is an error.
//
// A hand scanner over the bytes ([scanJSON]) decodes every valid document;
// input it refuses is decoded again by encoding/json ([decodeJSONTokens]),
// whose error is the one returned, so that failure texts read as they always
// have. FuzzDecodeJSONFast holds the two to the same values and the same
// refusals.
func DecodeJSON(data []byte) (any, error) {
	if v, err := scanJSON(data); err == nil {
		return v, nil
	}
	return decodeJSONTokens(data)
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
