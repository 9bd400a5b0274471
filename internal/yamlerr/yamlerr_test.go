package yamlerr

import (
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestLocate(t *testing.T) {
	cases := []struct {
		name      string
		src       string
		line, col int
		hint      string // a substring of the hint; "" means no hint
	}{
		{"type in a flow mapping", "a: 1\ninput: {files: string[]}\nb: 2\n", 2, 16, `quote the type: "string[]"`},
		{"enum array in a flow mapping", "x:\n  c: {a: (x|y)[], b: 1}\n", 2, 10, `quote the type: "(x|y)[]"`},
		{"type on a later line of a flow mapping", "a:\n  b: {x: 1,\n    files: string[]}\n", 3, 12, `"string[]"`},
		{"type in a flow list", "a: [string[], b]\n", 1, 5, `quote the type: "string[]"`},
		{"type in a flow mapping on line 1", "{a: 1,\n b: string[]}\n", 2, 5, `"string[]"`},
		{"reference in a flow mapping", "a: 1\nb: {do: ${input.x}}\n", 2, 9, `quote the text: "${input.x}"`},
		{"reference inside text", "s:\n  - {id: a, do: fix ${input.f} now, out: R}\n", 2, 17, `"fix ${input.f} now"`},
		{"unclosed flow mapping", "a:\n  - {id: a, do: x\n  - {id: b, do: y}\n", 2, 5, "never closed: add }"},
		{"unclosed flow list", "version: [\n", 1, 10, "never closed: add ]"},
		{"unclosed flow mapping around an unclosed list", "version: 1\ncontracts: {\nflows:\n  - [\n", 2, 12, "never closed: add }"},
		{"unclosed flow list before a key", "a: 1\nb: [x, y\nc: 1\n", 2, 4, "never closed: add ]"},
		{"missing comma", "a: {x: \"1\" y: 2}\n", 1, 12, `separate the entries`},
		{"bad indentation in a list entry", "a: 1\nsteps:\n  - id: a\n    do: x\n   out: R\n", 5, 4, "entries of one list"},
		{"bad indentation in a mapping", "x: 1\ny:\n  a: 1\n b: 2\n", 4, 2, "keys of one mapping"},
		{"list after a key", "a: 1\n- b\n", 2, 1, "keys of one mapping"},
		{"colon in a plain value", "a: 1\nb: Fix: it\n", 2, 7, "quote the value"},
		{"key indented under a value", "a: 1\nsteps:\n  - id: a\n    do: x\n      out: R\n", 5, 10, "align it with the keys above"},
		{"tab indentation", "a: 1\nb:\n\tc: 2\n", 3, 1, "indent with spaces"},
		{"value starting with @", "a: 1\nb: @x\n", 2, 4, "cannot start with @"},
		{"unclosed quote", "a: 1\nb: \"unclosed\nc: 2\n", 2, 0, "not closed"},
		{"type after a trailing comma", "a: {x: [p, q,], y: string[]}\n", 1, 20, `quote the type: "string[]"`},
		{"key without a colon", "version: 1\nflows\n  main: {}\n", 2, 0, `followed by ": " on the same line`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var n yaml.Node
			err := yaml.Unmarshal([]byte(c.src), &n)
			if err == nil {
				t.Fatal("yaml.v3 accepted the document")
			}
			p := Locate([]byte(c.src), err)
			if p.Line != c.line || p.Column != c.col {
				t.Errorf("at %d:%d, want %d:%d (%s; yaml.v3: %v)", p.Line, p.Column, c.line, c.col, p.Text(), err)
			}
			if c.hint == "" && p.Hint != "" || !strings.Contains(p.Hint, c.hint) {
				t.Errorf("hint %q, want it to contain %q", p.Hint, c.hint)
			}
			if strings.HasPrefix(p.Message, "yaml:") || strings.HasPrefix(p.Message, "line ") {
				t.Errorf("message keeps the prefix: %q", p.Message)
			}
		})
	}
}

// TestLocateIsBounded checks that a huge broken block document is placed
// without re-parsing it more than the budget allows.
func TestLocateIsBounded(t *testing.T) {
	var b strings.Builder
	for b.Len() < 6<<20 {
		b.WriteString("k" + strings.Repeat("x", 40) + ": 1\n")
	}
	b.WriteString(" bad: 2\n")
	src := []byte(b.String())
	var n yaml.Node
	err := yaml.Unmarshal(src, &n)
	if err == nil {
		t.Fatal("accepted")
	}
	if p := Locate(src, err); p.Hint == "" || p.Line < 1 {
		t.Errorf("got %+v", p)
	}
}

func TestSplitMessage(t *testing.T) {
	for _, c := range []struct {
		in   string
		line int
		msg  string
	}{
		{"yaml: line 3: did not find expected key", 3, "did not find expected key"},
		{"yaml: control characters are not allowed", 0, "control characters are not allowed"},
		{"yaml: line x: odd", 0, "line x: odd"},
	} {
		if line, msg := splitMessage(c.in); line != c.line || msg != c.msg {
			t.Errorf("%q: got %d %q", c.in, line, msg)
		}
	}
}

// FuzzLocate checks that any yaml.v3 error is placed on a line of the
// document, without a panic.
func FuzzLocate(f *testing.F) {
	for _, s := range []string{"a: {b: c[]}\n", "a:\n - {x\n", "a: 1\n b: 2\n", "a: [\n", "a: \"x\n", "\tb: 1\n", "a: b: c\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		var n yaml.Node
		err := yaml.Unmarshal(src, &n)
		if err == nil {
			return
		}
		p := Locate(src, err)
		lines := strings.Count(string(src), "\n") + 1
		if p.Line < 1 || p.Line > lines || p.Column < 0 || p.Message == "" {
			t.Fatalf("placed at %d:%d (%d lines): %+v for %q", p.Line, p.Column, lines, p, src)
		}
	})
}
