package jsregex

import (
	"errors"
	"strings"
	"testing"
)

func TestShape(t *testing.T) {
	tests := []struct {
		pattern string
		ok      bool
	}{
		// The spec's examples.
		{`a*a*`, false},
		{`.*.*x`, false},
		{`[ab]+a?`, false},
		{`a{0,9}a*`, false},
		{`(a*)(b*)`, false},
		{`a*(a*)`, false},
		{`(ab)*(cd)*`, false},
		{`(a+)+`, false},
		{`((a+))+`, false},
		{`(a|b)*`, false},
		{`(a)\1`, false},
		{`^A[a-z]+$`, true},
		{`a*ba+`, true},
		{`(foo|bar)baz`, true},
		{`.*error.*`, true},
		{`^x{1,3}$`, true},
		{`\d{3}`, true},
		{`\u0041`, true},
		{`a{2`, false},
		{`\p{L}`, false},
		// \u{41} reads as the atom \u quantified by {41}: the filter passes it.
		{`\u{41}`, true},
		{`\u{1F600}`, false},
		// Filter details.
		{`(?:ab)`, false},
		{`\(?`, false}, // the substring "(?" anywhere
		{`[`, false},
		{`[\]`, false},
		{`[\]]`, true},
		{`a\`, false},
		{`*a`, false},
		{`a**`, false},
		{`a*?`, true},
		{`a*??`, false},
		{`)`, false},
		{`(`, false},
		{`(a`, false},
		{`a|b*`, true},
		{`a*|b*`, true}, // '|' resets adjacency
		{`(a|b)c*`, true},
		{`(a|b)`, true},
		{`((a|b))*`, false}, // an inner alternation makes the outer group nested
		{`(a*)b`, true},
		{`(a*)b*`, false}, // groups are transparent: a* then b*
		{`(a)*b*`, false},
		{`x(a)*`, true},
		{`a*(b)`, true},
		{`a*(b)*`, false}, // the atom before '(' was quantified
		{`a{,5}`, false},
		{`a{1,2,3}`, false},
		{`😀*`, true},
		{`a*😀*`, true}, // UTF-16 units: the high surrogate separates them
		{`\\1`, false},
		{strings.Repeat("a?b", 32), true},
		{strings.Repeat("a?b", 33), false},
		{`[a*]+`, true},
		{`[\d]*x*`, false},
	}
	for _, tt := range tests {
		err := Shape(tt.pattern)
		if (err == nil) != tt.ok {
			t.Errorf("Shape(%q) = %v, want ok=%v", tt.pattern, err, tt.ok)
		}
		var se *ShapeError
		if err != nil && !errors.As(err, &se) {
			t.Errorf("Shape(%q) error %T, want *ShapeError", tt.pattern, err)
		}
	}
}

func TestCompileTooLarge(t *testing.T) {
	// Zero-width assertions repeated inside a counted group make a large
	// program without consuming text.
	p := `(` + strings.Repeat(`\b`, 20) + `a){1000}`
	if _, err := Compile(p, 4096); !errors.As(err, new(*TooLargeError)) {
		t.Errorf("Compile(%q) = %v, want *TooLargeError", p, err)
	}
	if _, err := Compile(`[a-z]{4096}`, 4096); err != nil {
		t.Errorf("Compile([a-z]{4096}) = %v", err)
	}
}

func TestCompileErrors(t *testing.T) {
	for _, p := range []string{`a{3,2}`, `^*`, `\a`, `a}`, `a]`, `[z-a]`, `[\w-z]`, `\c1`, `\01`, `\x4`, `\u12`, `\u{110000}`, `\k`, `[\B]`, `[\p{Foo}]`, `[\p{Other_Alphabetic}]`, `\p`} {
		_, err := Compile(p, 4096)
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("Compile(%q) = %v, want *SyntaxError", p, err)
		}
	}
	for _, p := range []string{`[\p{Emoji}]`, `[\p{scx=Greek}]`, `[\p{sc=Grek}]`} {
		_, err := Compile(p, 4096)
		var ue *UnsupportedError
		if !errors.As(err, &ue) {
			t.Errorf("Compile(%q) = %v, want *UnsupportedError", p, err)
		}
	}
}
