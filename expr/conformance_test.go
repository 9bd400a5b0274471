package expr

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// conformanceCase is one line of testdata/cases.jsonl: an expression, its
// bindings and either the expected value or the expected error
// ("<code>: <why>"; only the code is compared).
type conformanceCase struct {
	line     int
	expr     string
	bindings Bindings
	expect   any
	hasValue bool
	errCode  string
	errWhy   string
}

func loadCases(t testing.TB, path string) []conformanceCase {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cases []conformanceCase
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for line := 1; sc.Scan(); line++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		v, err := DecodeJSON(sc.Bytes())
		if err != nil {
			t.Fatalf("%s:%d: %v", path, line, err)
		}
		obj, ok := v.(*Object)
		if !ok {
			t.Fatalf("%s:%d: not an object", path, line)
		}
		c := conformanceCase{line: line}
		src, _ := obj.Get("expr")
		if c.expr, ok = src.(string); !ok {
			t.Fatalf("%s:%d: expr is not a string", path, line)
		}
		if b, ok := obj.Get("bindings"); ok {
			bo, ok := b.(*Object)
			if !ok {
				t.Fatalf("%s:%d: bindings is not an object", path, line)
			}
			if c.bindings, err = BindingsFromObject(bo); err != nil {
				t.Fatalf("%s:%d: %v", path, line, err)
			}
		}
		if e, ok := obj.Get("expect"); ok {
			c.expect, c.hasValue = e, true
		} else if e, ok := obj.Get("error"); ok {
			s, _ := e.(string)
			code, why, found := strings.Cut(s, ":")
			if !found {
				t.Fatalf("%s:%d: error %q has no code", path, line, s)
			}
			c.errCode, c.errWhy = code, strings.TrimSpace(why)
		} else {
			t.Fatalf("%s:%d: neither expect nor error", path, line)
		}
		cases = append(cases, c)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return cases
}

// runCase evaluates a case as the corpus defines it: value mode, no
// workspace root. It returns "" when the case passes.
func runCase(c conformanceCase) string {
	v, err := Evaluate(t0ctx, c.expr, c.bindings, nil)
	if c.hasValue {
		if err != nil {
			return fmt.Sprintf("got error %v, want %s", err, mustJSON(c.expect))
		}
		if !sameJSON(v, c.expect) {
			return fmt.Sprintf("got %s, want %s", mustJSON(v), mustJSON(c.expect))
		}
		return ""
	}
	if err == nil {
		return fmt.Sprintf("got %s, want error %s (%s)", mustJSON(v), c.errCode, c.errWhy)
	}
	e, ok := err.(*Error)
	if !ok {
		return fmt.Sprintf("got %T %v, want *Error", err, err)
	}
	if string(e.Code) != c.errCode {
		return fmt.Sprintf("got error %v, want %s (%s)", err, c.errCode, c.errWhy)
	}
	return ""
}

func mustJSON(v any) string {
	b, err := EncodeJSON(v)
	if err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	return string(b)
}

func TestConformance(t *testing.T) {
	path := filepath.Join("testdata", "cases.jsonl")
	cases := loadCases(t, path)
	failed := 0
	for _, c := range cases {
		if msg := runCase(c); msg != "" {
			failed++
			t.Errorf("%s:%d: %.120q: %s", path, c.line, c.expr, msg)
		}
	}
	t.Logf("conformance: %d/%d cases pass", len(cases)-failed, len(cases))
}
