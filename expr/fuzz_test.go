package expr

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"
)

func addSeeds(f *testing.F) {
	for _, c := range loadCases(f, filepath.Join("testdata", "cases.jsonl")) {
		f.Add(c.expr)
	}
	for _, s := range []string{
		"result.confidence > 0.7 && len(result.label) > 0",
		"matches(result.status, '^o(k|h)$') || file_exists('x')",
		"!(1 < 2) == (3 - -4 >= 7) in result.langs",
		"str(result.doc)[0]",
		"'\\uD83D\\uDE00' + \"\\u00e9\\n\"",
	} {
		f.Add(s)
	}
}

var knownCodes = map[Code]bool{
	CodeParse: true, CodeUnknownIdentifier: true, CodeUnknownFunction: true,
	CodeType: true, CodeValidation: true, CodeResourceLimit: true,
}

// FuzzParse: Compile never panics, fails only with a parse_error or a
// resource_limit, and the canonical form of what compiles compiles again
// to the same canonical form.
func FuzzParse(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, src string) {
		p, err := Compile(src)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || (e.Code != CodeParse && e.Code != CodeResourceLimit) {
				t.Fatalf("Compile(%q): unexpected error %v", src, err)
			}
			if e.Code == CodeParse && (e.Offset < 0 || e.Offset > utf16Len(src)) {
				t.Fatalf("Compile(%q): offset %d out of range", src, e.Offset)
			}
			return
		}
		canon := p.String()
		p2, err := Compile(canon)
		if err != nil {
			t.Fatalf("canonical form %q of %q does not compile: %v", canon, src, err)
		}
		if again := p2.String(); again != canon {
			t.Fatalf("canonical form is not stable: %q -> %q -> %q", src, canon, again)
		}
		if p2.UsesFileFunctions() != p.UsesFileFunctions() {
			t.Fatalf("UsesFileFunctions differs between %q and %q", src, canon)
		}
	})
}

// FuzzEval: evaluation never panics, returns a value of the JSON model or
// an *Error with one of the six codes, and stays within a time bound.
func FuzzEval(f *testing.F) {
	addSeeds(f)
	b := mustBindings(f, std)
	f.Fuzz(func(t *testing.T, src string) {
		p, err := Compile(src)
		if err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		start := time.Now()
		v, err := p.EvalContext(ctx, b, nil)
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("%q took %v", src, d)
		}
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || !knownCodes[e.Code] {
				t.Fatalf("%q: unexpected error %v", src, err)
			}
			return
		}
		if _, err := EncodeJSON(v); err != nil {
			t.Fatalf("%q: result is not JSON: %v", src, err)
		}
	})
}
