package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// indentCases are JSON values appendIndent must lay out as json.Indent
// does, and the prefixes to do it with.
var indentCases = []string{
	`null`, `true`, `false`, `0`, `-1.5e+10`, `""`, `"a"`,
	`{}`, `[]`, `{"a":{}}`, `{"a":[]}`, `[[],{}]`, `[[[]]]`, `[{}]`,
	`{"a":1,"b":[1,2,{"c":null}],"d":{"e":"f"}}`,
	`"a \"quoted\" word"`, `"ends in a backslash \\"`, `"\\\\\""`, `"\\"`,
	`{"k\"ey":"v,a:l{u}e[]"}`, `["\u2028", "\u003c", "<&>"]`,
	` { "spaced" : [ 1 , 2 ] , "x" : { } } `,
	"{\n\t\"tabs\":\r\n[true]}",
	`[1,[2,[3,[4,[5,[6,[7,[8,[9,[10,[11,[12,[13,[14,[15,[16,[17,[18,{"deep":true}]]]]]]]]]]]]]]]]]]`,
	`{"detail":{"attempt":1,"result":{"v":"a result of some length for s1"}},"hash":"2a5a"}`,
}

func TestAppendIndentMatchesJSONIndent(t *testing.T) {
	for _, src := range indentCases {
		for _, prefix := range []string{"", "    ", "\t"} {
			for _, indent := range []string{"  ", "\t", ""} {
				checkIndent(t, []byte(src), prefix, indent)
			}
		}
	}
}

// checkIndent compares appendIndent with json.Indent on src (valid
// JSON), both appending to the same non-empty dst.
func checkIndent(t *testing.T, src []byte, prefix, indent string) {
	t.Helper()
	src = bytes.TrimRight(src, " \t\r\n") // json.Indent keeps trailing space, appendIndent does not
	var want bytes.Buffer
	want.WriteString("before:")
	if err := json.Indent(&want, src, prefix, indent); err != nil {
		t.Fatalf("json.Indent(%q): %v", src, err)
	}
	got, err := appendIndent([]byte("before:"), src, prefix, indent)
	if err != nil {
		t.Fatalf("appendIndent(%q, %q, %q): %v", src, prefix, indent, err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Errorf("appendIndent(%q, %q, %q)\n got %q\nwant %q", src, prefix, indent, got, want.Bytes())
	}
	// Two levels in is two more indents of prefix.
	want.Reset()
	if err := json.Indent(&want, src, prefix+indent+indent, indent); err != nil {
		t.Fatal(err)
	}
	n := newlines{prefix: prefix, indent: indent}
	if got, err = n.appendIndent(nil, src, 2); err != nil || !bytes.Equal(got, want.Bytes()) {
		t.Errorf("appendIndent(%q, %q, %q) at depth 2: %v\n got %q\nwant %q", src, prefix, indent, err, got, want.Bytes())
	}
}

// TestAppendIndentRefuses: input whose strings or brackets do not close
// is an error, and dst is left as it was.
func TestAppendIndentRefuses(t *testing.T) {
	for _, src := range []string{"", " \n", `"open`, `{"a":"b}`, `[1,2`, `{"a":{}`, `]`, `{}}`, `"\"`, `[`} {
		got, err := appendIndent([]byte("kept"), []byte(src), "", "  ")
		if !errors.Is(err, errNotJSON) {
			t.Errorf("appendIndent(%q): err %v, want errNotJSON", src, err)
		}
		if string(got) != "kept" {
			t.Errorf("appendIndent(%q): dst %q, want it as it was", src, got)
		}
	}
}

// TestNewlinesReused: one newlines serves values of different depths in
// turn, shallow after deep and deep after shallow.
func TestNewlinesReused(t *testing.T) {
	n := newlines{prefix: "  ", indent: "  "}
	deep := `[` + strings.Repeat(`{"a":[`, 20) + `1` + strings.Repeat(`]}`, 20) + `]`
	for _, src := range []string{`{"a":1}`, deep, `[1]`, deep, `{}`} {
		var want bytes.Buffer
		if err := json.Indent(&want, []byte(src), "  ", "  "); err != nil {
			t.Fatal(err)
		}
		got, err := n.appendIndent(nil, []byte(src), 0)
		if err != nil || !bytes.Equal(got, want.Bytes()) {
			t.Errorf("appendIndent(%.40q): %v\n got %q\nwant %q", src, err, got, want.Bytes())
		}
	}
}

// FuzzAppendIndent holds appendIndent to json.Indent on every valid JSON
// value: the fuzz input as it is when valid, and re-encoded by
// encoding/json (compact, other escapes) when it decodes.
func FuzzAppendIndent(f *testing.F) {
	for _, src := range indentCases {
		f.Add([]byte(src), "    ")
	}
	f.Fuzz(func(t *testing.T, src []byte, prefix string) {
		if !json.Valid(src) {
			return
		}
		checkIndent(t, src, prefix, "  ")
		var v any
		if err := json.Unmarshal(src, &v); err != nil {
			return
		}
		b, err := json.Marshal(v)
		if err != nil {
			return
		}
		checkIndent(t, b, prefix, "  ")
	})
}
