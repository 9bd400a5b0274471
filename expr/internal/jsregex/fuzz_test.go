package jsregex

import (
	"errors"
	"testing"
	"unicode/utf16"
)

// FuzzCompile: the filter and the translator never panic, a refusal is one
// of the package's error types, and a compiled pattern can be run.
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
