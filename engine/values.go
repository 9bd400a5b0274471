package engine

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/stratum-go/stratum/expr"
)

// Value is an optional JSON value of the expr value model (nil, bool,
// float64, string, []any, *expr.Object). Present tells JSON null (Present,
// Data nil) from absence. It marshals in the value's own key order and is
// omitted by `omitzero` when absent.
type Value struct {
	Data    any
	Present bool
}

// Some returns a present Value.
func Some(v any) Value { return Value{Data: v, Present: true} }

// IsZero reports absence (for omitzero).
func (v Value) IsZero() bool { return !v.Present }

// MarshalJSON writes the value in its key order.
func (v Value) MarshalJSON() ([]byte, error) { return expr.EncodeJSON(v.Data) }

// UnmarshalJSON reads a value into the expr model, keeping key order.
func (v *Value) UnmarshalJSON(b []byte) error {
	d, err := expr.DecodeJSON(b)
	if err != nil {
		return err
	}
	*v = Value{Data: d, Present: true}
	return nil
}

// cleanText is s with every byte that is not part of valid UTF-8 replaced
// by U+FFFD, exactly as encoding/json writes it: text held in memory must
// equal what a fresh process reads back from the store.
func cleanText(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b.WriteString("\uFFFD")
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// maxValueDepth bounds the nesting of every value a caller hands the
// engine (inputs, outputs, usage, telemetry). A value is stored inside the
// run's state document a few levels down, and the document must stay
// within what a JSON reader accepts (encoding/json stops at 10000 levels);
// no contract or expression reads anywhere near this deep.
const maxValueDepth = 1000

// toModel converts a caller's value (already in the expr model, built from
// Go maps/slices/numbers, or raw JSON) into a copy in the expr model.
// Values nested deeper than maxValueDepth are refused.
func toModel(v any) (any, error) {
	m, err := convertModel(v)
	if err != nil {
		return nil, err
	}
	if depthExceeds(m, maxValueDepth) {
		return nil, fmt.Errorf("the value is nested deeper than %d levels", maxValueDepth)
	}
	return m, nil
}

// depthExceeds reports whether v nests arrays and objects more than limit
// levels deep (a scalar has depth 0).
func depthExceeds(v any, limit int) bool {
	switch x := v.(type) {
	case []any:
		if limit == 0 {
			return true
		}
		for _, e := range x {
			if depthExceeds(e, limit-1) {
				return true
			}
		}
	case *expr.Object:
		if limit == 0 {
			return true
		}
		for _, k := range x.Keys() {
			e, _ := x.Get(k)
			if depthExceeds(e, limit-1) {
				return true
			}
		}
	}
	return false
}

func convertModel(v any) (any, error) {
	switch x := v.(type) {
	case json.RawMessage:
		if len(x) == 0 {
			return nil, nil // an unset raw value is JSON null
		}
		return expr.DecodeJSON(x)
	case []byte:
		return expr.DecodeJSON(x)
	case string:
		return cleanText(x), nil
	case nil, bool, float64:
		if f, ok := x.(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
			return nil, fmt.Errorf("non-finite number %v", f)
		}
		return x, nil
	}
	if isModel(v, 0) {
		return copyModel(v), nil // the caller keeps its value; the run keeps its own
	}
	return expr.FromGo(v)
}

// copyModel deep-copies a value of the expr model.
func copyModel(v any) any {
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = copyModel(e)
		}
		return out
	case *expr.Object:
		o := expr.NewObject(x.Len())
		for _, k := range x.Keys() {
			e, _ := x.Get(k)
			o.Set(k, copyModel(e))
		}
		return o
	}
	return v
}

// isModel reports whether v is entirely made of expr model values.
func isModel(v any, depth int) bool {
	if depth > expr.MaxJSONDepth {
		return false
	}
	switch x := v.(type) {
	case nil, bool:
		return true
	case string:
		return utf8.ValidString(x) // else re-encoded, as the store will
	case float64:
		return !math.IsNaN(x) && !math.IsInf(x, 0)
	case []any:
		for _, e := range x {
			if !isModel(e, depth+1) {
				return false
			}
		}
		return true
	case *expr.Object:
		for _, k := range x.Keys() {
			e, _ := x.Get(k)
			if !utf8.ValidString(k) || !isModel(e, depth+1) {
				return false
			}
		}
		return true
	}
	return false
}

// canonicalJSON writes v with object keys sorted at every level, no
// whitespace (the form the revision digest hashes).
func canonicalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	if err := appendCanonical(&buf, v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func appendCanonical(buf *bytes.Buffer, v any) error {
	switch x := v.(type) {
	case *expr.Object:
		keys := slices.Clone(x.Keys())
		slices.Sort(keys)
		buf.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			kb, _ := expr.EncodeJSON(k)
			buf.Write(kb)
			buf.WriteByte(':')
			e, _ := x.Get(k)
			if err := appendCanonical(buf, e); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
		return nil
	case []any:
		buf.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := appendCanonical(buf, e); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
		return nil
	}
	b, err := expr.EncodeJSON(v)
	if err != nil {
		return err
	}
	buf.Write(b)
	return nil
}

// digestOf is the lowercase hex SHA-256 of v's canonical JSON.
func digestOf(v any) (string, error) {
	b, err := canonicalJSON(v)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// compactJSON is the compact JSON text of v (for messages).
func compactJSON(v any) string {
	b, err := expr.EncodeJSON(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	return string(b)
}

// quote is a string as a JSON string literal, as JSON.stringify writes it
// (failure reasons quote expressions so: docs/engine.md, "Step results and
// failure context").
func quote(s string) string {
	b, err := expr.EncodeJSON(cleanText(s))
	if err != nil {
		return strconv.Quote(s) // unreachable: a valid string always encodes
	}
	return string(b)
}

// objectOf builds an ordered object from key/value pairs.
func objectOf(kv ...any) *expr.Object {
	o := expr.NewObject(len(kv) / 2)
	for i := 0; i+1 < len(kv); i += 2 {
		o.Set(kv[i].(string), kv[i+1])
	}
	return o
}
