package cli

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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

// installed is a stratum installed as README.md says, with an
// environment that finds it on PATH and keeps runs in a fresh home.
type installed struct {
	t   *testing.T
	env []string // with PATH
}

// install runs `go install ./cmd/stratum` as README.md says, into a fresh
// GOPATH, and checks that it lands in $(go env GOPATH)/bin.
func install(t *testing.T) *installed {
	t.Helper()
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
		"STRATUM_HOME="+filepath.Join(dir, "home"), "STRATUM_STATE_ROOT=", "STRATUM_JUDGE_COMMAND=",
		"USER=alice") // the person a gate decision records by default
	in := &installed{t: t, env: env}
	in.sh("go install ./cmd/stratum")
	bin := strings.TrimSpace(in.sh("echo $(go env GOPATH)/bin"))
	if bin != filepath.Join(gopath, "bin") {
		t.Fatalf("$(go env GOPATH)/bin is %s, want %s", bin, filepath.Join(gopath, "bin"))
	}
	if _, err := os.Stat(filepath.Join(bin, "stratum")); err != nil {
		t.Fatalf("go install did not put stratum in $(go env GOPATH)/bin: %v", err)
	}
	in.env = append(env, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	return in
}

// sh runs a command line with sh from the repository root and returns
// its output; it fails the test unless the command succeeds.
func (in *installed) sh(cmdline string) string {
	in.t.Helper()
	out, code := in.run(cmdline)
	if code != 0 {
		in.t.Fatalf("%s: exit status %d\n%s", cmdline, code, out)
	}
	return out
}

// run runs a command line (a script) with sh from the repository root.
func (in *installed) run(script string) (string, int) {
	in.t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir, cmd.Env = "..", in.env
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return string(out), ee.ExitCode()
	case err != nil:
		in.t.Fatalf("%s: %v", script, err)
	}
	return string(out), 0
}

// readmeRuns are the commands TestReadmeCommands runs: the file that
// shows each, how it starts, and what its output says.
var readmeRuns = []struct{ file, prefix, want string }{
	{"README.md", "go run ./cmd/stratum run examples/quickstart.stratum.yaml", "draft: attempt 2 accepted"},
	{"examples/iterate.stratum.yaml", "stratum run examples/iterate.stratum.yaml", "improve: attempt 2 accepted"},
}

// readmeTour is the shell block of README.md's tour, which TestReadmeTour
// runs.
func readmeTour(t *testing.T, readme string) string {
	t.Helper()
	_, tour, ok := strings.Cut(readme, "### A tour")
	if !ok {
		t.Fatal("README.md has no tour")
	}
	_, tour, _ = strings.Cut(tour, "```sh\n")
	tour, _, _ = strings.Cut(tour, "```")
	return tour
}

// TestReadmeCommands runs the commands README.md and the examples show, as
// written, from the repository root: `go install ./cmd/stratum` puts the
// binary in $(go env GOPATH)/bin, and with that directory on PATH the main
// job and the iterate example complete with the example agent.
func TestReadmeCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and installs the stratum binary")
	}
	in := install(t)
	for _, tt := range readmeRuns {
		cmdline := commandAt(t, readRepoFile(t, tt.file), tt.prefix)
		if out := in.sh(cmdline); !strings.Contains(out, tt.want) || !strings.Contains(out, " completed\n") {
			t.Errorf("%s (from %s) did not complete as shown:\n%s", cmdline, tt.file, out)
		}
	}
}

// TestReadmeTour runs the tour of README.md as written, one shell session
// from the repository root: the run stops at its gate (3), gate show
// prints what the gate reviews with its digest, the approval on that
// digest is recorded, the resumed run completes and watch, started
// meanwhile ("in another terminal": here in the background), follows it
// to the end (0); diff says the agent changed nothing (1); every other
// command succeeds. The dot line is skipped when Graphviz is missing.
func TestReadmeTour(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and installs the stratum binary")
	}
	for _, tool := range []string{"jq", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("the tour needs %s", tool)
		}
	}
	tour := readmeTour(t, readRepoFile(t, "README.md"))
	in := install(t)
	_, hasDot := exec.LookPath("dot")
	var script strings.Builder
	var lines []string
	for line := range strings.Lines(tour) {
		line = strings.TrimRight(line, "\n")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		n := len(lines)
		lines = append(lines, line)
		switch {
		case strings.HasPrefix(line, "stratum watch "):
			cmd, _, _ := strings.Cut(line, "#")
			fmt.Fprintf(&script, "%s > \"$WATCH_OUT\" 2>&1 & watch=$!\n", strings.TrimSpace(cmd))
		case strings.Contains(line, "| dot ") && hasDot != nil:
			fmt.Fprintf(&script, "echo '__exit %d skipped'\n", n)
			continue
		default:
			fmt.Fprintf(&script, "%s\necho \"__exit %d $?\"\n", line, n)
		}
	}
	script.WriteString("wait $watch; echo \"__watch $?\"\n")
	watchOut := filepath.Join(t.TempDir(), "watch.out")
	in.env = append(in.env, "WATCH_OUT="+watchOut)
	out, _ := in.run(script.String())
	statuses := map[string]string{}
	for l := range strings.Lines(out) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l), "__exit "); ok {
			i, status, _ := strings.Cut(rest, " ")
			statuses[i] = status
		}
	}
	for i, line := range lines {
		want := "0"
		switch {
		case strings.HasPrefix(line, "stratum watch "):
			continue
		case strings.HasPrefix(line, "stratum run ") && strings.Contains(line, "--gate stop"):
			want = "3"
		case strings.HasPrefix(line, "stratum diff "):
			want = "1"
		case strings.Contains(line, "| dot ") && hasDot != nil:
			want = "skipped"
		}
		if got := statuses[strconv.Itoa(i)]; got != want {
			t.Errorf("%s: exit status %q, want %s", line, got, want)
		}
	}
	for _, want := range []string{
		"review: gate waiting for a decision",
		"\nunder review:\n  work (succeeded)\n    task:\n      Produce the deliverable requested in a haiku\n",
		"decide: stratum gate approve|reject|revise ",
		`"outcome": "approve"`,
		"stratum diff: work attempt 1 changed nothing in the workspace",
		"review: gate resolved: approve (by alice: looks good) [digest ",
		"chain: intact",
		"flowchart",
		"__watch 0",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the tour's output lacks %q:\n%s", want, out)
		}
	}
	if w, err := os.ReadFile(watchOut); err != nil || !strings.Contains(string(w), "  completed\n") {
		t.Errorf("watch did not follow the run to its end (%v):\n%s", err, w)
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
