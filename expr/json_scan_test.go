package expr

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
)

// identical reports whether a and b are the same value of the model down to
// the bits: float64 bits (so -0 is not 0), *Object key order, the count of
// index keys and whether the position index exists, non-nil empty
// containers. It returns where they differ.
func identical(a, b any, path string) error {
	switch x := a.(type) {
	case nil, bool, string:
		if a != b {
			return fmt.Errorf("%s: %#v != %#v", path, a, b)
		}
	case float64:
		y, ok := b.(float64)
		if !ok || math.Float64bits(x) != math.Float64bits(y) {
			return fmt.Errorf("%s: %#v != %#v", path, a, b)
		}
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) || (x == nil) != (y == nil) {
			return fmt.Errorf("%s: %#v != %#v", path, a, b)
		}
		for i := range x {
			if err := identical(x[i], y[i], fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case *Object:
		y, ok := b.(*Object)
		if !ok || x.Len() != y.Len() || x.nIndex != y.nIndex || (x.pos == nil) != (y.pos == nil) || (x.keys == nil) != (y.keys == nil) {
			return fmt.Errorf("%s: %#v != %#v", path, a, b)
		}
		for i, k := range x.keys {
			if y.keys[i] != k {
				return fmt.Errorf("%s: key %d is %q, not %q", path, i, k, y.keys[i])
			}
			if err := identical(x.vals[i], y.vals[i], path+"."+k); err != nil {
				return err
			}
			if x.pos != nil && (x.pos[k] != i || y.pos[k] != i) {
				return fmt.Errorf("%s: position index of %q", path, k)
			}
		}
	default:
		return fmt.Errorf("%s: %T is not a model value", path, a)
	}
	return nil
}

// checkAgainstReference decodes data with the scanner, the token decoder
// and DecodeJSON, and fails unless all three agree: the same value, the same
// refusal (ErrJSONTooDeep for the same inputs), and DecodeJSON's refusal
// carrying the token decoder's message.
func checkAgainstReference(t *testing.T, data []byte) (any, error) {
	t.Helper()
	in := clip(data)
	fast, ferr := scanJSON(data)
	ref, rerr := decodeJSONTokens(data)
	got, err := DecodeJSON(data)
	if (ferr == nil) != (rerr == nil) {
		t.Fatalf("%s: scanner says %v, encoding/json says %v", in, ferr, rerr)
	}
	if errors.Is(ferr, ErrJSONTooDeep) != errors.Is(rerr, ErrJSONTooDeep) {
		t.Fatalf("%s: scanner says %v, encoding/json says %v", in, ferr, rerr)
	}
	if rerr != nil {
		if err == nil || err.Error() != rerr.Error() || errors.Is(err, ErrJSONTooDeep) != errors.Is(rerr, ErrJSONTooDeep) {
			t.Fatalf("%s: DecodeJSON says %v, encoding/json says %v", in, err, rerr)
		}
		return nil, err
	}
	if d := identical(fast, ref, "$"); d != nil {
		t.Fatalf("%s: scanner and encoding/json differ at %v", in, d)
	}
	if err != nil {
		t.Fatalf("%s: DecodeJSON failed: %v", in, err)
	}
	if d := identical(got, ref, "$"); d != nil {
		t.Fatalf("%s: DecodeJSON and encoding/json differ at %v", in, d)
	}
	return got, nil
}

// clip quotes data for a failure message, cut to its first 200 bytes.
func clip(data []byte) string {
	if len(data) > 200 {
		return fmt.Sprintf("%q... (%d bytes)", data[:200], len(data))
	}
	return fmt.Sprintf("%q", data)
}

// obj builds an expected object from key, value pairs by Set, which orders
// keys as JavaScript does.
func obj(kv ...any) *Object {
	o := NewObject(0)
	for i := 0; i < len(kv); i += 2 {
		o.Set(kv[i].(string), kv[i+1])
	}
	return o
}

// sameValue compares a decoded value with an expectation built by hand:
// like identical, but blind to how the object was built.
func sameValue(a, b any) bool {
	switch x := a.(type) {
	case float64:
		y, ok := b.(float64)
		return ok && math.Float64bits(x) == math.Float64bits(y)
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) || x == nil || y == nil {
			return false
		}
		for i := range x {
			if !sameValue(x[i], y[i]) {
				return false
			}
		}
		return true
	case *Object:
		y, ok := b.(*Object)
		if !ok || x.Len() != y.Len() {
			return false
		}
		for i, k := range x.Keys() {
			if y.Keys()[i] != k || !sameValue(x.vals[i], y.vals[i]) {
				return false
			}
		}
		return true
	}
	return a == b
}

var negZero = math.Copysign(0, -1)

const bad = "<error>"

var decodeCases = []struct {
	name string
	in   string
	want any // bad: refused
}{
	// literals and whitespace
	{"true", `true`, true},
	{"false", `false`, false},
	{"null", `null`, nil},
	{"literals in array", `[true,false,null]`, []any{true, false, nil}},
	{"truncated literal", `tru`, bad},
	{"truncated null", `nul`, bad},
	{"capitalised literal", `True`, bad},
	{"literal run on", `truex`, bad},
	{"literal doubled letter", `nulll`, bad},
	{"all four spaces", " \t\r\n 1 \n\t", 1.0},
	{"spaces inside containers", "{ \"a\" :\n[ 1 ,\t2 ] }", obj("a", []any{1.0, 2.0})},
	{"form feed is not space", "\f1", bad},
	{"vertical tab is not space", "\v1", bad},
	{"no-break space is not space", "\u00a01", bad},
	{"byte order mark", "\ufeff1", bad},

	// numbers
	{"zero", `0`, 0.0},
	{"negative zero", `-0`, negZero},
	{"negative zero fraction", `-0.0`, negZero},
	{"negative zero exponent", `-0e5`, negZero},
	{"fraction", `0.1`, 0.1},
	{"exponent", `1E+2`, 100.0},
	{"negative exponent", `1e-2`, 0.01},
	{"15 digits", `123456789012345`, 123456789012345.0},
	{"16 digits", `1234567890123456`, 1234567890123456.0},
	{"2^53+1 rounds", `9007199254740993`, 9007199254740992.0},
	{"19 digits", `9999999999999999999`, 1e19},
	{"past uint64", `18446744073709551617`, 18446744073709551616.0},
	{"long integer", `-123456789012345678901234567890`, -1.2345678901234568e29},
	{"negative integer", `-37`, -37.0},
	{"largest", `1.7976931348623157e308`, math.MaxFloat64},
	{"smallest", `4.9e-324`, 5e-324},
	{"underflow is zero", `1e-400`, 0.0},
	{"overflow refused", `1e400`, bad},
	{"negative overflow refused", `-1e400`, bad},
	{"overflow by rounding refused", `1.7976931348623159e308`, bad},
	{"leading zero", `01`, bad},
	{"leading zero negative", `-01`, bad},
	{"leading zero in array", `[01]`, bad},
	{"bare dot", `1.`, bad},
	{"no integer part", `.5`, bad},
	{"lone minus", `-`, bad},
	{"plus sign", `+1`, bad},
	{"empty exponent", `1e`, bad},
	{"signed empty exponent", `1e+`, bad},
	{"hex", `0x10`, bad},
	{"infinity word", `Infinity`, bad},
	{"nan word", `NaN`, bad},

	// strings
	{"empty string", `""`, ""},
	{"escapes", `"\"\\\/\b\f\n\r\t"`, "\"\\/\b\f\n\r\t"},
	{"unicode escape", `"\u00e9"`, "é"},
	{"upper hex escape", `"\u00E9\uABCD\uFFFF"`, "é\uabcd\uffff"},
	{"lower hex escape", `"\uabcd\uffff"`, "\uabcd\uffff"},
	{"nul escape", `"\u0000"`, "\x00"},
	{"surrogate pair", `"\ud83d\ude00"`, "😀"},
	{"lone high surrogate", `"\ud83d"`, "\ufffd"},
	{"lone low surrogate", `"\ude00"`, "\ufffd"},
	{"high then pair", `"\ud83d\ud83d\ude00"`, "\ufffd😀"},
	{"low then high", `"\ude00\ud83d"`, "\ufffd\ufffd"},
	{"high then letter", `"\ud83dx"`, "\ufffdx"},
	{"high then escape", `"\ud83d\n"`, "\ufffd\n"},
	{"high then plain escape", `"\ud83d\u0041"`, "\ufffdA"},
	{"short unicode escape", `"\u12"`, bad},
	{"bad hex", `"\u12G4"`, bad},
	{"unknown escape", `"\x"`, bad},
	{"single quote escape", `"\'"`, bad},
	{"truncated escape", `"\u00`, bad},
	{"backslash at end", `"abc\`, bad},
	{"unterminated", `"abc`, bad},
	{"raw non-ASCII", `"é😀"`, "é😀"},
	{"raw replacement character", "\"\ufffd\"", "\ufffd"},
	{"invalid byte", "\"a\xffb\"", "a\ufffdb"},
	{"encoded surrogate", "\"\xed\xa0\x80\"", "\ufffd\ufffd\ufffd"},
	{"overlong slash", "\"\xc0\xaf\"", "\ufffd\ufffd"},
	{"truncated sequence", "\"\xc3\"", "\ufffd"},
	{"invalid byte after escape", "\"\\n\xff\"", "\n\ufffd"},
	{"raw tab", "\"a\tb\"", bad},
	{"raw newline", "\"a\nb\"", bad},
	{"raw nul", "\"\x00\"", bad},
	{"raw unit separator", "\"\x1f\"", bad},
	{"raw control after non-ASCII", "\"é\x01\"", bad},
	{"raw delete", "\"\x7f\"", "\x7f"},
	{"escaped key", `{"\ud800":1,"a\u0062":2}`, obj("\ufffd", 1.0, "ab", 2.0)},
	{"invalid key byte", "{\"a\xffb\":1}", obj("a\ufffdb", 1.0)},

	// containers
	{"empty array", `[]`, []any{}},
	{"empty object", `{}`, obj()},
	{"spaced empty array", ` [ ] `, []any{}},
	{"spaced empty object", `{ }`, obj()},
	{"nested empties", `[[],{}]`, []any{[]any{}, obj()}},
	{"object in object", `{"a":{}}`, obj("a", obj())},
	{"trailing comma array", `[1,]`, bad},
	{"leading comma array", `[,1]`, bad},
	{"missing comma array", `[1 2]`, bad},
	{"double comma", `[1,,2]`, bad},
	{"trailing comma object", `{"a":1,}`, bad},
	{"leading comma object", `{,"a":1}`, bad},
	{"missing colon", `{"a" 1}`, bad},
	{"missing comma object", `{"a":1 "b":2}`, bad},
	{"number key", `{1:2}`, bad},
	{"bare key", `{a:1}`, bad},
	{"key only", `{"a"}`, bad},
	{"mismatched array", `[}`, bad},
	{"mismatched object", `{]`, bad},
	{"object closed as array", `{"a":1]`, bad},
	{"array closed as object", `[1}`, bad},
	{"lone close bracket", `]`, bad},
	{"lone close brace", `}`, bad},
	{"lone colon", `:`, bad},
	{"lone comma", `,`, bad},

	// duplicate and index keys
	{"duplicate key", `{"a":1,"b":2,"a":3}`, obj("a", 3.0, "b", 2.0)},
	{"duplicate index key", `{"1":1,"0":2,"1":3}`, obj("0", 2.0, "1", 3.0)},
	{"duplicate past the scan", `{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"j":10,"a":11,"j":12}`,
		obj("a", 11.0, "b", 2.0, "c", 3.0, "d", 4.0, "e", 5.0, "f", 6.0, "g", 7.0, "h", 8.0, "i", 9.0, "j", 12.0)},
	{"index keys", `{"b":6,"10":1,"0":2,"01":3,"4294967295":4,"4294967294":5,"-0":7}`,
		obj("b", 6.0, "10", 1.0, "0", 2.0, "01", 3.0, "4294967295", 4.0, "4294967294", 5.0, "-0", 7.0)},

	// trailing data and truncation
	{"two numbers", `1 2`, bad},
	{"two objects", `{} {}`, bad},
	{"extra close", `[]]`, bad},
	{"trailing comma", `1,`, bad},
	{"two strings", `"a""b"`, bad},
	{"number then letter", `1x`, bad},
	{"empty", ``, bad},
	{"only space", `  `, bad},
	{"open array", `[`, bad},
	{"array without close", `[1`, bad},
	{"array after comma", `[1,`, bad},
	{"open object", `{`, bad},
	{"object in key", `{"a`, bad},
	{"bad escape in key", `{"\q":1}`, bad},
	{"object after key", `{"a"`, bad},
	{"object after colon", `{"a":`, bad},
	{"object without close", `{"a":1`, bad},
	{"object after comma", `{"a":1,`, bad},
	{"lone quote", `"`, bad},
}

func TestDecodeJSONCases(t *testing.T) {
	for _, tc := range decodeCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := checkAgainstReference(t, []byte(tc.in))
			if tc.want == bad {
				if err == nil {
					t.Fatalf("%q = %#v, want an error", tc.in, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("%q: %v", tc.in, err)
			}
			if !sameValue(got, tc.want) {
				t.Fatalf("%q = %#v, want %#v", tc.in, got, tc.want)
			}
		})
	}
}

// Nesting at exactly MaxJSONDepth decodes; one more level is refused with
// ErrJSONTooDeep, in arrays, objects and a mix of the two.
func TestDecodeJSONDepth(t *testing.T) {
	nest := func(depth int, open, close string) string {
		return strings.Repeat(open, depth) + "1" + strings.Repeat(close, depth)
	}
	mixed := func(depth int) string {
		var b strings.Builder
		for i := range depth {
			if i%2 == 0 {
				b.WriteString(`[`)
			} else {
				b.WriteString(`{"k":`)
			}
		}
		b.WriteString("1")
		for i := depth - 1; i >= 0; i-- {
			if i%2 == 0 {
				b.WriteString(`]`)
			} else {
				b.WriteString(`}`)
			}
		}
		return b.String()
	}
	for _, shape := range []struct {
		name string
		doc  func(int) string
	}{
		{"arrays", func(n int) string { return nest(n, "[", "]") }},
		{"objects", func(n int) string { return nest(n, `{"k":`, "}") }},
		{"mixed", mixed},
	} {
		t.Run(shape.name, func(t *testing.T) {
			if _, err := checkAgainstReference(t, []byte(shape.doc(MaxJSONDepth))); err != nil {
				t.Fatalf("depth %d: %v", MaxJSONDepth, err)
			}
			_, err := checkAgainstReference(t, []byte(shape.doc(MaxJSONDepth+1)))
			if !errors.Is(err, ErrJSONTooDeep) {
				t.Fatalf("depth %d: %v, want ErrJSONTooDeep", MaxJSONDepth+1, err)
			}
			// Truncated past the limit: still too deep, found first.
			if _, err := scanJSON([]byte(strings.Repeat("[", MaxJSONDepth+1))); !errors.Is(err, ErrJSONTooDeep) {
				t.Fatalf("truncated: %v, want ErrJSONTooDeep", err)
			}
		})
	}
}

// The documents of the benchmarks decode to what encoding/json gives.
func TestDecodeJSONBenchDocuments(t *testing.T) {
	checkAgainstReference(t, []byte(typicalStepOutput))
	checkAgainstReference(t, largeDocument(64<<10))
}

// FuzzDecodeJSONFast holds the hand scanner to the token decoder: the same
// value (down to key order and float64 bits) or the same refusal, on any
// input.
func FuzzDecodeJSONFast(f *testing.F) {
	for _, tc := range decodeCases {
		f.Add([]byte(tc.in))
	}
	f.Add([]byte(typicalStepOutput))
	f.Add([]byte(`{"a":[1,{"b":"\ud83d\ude00","c":-0.5e-3}],"0":null,"a":true}`))
	f.Add([]byte(`[[[[{"x":[[]]}]]]]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkAgainstReference(t, data)
	})
}

// UnquoteJSON reads exactly one string literal as encoding/json does, and
// refuses anything else.
func TestUnquoteJSON(t *testing.T) {
	for _, lit := range []string{`""`, `"plain"`, `"a\"b\\c\/d\n\t\u00e9"`, `"\ud83d\ude00"`, `"\ud800x"`, "\"\xff\"", `"é✓"`} {
		var want string
		if err := json.Unmarshal([]byte(lit), &want); err != nil {
			t.Fatalf("%s: %v", lit, err)
		}
		if got, ok := UnquoteJSON([]byte(lit)); !ok || got != want {
			t.Errorf("UnquoteJSON(%s) = %q, %v; want %q", lit, got, ok, want)
		}
		if got, ok := UnquoteJSONBytes([]byte(lit)); !ok || string(got) != want {
			t.Errorf("UnquoteJSONBytes(%s) = %q, %v; want %q", lit, got, ok, want)
		}
	}
	for _, lit := range []string{``, `"`, `"a`, `"a"b`, `"a" `, ` "a"`, `x`, `"\x"`, "\"a\nb\"", `"\u12"`} {
		if got, ok := UnquoteJSON([]byte(lit)); ok {
			t.Errorf("UnquoteJSON(%s) = %q, accepted", lit, got)
		}
		if got, ok := UnquoteJSONBytes([]byte(lit)); ok {
			t.Errorf("UnquoteJSONBytes(%s) = %q, accepted", lit, got)
		}
	}
}
