package evidence

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stratum-go/stratum/internal/proctest"
)

func mustParse(t *testing.T, src string) Call {
	t.Helper()
	c, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

type evalCase struct {
	stmt     string
	met      bool
	evidence string // substring
}

func runCases(t *testing.T, env Env, cases []evalCase) {
	t.Helper()
	for _, c := range cases {
		r := Evaluate(context.Background(), mustParse(t, c.stmt), env)
		if r.Met != c.met || !strings.Contains(r.Evidence, c.evidence) {
			t.Errorf("%s = {met %v, %q}, want met %v with %q", c.stmt, r.Met, r.Evidence, c.met, c.evidence)
		}
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// TestFileEvidence runs the file builtins against real files and symlinks
// inside and outside the workspace.
func TestFileEvidence(t *testing.T) {
	tmp := t.TempDir()
	root := filepath.Join(tmp, "ws")
	outside := filepath.Join(tmp, "secret")
	write(t, filepath.Join(root, "docs", "plan.md"), "## Plan\nship café\n")
	write(t, filepath.Join(root, "δ", "😀.md"), "emoji")
	write(t, filepath.Join(outside, "key.txt"), "top secret")
	if err := os.Mkdir(filepath.Join(root, "emptydir"), 0o755); err != nil {
		t.Fatal(err)
	}
	symlink(t, "docs/plan.md", filepath.Join(root, "rel-link.md"))                         // in → in (relative)
	symlink(t, filepath.Join(root, "docs", "plan.md"), filepath.Join(root, "abs-link.md")) // in → in (absolute)
	symlink(t, filepath.Join(outside, "key.txt"), filepath.Join(root, "leak.txt"))         // in → out
	symlink(t, outside, filepath.Join(root, "leakdir"))                                    // dir in → out
	symlink(t, "../secret/nothing", filepath.Join(root, "dangling"))                       // dangling, pointing out
	symlink(t, "loop", filepath.Join(root, "loop"))                                        // self loop
	symlink(t, root, filepath.Join(tmp, "alias"))                                          // out → the root
	write(t, filepath.Join(root, "bin.dat"), "a\xffb")

	env := Env{WorkspaceRoot: root}
	runCases(t, env, []evalCase{
		{`server_file_exists('docs/plan.md')`, true, "docs/plan.md exists"},
		{`server_file_exists('./docs/../docs/plan.md')`, true, "exists"},
		{`server_file_exists('δ/😀.md')`, true, "exists"},
		{`server_file_exists('docs/none.md')`, false, "docs/none.md missing"},
		{`server_file_exists('nodir/none/x.md')`, false, "missing"},
		{`server_file_exists('emptydir')`, false, "emptydir missing"}, // a directory is not a file
		{`server_file_exists('')`, false, "missing"},
		{`server_file_exists('rel-link.md')`, true, "exists"},
		{`server_file_exists('abs-link.md')`, true, "exists"},
		{`server_file_exists('leak.txt')`, false, "path escapes workspace_root: 'leak.txt'"},
		{`server_file_exists('leakdir/key.txt')`, false, "path escapes workspace_root"},
		{`server_file_exists('leakdir/none/deeper')`, false, "path escapes workspace_root"},
		{`server_file_exists('../secret/key.txt')`, false, "path escapes workspace_root: '../secret/key.txt'"},
		{`server_file_exists('docs/../../secret/key.txt')`, false, "path escapes"},
		{`server_file_exists('../alias/docs/plan.md')`, false, "path escapes"}, // out lexically, though it leads back in
		{`server_file_exists('` + filepath.Join(outside, "key.txt") + `')`, false, "path escapes"},
		{`server_file_exists('` + filepath.Join(root, "docs", "plan.md") + `')`, true, "exists"}, // absolute but inside
		{`server_file_exists('dangling')`, false, "cannot resolve"},
		{`server_file_exists('dangling/x')`, false, "cannot resolve"},
		{`server_file_exists('loop')`, false, "cannot resolve"},
		{`server_file_exists('a\0b')`, false, "NUL"},
		{`server_file_exists('a', 'b')`, false, "expects one string"},
		{`server_file_exists(['a'])`, false, "expects one string"},
		{`server_file_contains('docs/plan.md', 'ship café')`, true, "contains"},
		{`server_file_contains('docs/plan.md', '')`, true, "contains"},
		{`server_file_contains('docs/plan.md', 'nope')`, false, "does not contain"},
		{`server_file_contains('rel-link.md', '## Plan')`, true, "contains"},
		{`server_file_contains('leak.txt', 'secret')`, false, "path escapes"},
		{`server_file_contains('emptydir', 'x')`, false, "missing"},
		{`server_file_contains('gone.md', 'x')`, false, "gone.md missing"},
		{`server_file_contains('bin.dat', 'a\ufffdb')`, true, "contains"},
		{`server_file_contains('docs/plan.md')`, false, "expects two string"},
	})

	// A named pipe in place of the file: refused at once, never a hang
	// waiting for a writer.
	switch err := proctest.Mkfifo(filepath.Join(root, "pipe.md")); {
	case errors.Is(err, errors.ErrUnsupported):
		t.Log(err) // no FIFO to refuse on this platform
	case err != nil:
		t.Fatal(err)
	default:
		done := make(chan Result, 1)
		go func() {
			done <- Evaluate(context.Background(), mustParse(t, `server_file_contains('pipe.md', 'x')`), env)
		}()
		select {
		case r := <-done:
			if r.Met || !strings.Contains(r.Evidence, "pipe.md missing") {
				t.Errorf("fifo: %+v", r)
			}
		case <-time.After(10 * time.Second):
			// Unblock the stuck open so the test process can finish.
			if w, err := os.OpenFile(filepath.Join(root, "pipe.md"), os.O_WRONLY, 0); err == nil {
				w.Close()
			}
			t.Fatal("server_file_contains blocked on a FIFO")
		}
		runCases(t, env, []evalCase{{`server_file_exists('pipe.md')`, false, "pipe.md missing"}})
	}

	// The workspace root itself reached through a symlink: paths are judged
	// against its real location.
	viaLink := filepath.Join(tmp, "ws-link")
	symlink(t, root, viaLink)
	runCases(t, Env{WorkspaceRoot: viaLink}, []evalCase{
		{`server_file_exists('docs/plan.md')`, true, "exists"},
		{`server_file_exists('abs-link.md')`, true, "exists"},
		{`server_file_exists('leak.txt')`, false, "path escapes"},
	})

	// No workspace registered.
	runCases(t, Env{}, []evalCase{
		{`server_file_exists('docs/plan.md')`, false, noWorkspace},
		{`git_commit_exists('HEAD')`, false, noWorkspace},
		{`command_exit_zero(['true'])`, false, noWorkspace},
	})
}

// TestResolve holds Resolve to both of its checks on its own (through
// Evaluate, either one and the later os.Root access stand in for each
// other): a path that leaves the root lexically is refused even when a
// symlink outside leads back in, and a path that leaves it through a
// symlink is refused even though it is inside lexically.
func TestResolve(t *testing.T) {
	tmp := t.TempDir()
	root := filepath.Join(tmp, "ws")
	write(t, filepath.Join(root, "plan.md"), "x")
	write(t, filepath.Join(tmp, "secret", "key.txt"), "s")
	symlink(t, root, filepath.Join(tmp, "alias"))                        // out -> the root itself
	symlink(t, filepath.Join(tmp, "secret"), filepath.Join(root, "out")) // in -> out
	realRoot := mustReal(t, root)
	for _, c := range []struct {
		path, want string // want "" means ErrEscapes
	}{
		{"plan.md", filepath.Join(realRoot, "plan.md")},
		{"new/file", filepath.Join(realRoot, "new", "file")},
		{"../alias/plan.md", ""},
		{filepath.Join(tmp, "alias", "plan.md"), ""},
		{"out/key.txt", ""},
		{"out", ""},
	} {
		got, err := Resolve(root, c.path)
		switch {
		case c.want == "" && !errors.Is(err, ErrEscapes):
			t.Errorf("Resolve(%q) = %q, %v; want ErrEscapes", c.path, got, err)
		case c.want != "" && (err != nil || got != c.want):
			t.Errorf("Resolve(%q) = %q, %v; want %q", c.path, got, err, c.want)
		}
	}
}

func TestResolveRootSlash(t *testing.T) {
	real, err := Resolve("/", "etc")
	if err != nil || real != "/etc" {
		t.Fatalf("Resolve(/, etc) = %q, %v", real, err)
	}
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=T", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func TestGitEvidence(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is required for the evidence tests")
	}
	repo := t.TempDir()
	git(t, repo, "init", "-q")
	write(t, filepath.Join(repo, "a.txt"), "a")
	git(t, repo, "add", "a.txt")
	git(t, repo, "commit", "-q", "-m", "first")
	sha := git(t, repo, "rev-parse", "HEAD")
	git(t, repo, "branch", "feature")
	blob := git(t, repo, "rev-parse", "HEAD:a.txt")
	sub := filepath.Join(repo, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}

	runCases(t, Env{WorkspaceRoot: repo}, []evalCase{
		{`git_commit_exists('HEAD')`, true, "commit HEAD present"},
		{`git_commit_exists('` + sha + `')`, true, "commit " + sha[:12] + " present"},
		{`git_commit_exists('` + sha[:7] + `')`, true, "present"},
		{`git_commit_exists('feature')`, true, "present"},
		{`git_commit_exists('HEAD~1')`, false, "commit HEAD~1 absent"},
		{`git_commit_exists('` + strings.Repeat("0", 40) + `')`, false, "absent"},
		{`git_commit_exists('` + blob + `')`, false, "absent"}, // a blob is not a commit
		{`git_commit_exists('nosuchbranch')`, false, "absent"},
		{`git_commit_exists()`, false, "expects one string"},
		// Never passed to git as an option.
		{`git_commit_exists('--all')`, false, `revision "--all" starts with '-'`},
		{`git_commit_exists('-h')`, false, "starts with '-'"},
	})
	runCases(t, Env{WorkspaceRoot: sub}, []evalCase{{`git_commit_exists('HEAD')`, true, "present"}})
	runCases(t, Env{WorkspaceRoot: t.TempDir()}, []evalCase{{`git_commit_exists('HEAD')`, false, "absent"}})
	runCases(t, Env{WorkspaceRoot: filepath.Join(repo, "missing-dir")}, []evalCase{{`git_commit_exists('HEAD')`, false, "git rev-parse failed"}})
}

func TestCommandEvidence(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "ok.sh"), "#!/bin/sh\ntest -f marker\n")
	if err := os.Chmod(filepath.Join(root, "ok.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := Env{WorkspaceRoot: root, AllowCommands: true, CommandTimeout: 20 * time.Second}
	runCases(t, env, []evalCase{
		{`command_exit_zero(['true'])`, true, "true exited 0"},
		{`command_exit_zero(['false'])`, false, "false exited 1"},
		{`command_exit_zero(['sh', '-c', 'exit 7'])`, false, "sh exited 7"},
		{`command_exit_zero(['sh', '-c', 'kill -TERM $$'])`, false, "killed by signal"},
		{`command_exit_zero(['./ok.sh'])`, false, "./ok.sh exited 1"}, // relative to the workspace
		{`command_exit_zero(['no-such-program-xyz'])`, false, "command failed"},
		{`command_exit_zero([])`, false, "non-empty"},
		{`command_exit_zero('true')`, false, "expects one list"},
		{`command_exit_zero(['sh', '-c', 'test "$(pwd -P)" = "` + mustReal(t, root) + `"'])`, true, "exited 0"},
		// Arguments are passed as is, never through a shell.
		{`command_exit_zero(['test', '$HOME', '=', '$HOME'])`, true, "exited 0"},
	})
	write(t, filepath.Join(root, "marker"), "")
	runCases(t, env, []evalCase{{`command_exit_zero(['./ok.sh'])`, true, "exited 0"}})

	off := env
	off.AllowCommands = false
	runCases(t, off, []evalCase{{`command_exit_zero(['true'])`, false, "command execution disabled"}})
}

func mustReal(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestCommandTimeoutKillsGroup runs a command that hangs past the timeout
// and has started a background grandchild: both must be killed. No
// duration is compared: without the timeout the command would exit 0 after
// its grandchild's minute, which the verdict check refuses.
func TestCommandTimeoutKillsGroup(t *testing.T) {
	root := t.TempDir()
	pidFile := filepath.Join(root, "grandchild.pid")
	env := Env{WorkspaceRoot: root, AllowCommands: true, CommandTimeout: 300 * time.Millisecond}
	c := mustParse(t, `command_exit_zero(['sh', '-c', 'sleep 60 & echo $! > grandchild.pid; wait'])`)
	r := Evaluate(context.Background(), c, env)
	if r.Met || !strings.Contains(r.Evidence, "timed out") {
		t.Fatalf("hung command = %+v, want a timeout", r)
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid)
}

// waitGone waits until pid no longer runs (gone, or a zombie awaiting its
// reaper).
func waitGone(t *testing.T, pid int) {
	t.Helper()
	if !proctest.WaitGone(pid, 10*time.Second) {
		proctest.Kill(pid)
		t.Fatalf("process %d still running after the timeout", pid)
	}
}

func TestReceipt(t *testing.T) {
	digest := strings.Repeat("ab", 32)
	env := Env{CleanReceipt: func(d string) bool { return d == digest }}
	runCases(t, env, []evalCase{
		{`verdict_receipt_clean('` + digest + `')`, true, "receipt abababababab found (clean)"},
		{`verdict_receipt_clean('` + digest[:63] + `')`, false, "no clean receipt for abababababab"},
		{`verdict_receipt_clean()`, false, "expects one string"},
	})
	runCases(t, Env{}, []evalCase{{`verdict_receipt_clean('x')`, false, "no clean receipt for x"}})
}
