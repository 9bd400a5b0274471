package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stratum-go/stratum/internal/pgtest"
)

// docsRun is what the tours of TestDocsCommandsRun share.
type docsRun struct {
	goEnv []string        // see goEnvFor
	used  map[string]bool // the docExpectations and docRewrites that matched
	// named are the results of the commands the prose names without
	// arguments (`stratum run`, `stratum mcp`), by their text: the same
	// words run once, wherever a doc names them, since their result does
	// not depend on a tour's state.
	named map[string]docResult
}

type docResult struct {
	where, out string
	code       int
}

// docTour is one doc's commands running in order.
type docTour struct {
	t    *testing.T
	run  *docsRun
	file string
	tmp  string // the tour's temporary directory
	dir  string // where the tour starts
	cwd  string // where its next command runs (a cd carries over)
	env  []string
	vals map[string]string // placeholder values made so far
}

// goEnvFor is the Go environment the real one uses (build and module
// caches), for a doc that builds a program with go build under a fresh
// HOME.
func goEnvFor(t *testing.T) []string {
	out, err := exec.Command("go", "env", "GOCACHE", "GOMODCACHE", "GOPATH").Output()
	if err != nil {
		t.Fatal(err)
	}
	v := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(v) != 3 {
		t.Fatalf("go env: %q", out)
	}
	return []string{"GOCACHE=" + v[0], "GOMODCACHE=" + v[1], "GOPATH=" + v[2]}
}

func newDocTour(t *testing.T, file string, run *docsRun) *docTour {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "work")
	home := filepath.Join(tmp, "home")
	bin := filepath.Join(tmp, "bin")
	for _, d := range []string{dir, home, bin} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	// What docs commands name of the repository: its top-level files
	// (README.md, go.mod for go build) and examples/, copied, so that no
	// command can change the repository and a workspace jail finds them
	// inside it.
	// A doc of docModuleCopies has the whole module.
	_, module := docModuleCopies[file]
	for _, e := range entries {
		if e.Name() != ".git" && (e.Type().IsRegular() || e.Name() == "examples" || module) {
			copyTree(t, filepath.Join(root, e.Name()), filepath.Join(dir, e.Name()))
		}
	}
	copyTree(t, filepath.Join("testdata", "docs", "bin"), bin)
	copyTree(t, filepath.Join("testdata", "docs", "home"), home)
	// ssh-keygen makes ~/.ssh when a key is saved there, but the ~ of the
	// user's passwd entry, not $HOME: the fresh HOME has it as it would.
	if err := os.Mkdir(filepath.Join(home, ".ssh"), 0o700); err != nil {
		t.Fatal(err)
	}
	askpass, err := filepath.Abs(filepath.Join("testdata", "docs", "askpass.sh"))
	if err != nil {
		t.Fatal(err)
	}
	writeDocFiles(t, filepath.Join(root, docPath(file)), home)
	copyTree(t, filepath.Join("testdata", "docs", strings.TrimSuffix(file, ".md")), dir)
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return strings.HasPrefix(k, "STRATUM_") || k == "HOME" || k == "PATH" || k == "USER" ||
			k == "SSH_AUTH_SOCK" || k == "SSH_ASKPASS" || k == "SSH_ASKPASS_REQUIRE"
	})
	env = append(env, run.goEnv...)
	// No ssh-agent (docs/guard.md: do not add the key to one), and the
	// passphrase prompts of ssh-keygen answered by testdata/docs/askpass.sh,
	// the tour's stdin being no terminal.
	env = append(env, "SSH_ASKPASS="+askpass, "SSH_ASKPASS_REQUIRE=force")
	env = append(env, "HOME="+home, "USER=alice",
		"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	return &docTour{t: t, run: run, file: file, tmp: tmp, dir: dir, cwd: dir, env: env, vals: map[string]string{}}
}

// docPath is the path of a docs file from the repository root.
func docPath(file string) string {
	if file == "README.md" {
		return file
	}
	return filepath.Join("docs", file)
}

// writeDocFiles writes the files a doc shows in its YAML blocks under the
// name their first line gives, in the reader's home ("# ~/.config/
// stratum/policy.yaml"), so that its commands read what it shows.
func writeDocFiles(t *testing.T, path, home string) {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, block := range strings.Split(string(b), "```yaml\n")[1:] {
		block, _, _ = strings.Cut(block, "```")
		first, _, _ := strings.Cut(block, "\n")
		name, ok := strings.CutPrefix(first, "# ~/")
		if !ok {
			continue
		}
		dst := filepath.Join(home, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, []byte(block), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// copyTree copies the file from, or the files of the directory from, to
// to, keeping their modes; a from that does not exist copies nothing.
func copyTree(t *testing.T, from, to string) {
	err := filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && path == from {
			return fs.SkipAll
		}
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, info.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
}

// exec runs one docs command and checks what it did.
func (tr *docTour) exec(c docCommand) {
	t := tr.t
	t.Helper()
	used := tr.run.used
	where := fmt.Sprintf("%s:%d: %s", tr.file, c.line, c.text)
	script := c.script
	for _, r := range docRewrites {
		if r.file == tr.file && strings.Contains(script, r.from) {
			script = strings.ReplaceAll(script, r.from, strings.ReplaceAll(r.to, "{tmp}", tr.tmp))
			used["rewrite "+r.file+": "+r.from] = true
		}
	}
	for _, s := range docSetups {
		if s.file == tr.file && s.before == c.text {
			used["setup "+s.file+": "+s.before] = true
			out, code := tr.sh(strings.ReplaceAll(s.script, "{tmp}", tr.tmp), nil)
			if code != 0 || !containsInOrder(out, s.want) {
				t.Fatalf("%s: the setup before it (%s): exit status %d, want 0 with %q:\n%s", where, s.why, code, s.want, out)
			}
		}
	}
	script = placeholderWord.ReplaceAllStringFunc(script, tr.value)
	var want *docExpectation
	for i, e := range docExpectations {
		if e.file == tr.file && e.command == c.text {
			want = &docExpectations[i]
			used["expect "+e.file+": "+e.command] = true
		}
	}
	args := shellWords(c.text)
	named := c.inline && !placeholderWord.MatchString(c.text)
	prev, seen := tr.run.named[c.text]
	switch {
	case len(args) > 1 && args[1] == "serve":
		if named && seen {
			t.Logf("%s: as at %s", where, prev.where)
			return
		}
		tr.serve(where, script)
		tr.run.named[c.text] = docResult{where: where}
		return
	case strings.Contains(script, "{dsn}"):
		t.Run(fmt.Sprintf("line%d", c.line), func(t *testing.T) {
			dsn := pgtest.DSN(t)
			out, code := tr.sh(strings.ReplaceAll(script, "{dsn}", dsn), nil)
			tr.check(t, where, c, want, out, code)
			// The run is in that database, not in a directory.
			flows, code := tr.sh("stratum query flows", nil, EnvStore+"="+dsn)
			var f []struct {
				Status string `json:"status"`
			}
			if code != 0 || json.Unmarshal([]byte(flows), &f) != nil || len(f) != 1 {
				t.Fatalf("%s: the database holds no run: stratum query flows: exit status %d:\n%s", where, code, flows)
			}
			t.Logf("%s: exit 0 on PostgreSQL, which then holds the run (%s)", where, f[0].Status)
		})
		return
	}
	var stdin io.Reader
	if len(args) > 1 && args[1] == "mcp" {
		stdin = strings.NewReader(mcpRequests)
	}
	var out string
	var code int
	if named && seen {
		out, code = prev.out, prev.code
		t.Logf("%s: exit %d as at %s", where, code, prev.where)
	} else {
		start := time.Now()
		out, code = tr.sh(script, stdin)
		first, _, _ := strings.Cut(strings.TrimSpace(out), "\n")
		t.Logf("%s: exit %d in %v: %.100s", where, code, time.Since(start).Round(time.Millisecond), first)
		if named {
			tr.run.named[c.text] = docResult{where: where, out: out, code: code}
		}
	}
	tr.check(t, where, c, want, out, code)
	if want != nil && want.againWant != "" {
		i := strings.Index(script, want.againFrom)
		if i < 0 {
			t.Fatalf("%s: docExpectations: no %q in its script to run again:\n%s", where, want.againFrom, script)
		}
		out, code = tr.sh(script[i:], stdin)
		if code != want.againExit || !containsInOrder(out, want.againWant) {
			t.Errorf("%s: run again: exit status %d, want %d with %q (%s):\n%s", where, code, want.againExit, want.againWant, want.againWhy, out)
		} else {
			t.Logf("%s: run again: exit %d: %s", where, code, out)
		}
	}
	if len(args) > 1 && args[1] == "mcp" && code == 0 && !strings.Contains(out, `"name":"stratum_plan"`) {
		t.Errorf("%s: stratum mcp did not list its tools on stdio:\n%s", where, out)
	}
}

// mcpRequests is what an MCP client says first: initialize, then
// tools/list; the end of stdin then ends the server.
const mcpRequests = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"docs","version":"0"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/list"}
`

// check holds a command's exit status and output to what is expected of
// it.
func (tr *docTour) check(t *testing.T, where string, c docCommand, want *docExpectation, out string, code int) {
	t.Helper()
	switch {
	case want != nil:
		if code != want.exit || !containsInOrder(out, want.want) {
			t.Errorf("%s: exit status %d, want %d with %q (%s):\n%s", where, code, want.exit, want.want, want.why, out)
		}
	case code == 0:
	case c.inline && code == ExitUsage && tr.asksForArguments(c, out):
	case c.inline && code == ExitFailure && guardAsksForArguments(c, out):
	default:
		t.Errorf("%s: exit status %d:\n%s", where, code, out)
	}
}

// containsInOrder tells whether out holds the parts of want between its
// elisions ("…", as the docs show output) in that order.
func containsInOrder(out, want string) bool {
	for part := range strings.SplitSeq(want, "…") {
		i := strings.Index(out, part)
		if i < 0 {
			return false
		}
		out = out[i+len(part):]
	}
	return true
}

// asksForArguments tells whether out is what a command named in the prose
// without its arguments prints: its usage line, starting with the words
// the doc quotes (`stratum gate show`: "usage: stratum gate show|..."), and
// with any flags the doc quotes (`stratum run --gate ask`) the same
// complaint as without them, so that the flags were all accepted.
func (tr *docTour) asksForArguments(c docCommand, out string) bool {
	args := shellWords(c.text)
	if len(args) < 2 {
		return false
	}
	cmd := lookup(args[1])
	if cmd == nil {
		return false
	}
	fs := flag.NewFlagSet(args[1], flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cmd.SetFlags(fs)
	positional, err := parseInterspersed(fs, args[2:])
	if err != nil || placeholderWord.MatchString(strings.Join(positional, " ")) {
		return false // a placeholder argument is a value to run with, not a mention
	}
	words := strings.Join(append([]string{"stratum", args[1]}, positional...), " ")
	if !strings.Contains(out, "\nusage: "+words) {
		return false
	}
	if len(positional) == len(args)-2 {
		return true // no flags
	}
	bare, code := tr.sh(words, nil)
	return code == ExitUsage && bare == out
}

// guardAsksForArguments tells whether out is what stratum guard, named in
// the prose without its JSON on stdin, prints: a missing action, or the
// action's first missing argument (docs/guard.md: exit 1 for an error).
func guardAsksForArguments(c docCommand, out string) bool {
	args := shellWords(c.text)
	if len(args) < 2 || args[1] != "guard" || placeholderWord.MatchString(c.text) {
		return false
	}
	if len(args) == 2 {
		return strings.HasPrefix(out, "Missing guard action.")
	}
	return len(args) == 3 && strings.Contains(out, `"status":"error","error_type":"invalid_argument","message":"missing required guard argument`)
}

// sh runs script with sh -e in the tour's current directory, with stdin
// (or none) and the tour's environment plus env, and returns its output
// and exit status; the directory it ends in is where the next command
// runs.
func (tr *docTour) sh(script string, stdin io.Reader, env ...string) (string, int) {
	t := tr.t
	t.Helper()
	cwdFile := filepath.Join(tr.tmp, "cwd")
	// A bound on a command that would wait for ever (for a person, for
	// input), so that the failure names it; not a measure of speed.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// set -e: a line before the command that fails (a command the doc
	// shows that does not exist, its output shown as if it were one)
	// fails the command, as it would stop a reader pasting the block.
	cmd := exec.CommandContext(ctx, "sh", "-c", "set -e\ntrap 'pwd > \"$DOCS_CWD\"' EXIT\n"+script)
	cmd.Dir, cmd.Stdin, cmd.WaitDelay = tr.cwd, stdin, 5*time.Second
	cmd.Env = append(append(slices.Clip(tr.env), "DOCS_CWD="+cwdFile), env...)
	out, err := cmd.CombinedOutput()
	code := 0
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("%s: did not finish in 2 minutes (waiting for input?):\n%s", script, out)
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("%s: %v", script, err)
	}
	if b, err := os.ReadFile(cwdFile); err == nil {
		tr.cwd = strings.TrimSpace(string(b))
	}
	return string(out), code
}

// value is the value of a placeholder, made the first time it is needed.
func (tr *docTour) value(word string) string {
	t := tr.t
	t.Helper()
	if v, ok := tr.vals[word]; ok {
		return v
	}
	switch word {
	case "RUN", "STEP", "HASH", "DIR":
		tr.makeRun()
	case "ID":
		tr.vals["ID"] = "compose:FEAT-1"
	case "HEAD":
		out, code := tr.sh("stratum guard verify "+tr.value("ID"), nil)
		var v struct{ Head string }
		if code != 0 || json.Unmarshal([]byte(out), &v) != nil || v.Head == "" {
			t.Fatalf("stratum guard verify %s (for HEAD): exit status %d:\n%s", tr.value("ID"), code, out)
		}
		tr.vals["HEAD"] = v.Head
	}
	v, ok := tr.vals[word]
	if !ok {
		t.Fatalf("no value for the placeholder %s", word)
	}
	return v
}

// makeRun makes the run RUN, STEP, HASH and DIR stand for: a flow whose
// step work writes a file in a git workspace, stopped at its gate.
func (tr *docTour) makeRun() {
	t := tr.t
	t.Helper()
	fix, err := filepath.Abs(filepath.Join("testdata", "docs"))
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(filepath.Dir(tr.dir), "workspace")
	script := fmt.Sprintf(`mkdir %[1]s && cd %[1]s && git init -q && git -c user.name=t -c user.email=t@t commit -q --allow-empty -m init &&
stratum run %[2]s/run.yaml --workspace %[1]s --agent 'sh %[2]s/run-agent.sh' --gate stop`, ws, fix)
	out, code := tr.sh("("+script+")", nil)
	if code != 3 {
		t.Fatalf("the run for RUN: exit status %d, want 3 (stopped at its gate):\n%s", code, out)
	}
	gates, code := tr.sh("stratum query gates", nil)
	var g []struct {
		FlowID string `json:"flow_id"`
	}
	if code != 0 || json.Unmarshal([]byte(gates), &g) != nil || len(g) != 1 {
		t.Fatalf("stratum query gates (for RUN): exit status %d:\n%s", code, gates)
	}
	head, code := tr.sh("stratum audit --head --json "+g[0].FlowID, nil)
	var h struct {
		Head struct{ Hash string }
	}
	if code != 0 || json.Unmarshal([]byte(head), &h) != nil || h.Head.Hash == "" {
		t.Fatalf("stratum audit --head (for HASH): exit status %d:\n%s", code, head)
	}
	tr.vals["RUN"], tr.vals["STEP"], tr.vals["HASH"], tr.vals["DIR"] = g[0].FlowID, "work", h.Head.Hash, ws
}

// serve starts stratum serve as the doc shows it, on a free port rather
// than its default (a fixed port would collide with other tests), reads
// the address it prints, fetches the page it says to open and stops it.
func (tr *docTour) serve(where, script string) {
	t := tr.t
	t.Helper()
	if strings.ContainsAny(script, "\n|;&<>") {
		t.Fatalf("%s: serve runs as a command alone, not in a script:\n%s", where, script)
	}
	cmd := exec.Command("sh", "-c", "exec "+script+" --addr 127.0.0.1:0")
	cmd.Dir, cmd.Env = tr.cwd, tr.env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	sc := bufio.NewScanner(stdout)
	open := ""
	for sc.Scan() {
		if u, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "open: "); ok {
			open = u
			break
		}
	}
	if open == "" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Errorf("%s: stratum serve printed no address to open:\n%s", where, stderr.String())
		return
	}
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	// The token in the address becomes a cookie for the page it leads to.
	client := &http.Client{Jar: jar, Timeout: time.Minute}
	resp, err := client.Get(open)
	if err != nil {
		t.Errorf("%s: GET %s: %v", where, open, err)
		return
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte("<html")) {
		t.Errorf("%s: GET %s: %s:\n%.500s", where, open, resp.Status, body)
		return
	}
	t.Logf("%s: printed %s, which answered %s", where, open, resp.Status)
}
