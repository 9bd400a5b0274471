package mcp

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestUnescapeHTML(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"a":"x \u003e= 2 \u0026\u0026 y \u003c 3"}`, `{"a":"x >= 2 && y < 3"}`},
		{`{"a":"\\u003e"}`, `{"a":"\\u003e"}`},           // an escaped backslash, then text
		{`{"a":"\\\u003e"}`, `{"a":"\\>"}`},              // a backslash, then an escaped >
		{`{"a":"\u00e9\u2028"}`, `{"a":"\u00e9\u2028"}`}, // other escapes stay
		{`"\u003C"`, `"<"`},
		{`[1,2]`, `[1,2]`},
	} {
		if got := string(unescapeHTML([]byte(tc.in))); got != tc.want {
			t.Errorf("unescapeHTML(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// FuzzUnescapeHTML checks that unescaping never changes what a JSON
// document means.
func FuzzUnescapeHTML(f *testing.F) {
	for _, s := range []string{`{"a":"x \u003e= 2"}`, `"\\u003e"`, `"\\\u0026"`, `{"k\u003c":[1,"\u0026"]}`, `null`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var want any
		if json.Unmarshal([]byte(s), &want) != nil {
			return
		}
		out := unescapeHTML([]byte(s))
		var got any
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("unescapeHTML(%q) = %q: no longer JSON: %v", s, out, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("unescapeHTML(%q) = %q changes the value", s, out)
		}
	})
}

func TestCallRaw(t *testing.T) {
	c := &call{args: json.RawMessage(`{"a":{"b":{"z":1,"y":[2]},"n":null},"s":"x"}`)}
	for _, tc := range []struct {
		path []string
		want string
	}{
		{[]string{"a", "b"}, `{"z":1,"y":[2]}`},
		{[]string{"a", "b", "y"}, `[2]`},
		{[]string{"s"}, `"x"`},
		{[]string{"a", "n"}, ``},
		{[]string{"a", "missing"}, ``},
		{[]string{"s", "deeper"}, ``},
		{[]string{"a", "b", "z"}, `1`},
	} {
		if got := string(c.raw(tc.path...)); got != tc.want {
			t.Errorf("raw(%v) = %q, want %q", tc.path, got, tc.want)
		}
	}
}
