package policy

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stratum-go/stratum/engine"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// effects is one effect of every kind (and the variants the policy
// treats apart).
var effects = map[string]engine.Effect{
	"command":          {Kind: engine.EffectCommand, StepID: "check", Flow: "main", Command: "make test", Timeout: time.Minute},
	"long command":     {Kind: engine.EffectCommand, StepID: "soak", Flow: "main", Command: "sleep 3600", Timeout: time.Hour + 1500*time.Millisecond},
	"pre_merge":        {Kind: engine.EffectCommand, StepID: "fan", Flow: "main", Command: "go vet ./..."},
	"claude read-only": {Kind: engine.EffectAgent, StepID: "fan", Flow: "main", Agent: "claude", Sandbox: engine.SandboxReadOnly},
	"codex worktree":   {Kind: engine.EffectAgent, StepID: "fan", Flow: "main", Agent: "codex", Sandbox: engine.SandboxWorkspaceWrite},
	"file read":        {Kind: engine.EffectFileRead, StepID: "write", Flow: "main"},
	"judge":            {Kind: engine.EffectJudge, StepID: "review", Flow: "main"},
}

func newPolicy(t *testing.T, o Options) *Policy {
	t.Helper()
	if o.WorkDir == "" {
		o.WorkDir = t.TempDir()
	}
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func writeFile(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func given(b bool) OptBool { return OptBool{Given: true, Value: b} }

// TestAllowMatrix: for each effect, under each way of starting Stratum,
// allowed or refused, and a refusal names the flag or the file line.
func TestAllowMatrix(t *testing.T) {
	restrictive := "version: 1\ncommands: false\nagents: [claude]\nagent_sandbox: read-only\nfile_reads: false\njudges: false\nmax_command_timeout: 30s\n"
	permissive := "version: 1\ncommands: true\nagents: true\nmax_command_timeout: 2h\n"
	type want map[string]string // effect -> "" allowed, else a substring of the refusal
	cases := []struct {
		name string
		opts Options
		file string
		want want
	}{
		{"mcp defaults", Options{Command: "stratum mcp", Mode: Server}, "", want{
			"command": "--allow-commands", "long command": "--allow-commands", "pre_merge": "--allow-commands",
			"claude read-only": "--allow-agents", "codex worktree": `dispatch: consumer`,
			"file read": "", "judge": ""}},
		{"run defaults", Options{Command: "stratum run", Mode: Person}, "", want{
			"command": "--allow-commands", "long command": "--allow-commands", "pre_merge": "--allow-commands",
			"claude read-only": "", "codex worktree": "", "file read": "", "judge": ""}},
		{"mcp --allow-commands --allow-agents", Options{Command: "stratum mcp", Mode: Server,
			Flags: Flags{Commands: given(true), Agents: given(true)}}, "", want{
			"command": "", "long command": "--max-command-timeout 1h0m2s", "pre_merge": "",
			"claude read-only": "", "codex worktree": "", "file read": "", "judge": ""}},
		{"run --allow-agents=false", Options{Command: "stratum run", Mode: Person, Flags: Flags{Agents: given(false)}}, "", want{
			"claude read-only": "started with --allow-agents=false", "codex worktree": "--allow-agents=false"}},
		{"restrictive file", Options{Command: "stratum mcp", Mode: Server}, restrictive, want{
			"command":          "says commands: false (line 2)",
			"pre_merge":        "set commands: true at line 2",
			"claude read-only": "",
			"codex worktree":   "allows only the agents claude (agents at line 3), not codex",
			"file read":        "set file_reads: true at line 5",
			"judge":            "says judges: false (line 6)"}},
		{"restrictive file, flags win", Options{Command: "stratum mcp", Mode: Server,
			Flags: Flags{Commands: given(true), Agents: given(true), MaxCommandTimeout: OptDuration{Given: true, Value: 2 * time.Hour}}}, restrictive, want{
			"command": "", "long command": "", "claude read-only": "",
			"codex worktree": "agent_sandbox: read-only at line 4"}},
		{"permissive file", Options{Command: "stratum mcp", Mode: Server}, permissive, want{
			"command": "", "long command": "", "pre_merge": "", "claude read-only": "", "codex worktree": ""}},
		{"permissive file, --allow-commands=false", Options{Command: "stratum mcp", Mode: Server,
			Flags: Flags{Commands: given(false)}}, permissive, want{"command": "started with --allow-commands=false"}},
		{"agents list and --agent command", Options{Command: "stratum mcp", Mode: Server, Agent: "./my-agent"},
			"version: 1\nagents: [codex]\n", want{"claude read-only": "not command (stratum mcp runs every item with --agent ./my-agent)"}},
		{"agents list allows the --agent command", Options{Command: "stratum mcp", Mode: Server, Agent: "./my-agent"},
			"version: 1\nagents: [command]\n", want{"claude read-only": "", "codex worktree": ""}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.file != "" {
				c.opts.Flags.File = writeFile(t, c.file)
			}
			p := newPolicy(t, c.opts)
			for name, sub := range c.want {
				err := p.Allow(effects[name])
				switch {
				case sub == "" && err != nil:
					t.Errorf("%s: refused: %v", name, err)
				case sub != "" && err == nil:
					t.Errorf("%s: allowed, want a refusal naming %q", name, sub)
				case sub != "" && !strings.Contains(err.Error(), sub):
					t.Errorf("%s: refusal %q does not say %q", name, err, sub)
				case err != nil && !errors.Is(err, engine.ErrEffectNotAllowed):
					t.Errorf("%s: refusal does not wrap engine.ErrEffectNotAllowed: %v", name, err)
				}
			}
		})
	}
}

// TestRefusalText pins the words of every kind of refusal
// (testdata/refusals.golden; -update rewrites it).
func TestRefusalText(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(file, []byte("version: 1\nagents: [claude]\nagent_sandbox: read-only\nfile_reads: false\njudges: false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	policies := []struct {
		name string
		opts Options
	}{
		{"stratum mcp", Options{Command: "stratum mcp", Mode: Server}},
		{"stratum run", Options{Command: "stratum run", Mode: Person}},
		{"stratum mcp --policy policy.yaml --allow-commands", Options{Command: "stratum mcp", Mode: Server,
			Flags: Flags{File: file, Commands: given(true)}}},
	}
	order := []string{"command", "long command", "pre_merge", "claude read-only", "codex worktree", "file read", "judge"}
	var b strings.Builder
	for _, pc := range policies {
		p := newPolicy(t, pc.opts)
		b.WriteString("# " + pc.name + "\n")
		for _, name := range order {
			if err := p.Allow(effects[name]); err != nil {
				b.WriteString(name + ": " + err.Error() + "\n")
			} else {
				b.WriteString(name + ": allowed\n")
			}
		}
		b.WriteString("\n")
	}
	got := strings.ReplaceAll(b.String(), dir, "$DIR")
	golden(t, "refusals.golden", got)
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./policy -update)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s changed (-want +got); rerun with -update if deliberate:\n%s", name, diff)
	}
}

func TestDescribe(t *testing.T) {
	wd := t.TempDir()
	p := newPolicy(t, Options{Command: "stratum mcp", Mode: Server, WorkDir: wd, Flags: Flags{Commands: given(true)}})
	got := strings.Join(p.Describe(), "\n")
	for _, want := range []string{"commands: on (--allow-commands)", "agents: off, up to workspace-write (default of stratum mcp)",
		"file reads: on", "judges: on", "longest command time limit: 10m0s", "workspace roots: " + wd + " (and the MCP client's roots)"} {
		if !strings.Contains(got, want) {
			t.Errorf("Describe lacks %q:\n%s", want, got)
		}
	}
	if p.Agents() || !p.Commands() || !p.Judges() || !p.FileReads() || !p.UsesClientRoots() || p.MaxCommandTimeout() != DefaultMaxCommandTimeout {
		t.Errorf("accessors disagree with the policy: %s", got)
	}
}

func TestFlagsParse(t *testing.T) {
	var f Flags
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	f.Register(fs)
	if f.Given() {
		t.Fatal("no flag given, yet Given")
	}
	if err := fs.Parse([]string{"--allow-commands", "--allow-agents=false", "--allow-root", "a", "--allow-root", "b",
		"--max-command-timeout", "90s", "--policy", "p.yaml"}); err != nil {
		t.Fatal(err)
	}
	want := Flags{File: "p.yaml", Commands: given(true), Agents: given(false), Roots: Strings{"a", "b"},
		MaxCommandTimeout: OptDuration{Given: true, Value: 90 * time.Second}}
	if diff := cmp.Diff(want, f); diff != "" {
		t.Errorf("flags (-want +got):\n%s", diff)
	}
	for _, bad := range [][]string{{"--max-command-timeout", "0s"}, {"--max-command-timeout", "soon"}, {"--allow-commands=maybe"}, {"--allow-root", ""}} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(new(strings.Builder))
		new(Flags).Register(fs)
		if err := fs.Parse(bad); err == nil {
			t.Errorf("%v: accepted", bad)
		}
	}
}
