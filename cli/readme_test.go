package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// readRepoFile reads a file of the repository by its path from the root.
func readRepoFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// commandAt is the shell command in text that starts with prefix, with its
// backslash-continued lines joined, exactly as a reader would paste it.
func commandAt(t *testing.T, text, prefix string) string {
	t.Helper()
	i := strings.Index(text, prefix)
	if i < 0 {
		t.Fatalf("no command starting with %q", prefix)
	}
	var cmd strings.Builder
	for line := range strings.Lines(text[i:]) {
		line = strings.TrimRight(line, "\n")
		// A command quoted in a YAML comment continues on "#" lines.
		if cmd.Len() > 0 {
			line = strings.TrimLeft(strings.TrimPrefix(strings.TrimSpace(line), "#"), " ")
		}
		if body, ok := strings.CutSuffix(line, "\\"); ok {
			cmd.WriteString(body)
			continue
		}
		cmd.WriteString(line)
		break
	}
	return cmd.String()
}

// TestReadmeCommands runs the commands README.md and the examples show, as
// written, from the repository root: `go install ./cmd/stratum` puts the
// binary in $(go env GOPATH)/bin, and with that directory on PATH the main
// job and the iterate example complete with the example agent.
func TestReadmeCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and installs the stratum binary")
	}
	readme := readRepoFile(t, "README.md")
	if !strings.Contains(readme, "`go install ./cmd/stratum`") || !strings.Contains(readme, "`$(go env GOPATH)/bin`") {
		t.Fatal("README.md no longer says where go install puts the binary; update this test")
	}
	modcache, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	gopath := filepath.Join(dir, "gopath")
	env := append(os.Environ(), "GOPATH="+gopath, "GOBIN=", "GOMODCACHE="+strings.TrimSpace(string(modcache)),
		"STRATUM_HOME="+filepath.Join(dir, "home"), "STRATUM_STATE_ROOT=", "STRATUM_JUDGE_COMMAND=")
	sh := func(cmdline string, env []string) string {
		t.Helper()
		cmd := exec.Command("sh", "-c", cmdline)
		cmd.Dir, cmd.Env = "..", env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", cmdline, err, out)
		}
		return string(out)
	}
	sh("go install ./cmd/stratum", env)
	bin := strings.TrimSpace(sh("echo $(go env GOPATH)/bin", env))
	if bin != filepath.Join(gopath, "bin") {
		t.Fatalf("$(go env GOPATH)/bin is %s, want %s", bin, filepath.Join(gopath, "bin"))
	}
	if _, err := os.Stat(filepath.Join(bin, "stratum")); err != nil {
		t.Fatalf("go install did not put stratum in $(go env GOPATH)/bin: %v", err)
	}
	withPath := append(env, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))

	tests := []struct{ file, prefix, want string }{
		{"README.md", "go run ./cmd/stratum run examples/quickstart.stratum.yaml", "draft: attempt 2 accepted"},
		{"examples/iterate.stratum.yaml", "stratum run examples/iterate.stratum.yaml", "improve: attempt 2 accepted"},
	}
	for _, tt := range tests {
		cmdline := commandAt(t, readRepoFile(t, tt.file), tt.prefix)
		if out := sh(cmdline, withPath); !strings.Contains(out, tt.want) || !strings.Contains(out, " completed\n") {
			t.Errorf("%s (from %s) did not complete as shown:\n%s", cmdline, tt.file, out)
		}
	}
}

// TestReadmeCodexConfig: the Codex table of README.md and docs/mcp.md
// forwards no variable, since `codex doctor` warns about a forwarded
// variable that is not set and Stratum needs none by default.
func TestReadmeCodexConfig(t *testing.T) {
	for _, name := range []string{"README.md", "docs/mcp.md"} {
		text := readRepoFile(t, name)
		_, block, ok := strings.Cut(text, "```toml\n[mcp_servers.stratum]\n")
		if !ok {
			t.Fatalf("%s shows no [mcp_servers.stratum] table", name)
		}
		block, _, _ = strings.Cut(block, "```")
		if !strings.Contains(block, `command = "stratum"`) || !strings.Contains(block, `args = ["mcp"]`) {
			t.Errorf("%s: the Codex table does not start stratum mcp:\n%s", name, block)
		}
		if strings.Contains(block, "env_vars") {
			t.Errorf("%s: the Codex table forwards variables a reader may not have set:\n%s", name, block)
		}
	}
}
