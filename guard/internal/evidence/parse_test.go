package evidence

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func str(s string) Arg         { return Arg{Str: s} }
func list(items ...string) Arg { return Arg{IsList: true, List: items} }

func TestParseAccepts(t *testing.T) {
	cases := []struct {
		src  string
		want Call
	}{
		{`server_file_exists('a.txt')`, Call{ServerFileExists, []Arg{str("a.txt")}}},
		{`server_file_exists("a.txt")`, Call{ServerFileExists, []Arg{str("a.txt")}}},
		{" \t\r\n\v\fserver_file_exists ( 'a' , ) \n", Call{ServerFileExists, []Arg{str("a")}}},
		{`server_file_contains('f', "x y")`, Call{ServerFileContains, []Arg{str("f"), str("x y")}}},
		{`command_exit_zero(['go', 'test', './...',])`, Call{CommandExitZero, []Arg{list("go", "test", "./...")}}},
		{`command_exit_zero([])`, Call{CommandExitZero, []Arg{list()}}},
		{`command_exit_zero( [ ] )`, Call{CommandExitZero, []Arg{list()}}},
		{`git_commit_exists()`, Call{Name: GitCommitExists}},
		{`verdict_receipt_clean('a', 'b')`, Call{VerdictReceiptClean, []Arg{str("a"), str("b")}}},
		{`server_file_exists(['a'])`, Call{ServerFileExists, []Arg{list("a")}}},
		// Escapes, Python style.
		{`server_file_exists('\a\b\f\n\r\t\v\\\'\"')`, Call{ServerFileExists, []Arg{str("\a\b\f\n\r\t\v\\'\"")}}},
		{"server_file_exists('a\\\nb')", Call{ServerFileExists, []Arg{str("ab")}}},
		{"server_file_exists('a\\\r\nb')", Call{ServerFileExists, []Arg{str("ab")}}},
		{`server_file_exists('caf\xe9 \u00e9 \U0001F600 \101\0\7777')`, Call{ServerFileExists, []Arg{str("café é 😀 A\x00\u01ff7")}}},
		{`server_file_exists('\q\N\8 \d')`, Call{ServerFileExists, []Arg{str(`\q\N\8 \d`)}}},
		{`server_file_exists("it's")`, Call{ServerFileExists, []Arg{str("it's")}}},
		{`server_file_exists('δ/😀.md')`, Call{ServerFileExists, []Arg{str("δ/😀.md")}}},
	}
	for _, c := range cases {
		got, err := Parse(c.src)
		if err != nil {
			t.Errorf("Parse(%q): %v", c.src, err)
			continue
		}
		if diff := cmp.Diff(c.want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("Parse(%q) (-want +got):\n%s", c.src, diff)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	cases := []struct{ src, why string }{
		{``, "expected a builtin"},
		{`eval('x')`, `unknown trusted builtin "eval"`},
		{`os.system('x')`, `unknown trusted builtin "os"`},
		{`server_file_exists`, "expected ("},
		{`server_file_exists('a'`, "unterminated"},
		{`server_file_exists('a') and True`, "unexpected text"},
		{`server_file_exists('a');`, "unexpected text"},
		{`server_file_exists(path='a')`, "keyword argument"},
		{`server_file_exists(path = 'a')`, "keyword argument"},
		{`server_file_exists(1)`, "must be a quoted string"},
		{`server_file_exists(True)`, "bare name"},
		{`server_file_exists(x)`, "bare name"},
		{`server_file_exists(('a',))`, "must be a quoted string"},
		{`command_exit_zero([['a']])`, "list items must be quoted"},
		{`command_exit_zero(['a' 'b'])`, "adjacent string"},
		{`server_file_exists('a' 'b')`, "adjacent string"},
		{`server_file_exists('''a''')`, "adjacent string"},
		{`server_file_exists(r'a')`, "string prefixes"},
		{`server_file_exists(b"a")`, "string prefixes"},
		{`server_file_exists(,)`, "must be a quoted string"},
		{`server_file_exists('a',,)`, "must be a quoted string"},
		{"server_file_exists('a\nb')", "newline inside a string"},
		{"server_file_exists('a\rb')", "newline inside a string"},
		{`server_file_exists('\x4')`, `truncated \x`},
		{`server_file_exists('\u12')`, `truncated \u`},
		{`server_file_exists('\U00110000')`, "beyond U+10FFFF"},
		{`server_file_exists('\ud800')`, "surrogate"},
		{`server_file_exists('a\`, "unterminated"},
		{`command_exit_zero(['a',`, "unterminated"},
		{`server_file_exists('a') server_file_exists('b')`, "unexpected text"},
		{`server_file_exists('a')#`, "unexpected text"},
		{strings.Repeat(" ", maxStatement+1), "longer than"},
	}
	for _, c := range cases {
		_, err := Parse(c.src)
		if err == nil {
			t.Errorf("Parse(%q) succeeded, want error containing %q", c.src, c.why)
			continue
		}
		if !errors.Is(err, ErrParse) || !strings.Contains(err.Error(), c.why) {
			t.Errorf("Parse(%q) = %v, want ErrParse containing %q", c.src, err, c.why)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`server_file_exists('a.txt')`, `command_exit_zero(['go', 'test',])`,
		`server_file_contains("f", '\x41\u00e9\U0001F600\101')`, `git_commit_exists('HEAD')`,
		"verdict_receipt_clean('a\\\nb')", `server_file_exists(r'x')`, `eval('1')`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		c, err := Parse(src)
		if err != nil {
			if !errors.Is(err, ErrParse) {
				t.Fatalf("error does not wrap ErrParse: %v", err)
			}
			return
		}
		if !builtins[c.Name] {
			t.Fatalf("accepted unknown builtin %q", c.Name)
		}
		// Re-render with Go quoting (a subset of Python's) and parse again.
		parts := make([]string, len(c.Args))
		for i, a := range c.Args {
			parts[i] = pyQuote(a)
		}
		again, err := Parse(c.Name + "(" + strings.Join(parts, ", ") + ")")
		if err != nil {
			t.Fatalf("re-rendered call does not parse: %v", err)
		}
		if diff := cmp.Diff(c, again, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("round trip changed the call:\n%s", diff)
		}
	})
}

// pyQuote renders an argument with escapes the statement grammar reads.
func pyQuote(a Arg) string {
	q := func(s string) string {
		var b strings.Builder
		b.WriteByte('\'')
		for _, r := range s {
			switch {
			case r == '\'' || r == '\\':
				b.WriteByte('\\')
				b.WriteRune(r)
			case r < 0x20 || r == 0x7f:
				b.WriteString(`\x`)
				b.WriteString(string("0123456789abcdef"[r>>4]) + string("0123456789abcdef"[r&0xf]))
			default:
				b.WriteRune(r)
			}
		}
		b.WriteByte('\'')
		return b.String()
	}
	if !a.IsList {
		return q(a.Str)
	}
	parts := make([]string, len(a.List))
	for i, s := range a.List {
		parts[i] = q(s)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
