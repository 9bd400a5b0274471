package jsregex

import (
	"errors"
	"testing"
	"unicode/utf16"
)

// FuzzCompile: the filter and the translator never panic, a refusal is one
// of the package's error types, a compiled pattern can be run, and States
// gives what Compile does (its size, or a refusal; RE2's own size limit
// alone it does not see).
func FuzzCompile(f *testing.F) {
	for _, c := range oracleCases()[:200] {
		f.Add(c.Pattern, c.Texts[0])
	}
	f.Add(`^a{1001}$`, "a")
	f.Add(`[\p{L}\d-]+x`, "é1-x")
	f.Fuzz(func(t *testing.T, pattern, text string) {
		if len(utf16.Encode([]rune(pattern))) > 256 || len(text) > 256 {
			return
		}
		if err := Shape(pattern); err != nil {
			var se *ShapeError
			if !errors.As(err, &se) {
				t.Fatalf("Shape(%q): %T", pattern, err)
			}
			return
		}
		re, err := Compile(pattern, 4096)
		states, serr := States(pattern, 4096)
		var large *TooLargeError
		tooLargeForRE2 := errors.As(err, &large) && serr == nil // RE2's own limit, past the translation
		if !tooLargeForRE2 && ((err == nil) != (serr == nil) || (err == nil && states != re.States)) {
			t.Fatalf("Compile(%q): %v, States: %d, %v", pattern, err, states, serr)
		}
		if err != nil {
			var (
				se *SyntaxError
				ue *UnsupportedError
				te *TooLargeError
			)
			if !errors.As(err, &se) && !errors.As(err, &ue) && !errors.As(err, &te) {
				t.Fatalf("Compile(%q): %v", pattern, err)
			}
			return
		}
		re.MatchString(text)
	})
}
