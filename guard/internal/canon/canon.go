package canon

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxSafeInteger is the largest integer canonical JSON accepts (2^53-1):
// beyond it a JavaScript or float64 reader would silently round.
const MaxSafeInteger = 1<<53 - 1

// maxDepth bounds nesting so that a cyclic or absurdly deep value fails
// instead of exhausting the stack.
const maxDepth = 512

// ErrNotCanonical is wrapped by every error about a value that has no
// canonical form (a fraction, a huge number, invalid UTF-8, a type outside
// the JSON model, a cycle).
var ErrNotCanonical = errors.New("value has no canonical JSON form")

// Marshal returns the compact canonical JSON of v.
//
// v may be built from nil, bool, string, any Go integer or float type (the
// value must be an integer within ±MaxSafeInteger), json.Number, maps with
// string keys and slices or arrays of any of these. Structs are not
// accepted: build maps so that the hashed shape is explicit.
func Marshal(v any) ([]byte, error) {
	e := encoder{}
	if err := e.value(reflect.ValueOf(v), 0, 0); err != nil {
		return nil, err
	}
	return e.buf.Bytes(), nil
}

// MarshalIndent returns the "pretty canonical" form used for registry.json:
// the canonical text indented by two spaces per level, ": " between a key
// and its value, empty containers kept as {} and [], no trailing newline
// (Python's json.dumps(v, sort_keys=True, indent=2)).
func MarshalIndent(v any) ([]byte, error) {
	e := encoder{pretty: true}
	if err := e.value(reflect.ValueOf(v), 0, 0); err != nil {
		return nil, err
	}
	return e.buf.Bytes(), nil
}

// Decode parses JSON text into the value model Marshal accepts
// (map[string]any, []any, float64, string, bool, nil). Trailing data after
// the value is an error.
func Decode(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("decode json: %w", err)
	}
	if len(bytes.TrimSpace(data[dec.InputOffset():])) != 0 {
		return nil, errors.New("decode json: trailing data after the value")
	}
	return v, nil
}

type encoder struct {
	buf    bytes.Buffer
	pretty bool
}

func notCanonical(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrNotCanonical, fmt.Sprintf(format, args...))
}

var numberType = reflect.TypeFor[json.Number]()

// value writes v. level is the container nesting (for indentation); hops
// counts every step taken, pointer and interface hops included, so that a
// cycle through them is bounded too.
func (e *encoder) value(v reflect.Value, level, hops int) error {
	if hops > maxDepth {
		return notCanonical("nested deeper than %d levels (or cyclic)", maxDepth)
	}
	if !v.IsValid() {
		e.buf.WriteString("null")
		return nil
	}
	if v.Type() == numberType {
		return e.number(v.String())
	}
	switch v.Kind() {
	case reflect.Interface, reflect.Pointer:
		if v.IsNil() {
			e.buf.WriteString("null")
			return nil
		}
		return e.value(v.Elem(), level, hops+1)
	case reflect.Bool:
		if v.Bool() {
			e.buf.WriteString("true")
		} else {
			e.buf.WriteString("false")
		}
		return nil
	case reflect.String:
		return e.str(v.String())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return e.integer(v.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		u := v.Uint()
		if u > MaxSafeInteger {
			return notCanonical("integer %d is outside ±(2^53-1)", u)
		}
		return e.integer(int64(u))
	case reflect.Float32, reflect.Float64:
		return e.float(v.Float())
	case reflect.Map:
		return e.object(v, level, hops)
	case reflect.Slice:
		if v.IsNil() {
			e.buf.WriteString("null")
			return nil
		}
		return e.array(v, level, hops)
	case reflect.Array:
		return e.array(v, level, hops)
	}
	return notCanonical("unsupported type %s", v.Type())
}

func (e *encoder) integer(i int64) error {
	if i > MaxSafeInteger || i < -MaxSafeInteger {
		return notCanonical("integer %d is outside ±(2^53-1)", i)
	}
	e.buf.WriteString(strconv.FormatInt(i, 10))
	return nil
}

func (e *encoder) float(f float64) error {
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0):
		return notCanonical("number %v is not finite", f)
	case f != math.Trunc(f):
		return notCanonical("number %v is not an integer", f)
	case math.Abs(f) > MaxSafeInteger:
		return notCanonical("number %v is outside ±(2^53-1)", f)
	}
	return e.integer(int64(f)) // -0 converts to 0
}

// number handles json.Number text the way a JSON reader that yields
// float64 (JavaScript, encoding/json into any) would see it.
func (e *encoder) number(s string) error {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return notCanonical("number %q: %v", s, err)
	}
	return e.float(f)
}

func (e *encoder) newline(level int) {
	if !e.pretty {
		return
	}
	e.buf.WriteByte('\n')
	for range level {
		e.buf.WriteString("  ")
	}
}

func (e *encoder) object(v reflect.Value, level, hops int) error {
	if v.Type().Key().Kind() != reflect.String {
		return notCanonical("map key type %s is not string", v.Type().Key())
	}
	if v.IsNil() {
		e.buf.WriteString("null")
		return nil
	}
	keys := make([]string, 0, v.Len())
	for _, k := range v.MapKeys() {
		keys = append(keys, k.String())
	}
	// Byte order of UTF-8 equals code point order, Python's sort order.
	slices.Sort(keys)
	e.buf.WriteByte('{')
	if len(keys) == 0 {
		e.buf.WriteByte('}')
		return nil
	}
	for i, k := range keys {
		if i > 0 {
			e.buf.WriteByte(',')
		}
		e.newline(level + 1)
		if err := e.str(k); err != nil {
			return err
		}
		e.buf.WriteByte(':')
		if e.pretty {
			e.buf.WriteByte(' ')
		}
		kv := reflect.ValueOf(k).Convert(v.Type().Key())
		if err := e.value(v.MapIndex(kv), level+1, hops+1); err != nil {
			return err
		}
	}
	e.newline(level)
	e.buf.WriteByte('}')
	return nil
}

func (e *encoder) array(v reflect.Value, level, hops int) error {
	if v.Type().Elem().Kind() == reflect.Uint8 {
		// A []byte would be ambiguous (text? base64?): refuse it.
		return notCanonical("byte slices have no canonical form")
	}
	e.buf.WriteByte('[')
	n := v.Len()
	if n == 0 {
		e.buf.WriteByte(']')
		return nil
	}
	for i := range n {
		if i > 0 {
			e.buf.WriteByte(',')
		}
		e.newline(level + 1)
		if err := e.value(v.Index(i), level+1, hops+1); err != nil {
			return err
		}
	}
	e.newline(level)
	e.buf.WriteByte(']')
	return nil
}

const hexDigits = "0123456789abcdef"

func (e *encoder) unit(u uint16) {
	e.buf.WriteString(`\u`)
	e.buf.WriteByte(hexDigits[u>>12&0xf])
	e.buf.WriteByte(hexDigits[u>>8&0xf])
	e.buf.WriteByte(hexDigits[u>>4&0xf])
	e.buf.WriteByte(hexDigits[u&0xf])
}

func (e *encoder) str(s string) error {
	e.buf.WriteByte('"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"':
				e.buf.WriteString(`\"`)
			case c == '\\':
				e.buf.WriteString(`\\`)
			case c == '\b':
				e.buf.WriteString(`\b`)
			case c == '\t':
				e.buf.WriteString(`\t`)
			case c == '\n':
				e.buf.WriteString(`\n`)
			case c == '\f':
				e.buf.WriteString(`\f`)
			case c == '\r':
				e.buf.WriteString(`\r`)
			case c < 0x20 || c == 0x7f:
				e.unit(uint16(c))
			default:
				e.buf.WriteByte(c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return notCanonical("string is not valid UTF-8 at byte %d", i)
		}
		if r >= 0x10000 {
			hi, lo := utf16.EncodeRune(r)
			e.unit(uint16(hi))
			e.unit(uint16(lo))
		} else {
			e.unit(uint16(r))
		}
		i += size
	}
	e.buf.WriteByte('"')
	return nil
}
