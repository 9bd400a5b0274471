package agent

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestSplitCommandLine(t *testing.T) {
	tests := []struct {
		line string
		want []string
	}{
		{"agent", []string{"agent"}},
		{"  python3   agent.py\t--fast \n", []string{"python3", "agent.py", "--fast"}},
		{`sh -c 'echo "$X" | tee log'`, []string{"sh", "-c", `echo "$X" | tee log`}},
		{`agent --name="a b" --q='c d'`, []string{"agent", "--name=a b", "--q=c d"}},
		{`agent "" ''`, []string{"agent", "", ""}},
		{`agent "say \"hi\" \\ \n"`, []string{"agent", `say "hi" \ \n`}},
		{`agent a\ b \$HOME \|`, []string{"agent", "a b", "$HOME", "|"}},
		{`"/opt/my agent/run" x`, []string{"/opt/my agent/run", "x"}},
		{`agent a~b 'x'"y"z`, []string{"agent", "a~b", "xyz"}},
		{`agent '$(rm -rf)' "; ls"`, []string{"agent", "$(rm -rf)", "; ls"}},
	}
	for _, tt := range tests {
		got, err := SplitCommandLine(tt.line)
		if err != nil {
			t.Errorf("SplitCommandLine(%q): %v", tt.line, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("SplitCommandLine(%q) = %q, want %q", tt.line, got, tt.want)
		}
	}
}

func TestSplitCommandLineErrors(t *testing.T) {
	tests := []struct{ line, want string }{
		{"", "empty"},
		{"   ", "empty"},
		{"agent 'open", "unterminated single quote"},
		{`agent "open`, "unterminated double quote"},
		{`agent "x\"`, "unterminated double quote"},
		{`agent \`, "trailing backslash"},
		{"agent | tee log", "unquoted '|'"},
		{"agent > out", "unquoted '>'"},
		{"agent; rm x", "unquoted ';'"},
		{"agent && x", "unquoted '&'"},
		{"agent $HOME", "unquoted '$'"},
		{"agent `id`", "unquoted '`'"},
		{"~/bin/agent", "unquoted '~'"},
		{"agent (x)", "unquoted '('"},
	}
	for _, tt := range tests {
		_, err := SplitCommandLine(tt.line)
		if !errors.Is(err, ErrCommandLine) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("SplitCommandLine(%q) error %v, want one containing %q", tt.line, err, tt.want)
		}
	}
}

// quoteWord quotes a word so that SplitCommandLine reads it back.
func quoteWord(w string) string {
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}

func FuzzSplitCommandLine(f *testing.F) {
	for _, s := range []string{"agent", `a "b c" 'd'`, `x\ y`, `"\"" '\'`, "a | b", "", "~x", `a""b`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		args, err := SplitCommandLine(line)
		if err != nil {
			return
		}
		if len(args) == 0 {
			t.Fatal("no error and no words")
		}
		// Quoting every word and splitting again gives the same words.
		quoted := make([]string, len(args))
		for i, a := range args {
			quoted[i] = quoteWord(a)
		}
		again, err := SplitCommandLine(strings.Join(quoted, " "))
		if err != nil {
			t.Fatalf("re-split of %q: %v", quoted, err)
		}
		if !reflect.DeepEqual(again, args) {
			t.Fatalf("re-split %q, want %q", again, args)
		}
	})
}
