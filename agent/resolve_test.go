package agent

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	onPath := map[string]string{"my-agent": "/opt/bin/my-agent", "python3": "/usr/bin/python3"}
	lookPath := func(name string) (string, error) {
		if p, ok := onPath[name]; ok {
			return p, nil
		}
		return "", errors.New("not found")
	}
	human := NewHuman(strings.NewReader(""), os.Stderr)
	r := &Resolver{LookPath: lookPath, Human: human, Env: []string{"A=1"}}

	tests := []struct {
		override, step string
		want           string // connector kind
		argv           []string
	}{
		{"", "", "claude", nil},
		{"", "claude", "claude", nil},
		{"", "codex", "codex", nil},
		{"", "human", "human", nil},
		{"codex", "claude", "codex", nil},
		{"human", "codex", "human", nil},
		{"claude", "gemini", "claude", nil},
		{"my-agent", "claude", "command", []string{"my-agent"}},
		{"python3 agent.py --model 'big one'", "", "command", []string{"python3", "agent.py", "--model", "big one"}},
		{"/bin/sh -c 'exit 0'", "codex", "command", []string{"/bin/sh", "-c", "exit 0"}},
	}
	for _, tt := range tests {
		c, err := r.Resolve(tt.override, tt.step)
		if err != nil {
			t.Errorf("Resolve(%q, %q): %v", tt.override, tt.step, err)
			continue
		}
		var kind string
		switch c := c.(type) {
		case *Claude:
			kind = "claude"
			if c.Env[0] != "A=1" || c.LookPath == nil {
				t.Errorf("claude connector not configured: %+v", c)
			}
		case *Codex:
			kind = "codex"
		case *Human:
			kind = "human"
			if c != human {
				t.Error("a second Human was made")
			}
		case *Command:
			kind = "command"
			if !reflect.DeepEqual(c.Argv, tt.argv) || c.Env[0] != "A=1" {
				t.Errorf("command %+v, want argv %q", c, tt.argv)
			}
		}
		if kind != tt.want {
			t.Errorf("Resolve(%q, %q) = %T, want %s", tt.override, tt.step, c, tt.want)
		}
	}
}

func TestResolveErrors(t *testing.T) {
	lookPath := func(string) (string, error) { return "", errors.New("not found") }
	r := &Resolver{LookPath: lookPath}
	dir := t.TempDir()
	plain := filepath.Join(dir, "agent.sh") // a script without its x bit
	if err := os.WriteFile(plain, []byte("#!/bin/sh\necho '{}'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		override, step string
		is             error
		msg            string
	}{
		{"", "gemini", ErrUnknownAgent, `step agent "gemini" has no built-in connector (known: claude, codex, human); pass --agent '<command>'`},
		{"", "Claude", ErrUnknownAgent, `step agent "Claude"`},
		{"", "python3 agent.py", ErrUnknownAgent, `step agent "python3 agent.py"`},
		{"", "human", nil, "no terminal is attached"},
		{"human", "", nil, "no terminal is attached"},
		{"no-such-agent --x", "", ErrNotFound, `--agent "no-such-agent --x": program "no-such-agent" not found`},
		{"./missing/agent", "", ErrNotFound, "program \"./missing/agent\" not found"},
		{dir, "", ErrNotFound, `program "` + dir + `" is a directory, not a program`},
		{plain, "", ErrNotFound, `program "` + plain + `" is not executable (chmod +x ` + plain + `, or name its interpreter: 'sh ` + plain + `')`},
		{"agent | tee", "", ErrCommandLine, `--agent "agent | tee": invalid agent command line: unquoted '|'`},
	}
	for _, tt := range tests {
		_, err := r.Resolve(tt.override, tt.step)
		if err == nil || (tt.is != nil && !errors.Is(err, tt.is)) || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("Resolve(%q, %q) error %v, want %v containing %q", tt.override, tt.step, err, tt.is, tt.msg)
		}
	}
}

func TestResolverTaskRunner(t *testing.T) {
	r := &Resolver{Env: []string{"A=1"}}
	for _, name := range []string{"claude", "codex"} {
		tr, err := r.TaskRunner(name)
		if err != nil || tr == nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if c, _ := r.TaskRunner("claude"); c.(*Claude).Env[0] != "A=1" {
		t.Error("the environment was not passed on")
	}
	for _, name := range []string{"human", "./agent.sh", ""} {
		if _, err := r.TaskRunner(name); !errors.Is(err, ErrUnknownAgent) {
			t.Errorf("%q: err = %v", name, err)
		}
	}
}
