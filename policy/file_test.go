package policy

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestParseFile(t *testing.T) {
	home, err := os.UserHomeDir()
	if err != nil {
		t.Skip(err)
	}
	yes, no := true, false
	src := `# the person's policy
version: 1
commands: true
agents: [claude, codex]
agent_sandbox: read-only
max_command_timeout: 90s
max_agent_timeout: 1h30m
file_reads: true
judges: false
roots:
  - ~/src
  - rel/dir
  - /abs/dir
client_roots: false
`
	f, err := ParseFile("p.yaml", "/etc/stratum", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := &File{Path: "p.yaml", Commands: &yes, Agents: []string{"claude", "codex"}, Sandbox: "read-only",
		MaxCommandTimeout: 90 * time.Second, MaxAgentTimeout: 90 * time.Minute, FileReads: &yes, Judges: &no, ClientRoots: &no,
		Roots: []string{filepath.Join(home, "src"), "/etc/stratum/rel/dir", "/abs/dir"}}
	if diff := cmp.Diff(want, f, cmpopts.IgnoreUnexported(File{})); diff != "" {
		t.Errorf("parsed (-want +got):\n%s", diff)
	}
	if f.Line("commands") != 3 || f.Line("roots") != 10 || f.Line("max_agent_timeout") != 7 || f.Line("nothing") != 0 {
		t.Errorf("lines: commands %d roots %d max_agent_timeout %d", f.Line("commands"), f.Line("roots"), f.Line("max_agent_timeout"))
	}
}

func TestParseFileErrors(t *testing.T) {
	cases := []struct{ name, src, want string }{
		{"empty", "", "is empty"},
		{"no version", "commands: true\n", "p.yaml:1:1: lacks version: 1"},
		{"wrong version", "version: 2\n", "p.yaml:1:10: version: want 1"},
		{"not a mapping", "- commands\n", "must be a mapping"},
		{"unknown key", "version: 1\ncommand: true\n", `p.yaml:2:1: unknown setting "command" (known: version, commands,`},
		{"twice", "version: 1\ncommands: true\ncommands: false\n", "p.yaml:3:1: commands is set twice (first at line 2)"},
		{"not a bool", "version: 1\ncommands: yes\n", `p.yaml:2:11: commands: want true or false, not "yes"`},
		{"quoted bool", "version: 1\njudges: \"true\"\n", `judges: want true or false`},
		{"agent name", "version: 1\nagents: [claude, gemini]\n", `p.yaml:2:18: agents: "gemini" is not an agent name`},
		{"agents word", "version: 1\nagents: all\n", `agents: want true (any agent), false (none) or a list`},
		{"sandbox", "version: 1\nagent_sandbox: danger-full-access\n", `agent_sandbox: want read-only or workspace-write`},
		{"timeout", "version: 1\nmax_command_timeout: 600\n", `max_command_timeout: want a positive duration such as 90s`},
		{"agent timeout number", "version: 1\nmax_agent_timeout: 600\n", `p.yaml:2:20: max_agent_timeout: want a positive duration such as 90s, 10m or 1h, not "600"`},
		{"agent timeout zero", "version: 1\nmax_agent_timeout: 0s\n", `max_agent_timeout: want a positive duration such as 90s, 10m or 1h, not "0s"`},
		{"agent timeout negative", "version: 1\nmax_agent_timeout: -5m\n", `max_agent_timeout: want a positive duration`},
		{"agent timeout list", "version: 1\nmax_agent_timeout: [1h]\n", `max_agent_timeout: want a positive duration`},
		{"agent timeout twice", "version: 1\nmax_agent_timeout: 1h\nmax_agent_timeout: 2h\n", `p.yaml:3:1: max_agent_timeout is set twice (first at line 2)`},
		{"roots scalar", "version: 1\nroots: /src\n", `roots: want a list of directories`},
		{"syntax", "version: 1\ncommands: [true\n", `is not valid YAML`},
		{"two documents", "version: 1\n---\nversion: 1\n", `more than one YAML document`},
		{"steps list", "version: 1\nsteps: [draft]\n", `p.yaml:2:8: steps: want a mapping of step ids`},
		{"steps empty entry", "version: 1\nsteps:\n  draft: {}\n", `steps: draft: want agent options (model, effort,`},
		{"steps unknown option", "version: 1\nsteps:\n  draft: {modle: x}\n", `p.yaml:3:11: steps: draft: unknown agent option "modle"`},
		{"steps twice", "version: 1\nsteps:\n  draft: {model: x}\n  draft: {model: y}\n", `steps: draft is set twice`},
		{"steps option twice", "version: 1\nsteps:\n  draft: {model: x, model: y}\n", `steps: draft: model is set twice`},
		{"steps model number", "version: 1\nsteps:\n  draft: {model: 5}\n", `steps: draft: model: want a word`},
		{"steps tools scalar", "version: 1\nsteps:\n  draft: {allowed_tools: Read}\n", `steps: draft: allowed_tools: want a list of tool rules`},
		{"steps sandbox", "version: 1\nsteps:\n  draft: {sandbox: full}\n", `steps: draft: sandbox: want read-only or workspace-write, not "full"`},
		{"steps over agent_sandbox", "version: 1\nagent_sandbox: read-only\nsteps:\n  draft: {sandbox: workspace-write}\n",
			`p.yaml:4: steps: draft: sandbox workspace-write is more than agent_sandbox: read-only (line 2) allows`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseFile("p.yaml", "/", []byte(c.src))
			if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, ErrFile) {
				t.Fatalf("got %v, want an ErrFile saying %q", err, c.want)
			}
		})
	}
}

func TestLoadFileErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := LoadFile(filepath.Join(dir, "missing.yaml")); !errors.Is(err, ErrFile) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, []byte("version: 1\n#"+strings.Repeat("x", MaxFileBytes)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadFile(big); !errors.Is(err, ErrFile) || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("oversized file: %v", err)
	}
	// A policy whose roots do not exist is refused when the policy is built.
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("version: 1\nroots: [nowhere]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Options{Flags: Flags{File: bad}, WorkDir: dir}); !errors.Is(err, ErrFile) || !strings.Contains(err.Error(), "bad.yaml:2: roots: "+filepath.Join(dir, "nowhere")) {
		t.Errorf("missing root in the file: %v", err)
	}
}

// Per-step agent options are read as written and given back by step id.
func TestParseFileSteps(t *testing.T) {
	src := "version: 1\nsteps:\n  draft:\n    model: claude-opus-4-1\n    effort: high\n    allowed_tools: [Read, \"Bash(git diff:*)\"]\n  sub/fix: {sandbox: read-only, permission_mode: plan, disallowed_tools: []}\n"
	f, err := ParseFile("p.yaml", "/", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]StepAgent{
		"draft":   {Model: "claude-opus-4-1", Effort: "high", AllowedTools: []string{"Read", "Bash(git diff:*)"}, Line: 3},
		"sub/fix": {Sandbox: "read-only", PermissionMode: "plan", DisallowedTools: []string{}, Line: 7},
	}
	if !reflect.DeepEqual(f.Steps, want) {
		t.Fatalf("steps %+v, want %+v", f.Steps, want)
	}
}
