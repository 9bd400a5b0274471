package canon

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"
)

func TestSpecExample(t *testing.T) {
	got, err := Marshal(map[string]any{"b": 1, "a": "é"})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"a":"\u00e9","b":1}`; string(got) != want {
		t.Fatalf("Marshal = %s, want %s", got, want)
	}
}

// TestChecksumVector is the reference's policy checksum vector (computed
// with Python; docs/guard.md, "Checksums and digests").
func TestChecksumVector(t *testing.T) {
	policy := map[string]any{
		"graph": map[string]any{"draft": []any{"review", "done"}, "review": []any{"done"}, "done": []any{}},
		"edge_predicates": map[string]any{
			"draft->review": []any{
				map[string]any{"id": "p1", "type": "deterministic", "statement": "server_file_exists('café.txt')"},
				map[string]any{"id": "p2", "type": "verified", "statement": "review is complete"},
			},
			"review->done": []any{},
		},
		"terminal": []string{"done", "review"},
		"stakes":   map[string]string{"draft->review": "paranoid", "review->done": "cheap"},
	}
	b, err := Marshal(policy)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	if got, want := hex.EncodeToString(sum[:]), "ed561645bb10c77a488a62f7976cefcfb714f2bd7610ff116d9b75d4669df9e8"; got != want {
		t.Fatalf("checksum %s, want %s\ncanonical: %s", got, want, b)
	}
}

// TestPythonVectors compares against testdata/vectors.jsonl, produced by
// Python's json.dumps(sort_keys=True, separators=(",", ":")) and
// json.dumps(sort_keys=True, indent=2).
func TestPythonVectors(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "vectors.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		n++
		var rec struct {
			Input   any    `json:"input"`
			Compact string `json:"compact"`
			Pretty  string `json:"pretty"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("line %d: %v", n, err)
		}
		got, err := Marshal(rec.Input)
		if err != nil {
			t.Errorf("line %d: Marshal: %v", n, err)
		} else if string(got) != rec.Compact {
			t.Errorf("line %d: compact\n got %s\nwant %s", n, got, rec.Compact)
		}
		got, err = MarshalIndent(rec.Input)
		if err != nil {
			t.Errorf("line %d: MarshalIndent: %v", n, err)
		} else if string(got) != rec.Pretty {
			t.Errorf("line %d: pretty\n got %s\nwant %s", n, got, rec.Pretty)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if n < 10 {
		t.Fatalf("only %d vectors read", n)
	}
}

func TestNumbers(t *testing.T) {
	ok := []struct {
		in   any
		want string
	}{
		{0, "0"},
		{math.Copysign(0, -1), "0"},
		{-5, "-5"},
		{float64(MaxSafeInteger), "9007199254740991"},
		{float64(-MaxSafeInteger), "-9007199254740991"},
		{int64(MaxSafeInteger), "9007199254740991"},
		{uint8(7), "7"},
		{float32(3), "3"},
		{json.Number("1e3"), "1000"},
		{json.Number("2.0"), "2"},
		{json.Number("-0"), "0"},
	}
	for _, c := range ok {
		got, err := Marshal(c.in)
		if err != nil || string(got) != c.want {
			t.Errorf("Marshal(%#v) = %s, %v; want %s", c.in, got, err, c.want)
		}
	}
	bad := []any{
		1.5, math.NaN(), math.Inf(1), math.Inf(-1), float64(MaxSafeInteger + 1),
		int64(MaxSafeInteger + 1), int64(-MaxSafeInteger - 1), uint64(1 << 60),
		json.Number("0.1"), json.Number("1e400"), json.Number("x"),
		map[string]any{"a": []any{0.5}},
	}
	for _, v := range bad {
		if got, err := Marshal(v); !errors.Is(err, ErrNotCanonical) {
			t.Errorf("Marshal(%#v) = %s, %v; want ErrNotCanonical", v, got, err)
		}
	}
}

func TestRefusals(t *testing.T) {
	cyclic := map[string]any{}
	cyclic["self"] = cyclic
	type point struct{ X int }
	for name, v := range map[string]any{
		"invalid utf8":   "a\xffb",
		"lone surrogate": "\xed\xa0\x80",
		"invalid key":    map[string]any{"\xff": 1},
		"struct":         point{1},
		"int keys":       map[int]string{1: "a"},
		"bytes":          []byte("x"),
		"func":           func() {},
		"cycle":          cyclic,
	} {
		if got, err := Marshal(v); !errors.Is(err, ErrNotCanonical) {
			t.Errorf("%s: Marshal = %s, %v; want ErrNotCanonical", name, got, err)
		}
	}
}

func TestTypedContainers(t *testing.T) {
	type stateName string
	got, err := Marshal(map[string]any{
		"g": map[string][]string{"b": {"c"}, "a": nil},
		"s": map[stateName]string{"x": "y"},
		"p": &[]int{1, 2},
		"n": (*int)(nil),
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"g":{"a":null,"b":["c"]},"n":null,"p":[1,2],"s":{"x":"y"}}`; string(got) != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

func TestDecode(t *testing.T) {
	v, err := Decode([]byte(` {"a": [1, "x", null]} `))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := Marshal(v); string(got) != `{"a":[1,"x",null]}` {
		t.Fatalf("round trip %s", got)
	}
	for _, bad := range []string{``, `{`, `{} {}`, `[1] x`} {
		if _, err := Decode([]byte(bad)); err == nil {
			t.Errorf("Decode(%q) succeeded", bad)
		}
	}
}

// referenceEncode is a deliberately plain second implementation of the
// canonical form: it goes through UTF-16 code units the way Python's
// ensure_ascii does, and sorts keys with sort.Strings.
func referenceEncode(v any) (string, bool) {
	switch x := v.(type) {
	case nil:
		return "null", true
	case bool:
		return strconv.FormatBool(x), true
	case float64:
		if x != math.Trunc(x) || math.IsInf(x, 0) || math.Abs(x) > 9007199254740991 {
			return "", false
		}
		if x == 0 {
			return "0", true
		}
		return strconv.FormatFloat(x, 'f', -1, 64), true
	case string:
		var b strings.Builder
		b.WriteString(`"`)
		short := map[uint16]string{'"': `\"`, '\\': `\\`, '\n': `\n`, '\r': `\r`, '\t': `\t`, '\b': `\b`, '\f': `\f`}
		for _, u := range utf16.Encode([]rune(x)) {
			if s, ok := short[u]; ok {
				b.WriteString(s)
			} else if u < 0x20 || u >= 0x7f {
				fmt.Fprintf(&b, `\u%04x`, u)
			} else {
				b.WriteByte(byte(u))
			}
		}
		b.WriteString(`"`)
		return b.String(), true
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			s, ok := referenceEncode(e)
			if !ok {
				return "", false
			}
			parts[i] = s
		}
		return "[" + strings.Join(parts, ",") + "]", true
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			ks, _ := referenceEncode(k)
			vs, ok := referenceEncode(x[k])
			if !ok {
				return "", false
			}
			parts[i] = ks + ":" + vs
		}
		return "{" + strings.Join(parts, ",") + "}", true
	}
	return "", false
}

// valueFromBytes turns fuzz input into a JSON value tree: a tiny bytecode
// where each byte picks a node kind and the following bytes feed it.
type valueBuilder struct {
	data []byte
	pos  int
}

func (b *valueBuilder) next() byte {
	if b.pos >= len(b.data) {
		return 0
	}
	c := b.data[b.pos]
	b.pos++
	return c
}

func (b *valueBuilder) str() string {
	n := int(b.next() % 12)
	var sb strings.Builder
	for range n {
		c := b.next()
		switch c % 5 {
		case 0:
			sb.WriteByte(c % 0x80) // any ASCII, controls and DEL included
		case 1:
			sb.WriteRune(rune(0x80 + int(c)*37)) // Latin and beyond
		case 2:
			sb.WriteRune(rune(0x10000 + int(c)*997)) // astral: surrogate pairs
		case 3:
			sb.WriteRune(rune(0xE000 + int(c)*31)) // private use / specials above surrogates
		default:
			sb.WriteByte("\"\\/<>&abc"[int(c)%9])
		}
	}
	return strings.ToValidUTF8(sb.String(), "?")
}

func (b *valueBuilder) value(depth int) any {
	c := b.next()
	if depth > 5 {
		c %= 5
	}
	switch c % 8 {
	case 0:
		return nil
	case 1:
		return c&0x10 != 0
	case 2:
		n := int64(b.next())<<8 | int64(b.next())
		if c&0x40 != 0 {
			n = -n * 1000003
		}
		if c&0x80 != 0 {
			return float64(n) + 0.5 // not canonical
		}
		return float64(n)
	case 3, 4:
		return b.str()
	case 5, 6:
		n := int(b.next() % 5)
		m := make(map[string]any, n)
		for range n {
			m[b.str()] = b.value(depth + 1)
		}
		return m
	default:
		n := int(b.next() % 5)
		a := make([]any, n)
		for i := range a {
			a[i] = b.value(depth + 1)
		}
		return a
	}
}

func FuzzMarshal(f *testing.F) {
	f.Add([]byte{5, 3, 1, 'a', 2, 1, 2})
	f.Add([]byte{7, 4, 3, 2, 1, 200, 4, 3, 1, 7, 2, 255, 255})
	f.Add([]byte("\x05\x04\x03\x02\x01\x02\x03\x04\x05\x06\x07"))
	f.Add([]byte{2 | 0x80, 0, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		v := (&valueBuilder{data: data}).value(0)
		want, wantOK := referenceEncode(v)
		got, err := Marshal(v)
		if wantOK != (err == nil) {
			t.Fatalf("Marshal(%#v) = %s, %v; reference ok=%v %s", v, got, err, wantOK, want)
		}
		if !wantOK {
			return
		}
		if string(got) != want {
			t.Fatalf("Marshal(%#v)\n got %s\nwant %s", v, got, want)
		}
		// The canonical text is JSON that reads back to the same value.
		back, err := Decode(got)
		if err != nil {
			t.Fatalf("canonical output does not parse: %v", err)
		}
		if !reflect.DeepEqual(normalizeZero(back), normalizeZero(v)) {
			t.Fatalf("round trip changed the value: %#v -> %#v", v, back)
		}
		pretty, err := MarshalIndent(v)
		if err != nil {
			t.Fatal(err)
		}
		again, err := Decode(pretty)
		if err != nil {
			t.Fatalf("pretty output does not parse: %v", err)
		}
		if c, _ := Marshal(again); string(c) != want {
			t.Fatalf("pretty form re-canonicalises to %s, want %s", c, want)
		}
	})
}

// normalizeZero maps -0 to 0, the one value canonical JSON cannot keep.
func normalizeZero(v any) any {
	switch x := v.(type) {
	case float64:
		if x == 0 {
			return 0.0
		}
	case []any:
		for i := range x {
			x[i] = normalizeZero(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = normalizeZero(x[k])
		}
	}
	return v
}

func BenchmarkMarshalEntry(b *testing.B) {
	entry := map[string]any{
		"ts_ms": 1735689600123, "from_state": "draft", "to_state": "review", "outcome": "applied",
		"kind": "transition", "resolved_by": "agent", "idempotency_key": "req-δ", "payload_digest": nil,
		"rationale": "café 😀", "verdict": map[string]any{"met": true, "score": 7, "findings": []any{}},
		"prev_digest": strings.Repeat("a", 64),
	}
	for b.Loop() {
		if _, err := Marshal(entry); err != nil {
			b.Fatal(err)
		}
	}
}
