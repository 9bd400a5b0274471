package evidence

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/stratum-go/stratum/internal/proc"
)

// GitTimeout bounds git_commit_exists.
const GitTimeout = 5 * time.Second

// maxContainsRead bounds how much of a file server_file_contains reads.
const maxContainsRead = 64 << 20

// Env is what evaluation may use. Every field is fixed by the server (the
// registered policy and the server environment), never by the caller of a
// transition.
type Env struct {
	// WorkspaceRoot is the registered root for file, git and command
	// evidence; empty means none was registered.
	WorkspaceRoot string
	// AllowCommands is true when STRATUM_GUARD_ALLOW_COMMANDS is exactly "1"
	// at evaluation time.
	AllowCommands bool
	// CommandTimeout bounds command_exit_zero.
	CommandTimeout time.Duration
	// CleanReceipt reports whether the resource's own ledger, as read at the
	// start of the transition, holds an applied (or review_clean) entry with
	// this exact entry digest. Nil means no receipts.
	CleanReceipt func(digest string) bool
}

// Result is the outcome of one trusted predicate.
type Result struct {
	Met      bool
	Evidence string
}

func unmet(format string, args ...any) Result {
	return Result{Evidence: fmt.Sprintf(format, args...)}
}

const noWorkspace = "no workspace_root registered for trusted file/command/git evidence"

// Evaluate runs one parsed call. It never fails: every problem (bad arity,
// an escape from the workspace, a missing git, a timeout) is an unmet
// result whose evidence says why.
func Evaluate(ctx context.Context, c Call, env Env) Result {
	if NeedsWorkspace(c.Name) && env.WorkspaceRoot == "" {
		return unmet(noWorkspace)
	}
	switch c.Name {
	case ServerFileExists:
		path, ok := stringArgs(c, 1)
		if !ok {
			return unmet("%s expects one string argument", c.Name)
		}
		return fileExists(env.WorkspaceRoot, path[0])
	case ServerFileContains:
		args, ok := stringArgs(c, 2)
		if !ok {
			return unmet("%s expects two string arguments (path, text)", c.Name)
		}
		return fileContains(env.WorkspaceRoot, args[0], args[1])
	case GitCommitExists:
		rev, ok := stringArgs(c, 1)
		if !ok {
			return unmet("%s expects one string argument", c.Name)
		}
		return gitCommitExists(ctx, env.WorkspaceRoot, rev[0])
	case CommandExitZero:
		if len(c.Args) != 1 || !c.Args[0].IsList {
			return unmet("%s expects one list of strings", c.Name)
		}
		return commandExitZero(ctx, env, c.Args[0].List)
	case VerdictReceiptClean:
		digest, ok := stringArgs(c, 1)
		if !ok {
			return unmet("%s expects one string argument", c.Name)
		}
		short := prefix(digest[0], 12)
		if env.CleanReceipt != nil && env.CleanReceipt(digest[0]) {
			return Result{Met: true, Evidence: fmt.Sprintf("receipt %s found (clean)", short)}
		}
		return unmet("no clean receipt for %s", short)
	}
	return unmet("unknown trusted builtin %q", c.Name)
}

func stringArgs(c Call, n int) ([]string, bool) {
	if len(c.Args) != n {
		return nil, false
	}
	out := make([]string, n)
	for i, a := range c.Args {
		if a.IsList {
			return nil, false
		}
		out[i] = a.Str
	}
	return out, true
}

func prefix(s string, n int) string {
	r := []rune(s)
	if len(r) > n {
		r = r[:n]
	}
	return string(r)
}

// ErrEscapes reports a path that leaves the workspace root.
var ErrEscapes = errors.New("path escapes workspace_root")

// Resolve maps path (relative to root, or absolute) to a real path inside
// root. The root itself is taken by its real path (its plain absolute form
// if that cannot be resolved). The joined path must be inside the root
// lexically and again after resolving the symlinks of its longest existing
// prefix; the part that does not exist yet is re-appended unchanged.
func Resolve(root, path string) (string, error) {
	if strings.IndexByte(path, 0) >= 0 {
		return "", fmt.Errorf("path contains NUL")
	}
	base, err := baseOf(root)
	if err != nil {
		return "", err
	}
	joined := filepath.Clean(path)
	if !filepath.IsAbs(path) {
		joined = filepath.Join(base, path)
	}
	if !within(base, joined) {
		return "", fmt.Errorf("%w: '%s'", ErrEscapes, path)
	}
	real, err := resolveExisting(joined)
	if err != nil {
		return "", err
	}
	if !within(base, real) {
		return "", fmt.Errorf("%w: '%s'", ErrEscapes, path)
	}
	return real, nil
}

// baseOf is the workspace root by its real path (its plain absolute form
// if that cannot be resolved).
func baseOf(root string) (string, error) {
	base, err := filepath.EvalSymlinks(root)
	if err != nil {
		if base, err = filepath.Abs(root); err != nil {
			return "", fmt.Errorf("workspace root %q: %w", root, err)
		}
	}
	return filepath.Clean(base), nil
}

// resolveExisting resolves the symlinks of the longest prefix of p that
// exists and re-appends the rest. A prefix component that exists but
// cannot be resolved (a dangling or looping symlink) is an error rather
// than a "missing" file, so that creating the link's target later cannot
// change what the check meant.
func resolveExisting(p string) (string, error) {
	var rest []string
	cur := p
	for {
		if _, err := os.Lstat(cur); err == nil {
			real, err := filepath.EvalSymlinks(cur)
			if err != nil {
				return "", fmt.Errorf("cannot resolve %s: %w", cur, err)
			}
			for i := len(rest) - 1; i >= 0; i-- {
				real = filepath.Join(real, rest[i])
			}
			return real, nil
		} else if !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("cannot resolve %s: %w", cur, err)
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return p, nil
		}
		rest = append(rest, filepath.Base(cur))
		cur = parent
	}
}

func within(base, p string) bool {
	if p == base {
		return true
	}
	if base == string(filepath.Separator) {
		return strings.HasPrefix(p, base)
	}
	return strings.HasPrefix(p, base+string(filepath.Separator))
}

// openInRoot resolves path inside root (Resolve: the path as a person
// means it, absolute in-root symlinks included) and returns the workspace
// root opened as an *os.Root together with the resolved path relative to
// it. Every later access goes through the *os.Root, which walks the path
// one component at a time with openat and O_NOFOLLOW and follows a symlink
// only while it stays inside the root: a directory swapped for a symlink
// to the outside between the resolution and the access is refused, never
// followed (docs/guard.md, "The workspace jail").
func openInRoot(root, path string) (*os.Root, string, error) {
	real, err := Resolve(root, path)
	if err != nil {
		return nil, "", err
	}
	base, err := baseOf(root)
	if err != nil {
		return nil, "", err
	}
	rel, err := filepath.Rel(base, real)
	if err != nil || !filepath.IsLocal(rel) && rel != "." {
		return nil, "", fmt.Errorf("%w: '%s'", ErrEscapes, path)
	}
	r, err := os.OpenRoot(base)
	if err != nil {
		return nil, "", fmt.Errorf("workspace root %q: %w", root, err)
	}
	return r, rel, nil
}

// accessFailure words an error of an access through the *os.Root: a
// missing file is "missing"; anything else (a component swapped for a
// symlink that leaves the root, a loop) says what happened.
func accessFailure(path string, err error) Result {
	if errors.Is(err, fs.ErrNotExist) {
		return unmet("%s missing", path)
	}
	return unmet("%s not readable inside workspace_root: %v", path, err)
}

func fileExists(root, path string) Result {
	r, rel, err := openInRoot(root, path)
	if err != nil {
		return unmet("%v", err)
	}
	defer r.Close()
	fi, err := r.Stat(rel)
	if err != nil {
		return accessFailure(path, err)
	}
	if !fi.Mode().IsRegular() {
		return unmet("%s missing", path)
	}
	return Result{Met: true, Evidence: path + " exists"}
}

func fileContains(root, path, text string) Result {
	r, rel, err := openInRoot(root, path)
	if err != nil {
		return unmet("%v", err)
	}
	defer r.Close()
	// openFlags: no blocking on a FIFO (open_unix.go).
	f, err := r.OpenFile(rel, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return accessFailure(path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return unmet("%s missing", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxContainsRead+1))
	if err != nil {
		return unmet("%s unreadable: %v", path, err)
	}
	if len(data) > maxContainsRead {
		return unmet("%s is larger than %d bytes", path, maxContainsRead)
	}
	// The file is read as UTF-8 text: invalid bytes read as U+FFFD.
	if bytes.Contains(bytes.ToValidUTF8(data, []byte("\uFFFD")), []byte(text)) {
		return Result{Met: true, Evidence: fmt.Sprintf("%s contains %q", path, prefix(text, 40))}
	}
	return unmet("%s does not contain %q", path, prefix(text, 40))
}

func gitCommitExists(ctx context.Context, root, rev string) Result {
	short := prefix(rev, 12)
	if strings.HasPrefix(rev, "-") {
		// No revision starts with '-'; git would read it as an option.
		return unmet("git rev-parse failed: revision %q starts with '-'", short)
	}
	res, err := proc.Run(ctx, proc.Spec{
		Argv:    []string{"git", "rev-parse", "--verify", "--quiet", rev + "^{commit}"},
		Dir:     root,
		Timeout: GitTimeout,
		Stdout:  io.Discard, // only the exit status counts
	})
	switch {
	case err != nil:
		return unmet("git rev-parse failed: %v", err)
	case res.TimedOut:
		return unmet("git rev-parse failed: timed out after %s", GitTimeout)
	case res.Success():
		return Result{Met: true, Evidence: fmt.Sprintf("commit %s present", short)}
	case res.Signal != "":
		return unmet("git rev-parse failed: killed by signal %s", res.Signal)
	}
	return unmet("commit %s absent", short)
}

func commandExitZero(ctx context.Context, env Env, argv []string) Result {
	if !env.AllowCommands {
		return unmet("command execution disabled (STRATUM_GUARD_ALLOW_COMMANDS is not 1)")
	}
	if len(argv) == 0 {
		return unmet("command_exit_zero needs a non-empty argument list")
	}
	timeout := env.CommandTimeout
	if timeout <= 0 {
		timeout = DefaultCommandTimeout
	}
	// stdout is discarded, not buffered: only the exit status counts.
	res, err := proc.Run(ctx, proc.Spec{Argv: argv, Dir: env.WorkspaceRoot, Timeout: timeout, Stdout: io.Discard})
	switch {
	case err != nil:
		return unmet("command failed: %v", err)
	case res.TimedOut:
		return unmet("command failed: %s timed out after %s (process group killed)", argv[0], timeout)
	case res.Success():
		return Result{Met: true, Evidence: argv[0] + " exited 0"}
	case res.Signal != "":
		return unmet("%s killed by signal %s", argv[0], res.Signal)
	}
	return unmet("%s exited %d", argv[0], res.ExitCode)
}

// DefaultCommandTimeout applies when STRATUM_GUARD_CMD_TIMEOUT_S is unset
// or not a positive integer.
const DefaultCommandTimeout = 120 * time.Second
