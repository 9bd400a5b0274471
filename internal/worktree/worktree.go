package worktree

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/stratum-go/stratum/internal/proc"
	"github.com/stratum-go/stratum/internal/scratch"
)

// Limits.
const (
	// DefaultPatchLimit is the largest patch Capture returns by default:
	// patches are persisted with the run, so an item that changed more
	// (a build output, a vendored tree) fails instead of bloating it.
	DefaultPatchLimit = 16 << 20
	// GitTimeout bounds every git command.
	GitTimeout = 10 * time.Minute
	// CommandTimeout bounds a pre_merge command.
	CommandTimeout = 30 * time.Minute
)

// ErrNoWorkspace is returned by [Create] when the run has no workspace root.
var ErrNoWorkspace = errors.New("worktree fanout requires workspaceRoot")

// ErrNotRepository is matched by the error of [Create] when the workspace
// is not inside a git repository with at least one commit.
var ErrNotRepository = errors.New("worktree isolation needs the workspace inside a git repository with a commit")

// TooLargeError reports a patch over the limit given to [Worktree.Capture].
type TooLargeError struct {
	Size  int64 // bytes git printed
	Limit int
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("the item's changes are a %s patch, over the %s limit of a fanout patch (ignore generated files with .gitignore)",
		sizeText(e.Size), sizeText(int64(e.Limit)))
}

func sizeText(n int64) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d bytes", n)
}

// ConflictError reports a patch that cannot be applied to the workspace.
// Nothing of it was applied.
type ConflictError struct {
	// Paths are the files whose three-way merge conflicts (sorted); empty
	// when git refused the patch for another reason (Detail says which).
	Paths  []string
	Detail string
}

func (e *ConflictError) Error() string {
	var b strings.Builder
	if len(e.Paths) > 0 {
		fmt.Fprintf(&b, "the changes conflict with the workspace in %s", strings.Join(e.Paths, ", "))
	} else {
		b.WriteString("the changes do not apply to the workspace")
	}
	if e.Detail != "" {
		b.WriteString(" (" + e.Detail + ")")
	}
	b.WriteString("; nothing of them was applied")
	return b.String()
}

// CommandError reports a command (git or pre_merge) that did not succeed.
type CommandError struct {
	Command  string
	ExitCode int
	Signal   string
	TimedOut bool
	// Stderr is the trimmed tail of the command's standard error.
	Stderr string
}

func (e *CommandError) Error() string {
	var how string
	switch {
	case e.TimedOut:
		how = "timed out (its process group was killed)"
	case e.Signal != "":
		how = "was killed by signal " + e.Signal
	default:
		how = "exited with status " + strconv.Itoa(e.ExitCode)
	}
	msg := fmt.Sprintf("%s %s", e.Command, how)
	if e.Stderr != "" {
		msg += ": " + e.Stderr
	}
	return msg
}

// Prefix is the directory name prefix of the worktree of one item of one
// fanout step of one run (of every item of the fanout when index < 0). It
// names the item exactly — ids hold no '.', and the index ends with '-' —
// so that a later process tears down exactly what an earlier one left
// behind for that item, and nothing of another run, step or item.
func Prefix(runID, stepID string, index int) string {
	name := runID + "." + stepID
	if len(name) > 160 {
		sum := sha256.Sum256([]byte(runID + "\x00" + stepID))
		name = hex.EncodeToString(sum[:16])
	}
	p := "stratum-" + name + "."
	if index >= 0 {
		p += strconv.Itoa(index) + "-"
	}
	return p
}

// Spec says where and for what a worktree is made.
type Spec struct {
	// Workspace is the run's workspace root: inside the repository whose
	// HEAD is checked out, possibly in a subdirectory of it.
	Workspace string
	// Prefix names the item (see Prefix).
	Prefix string
	// TempDir is where the worktree directory is made; empty means
	// os.TempDir().
	TempDir string
	// Live reports, by base name, directories this process is still
	// using (an earlier round's item finishing): they are not leftovers.
	// Nil means none.
	Live func(name string) bool
}

// Worktree is a detached checkout of a commit for one item.
type Worktree struct {
	// Dir is the worktree's top directory.
	Dir string
	// Workdir is the workspace's place inside the worktree: where the
	// agent works and where file predicates look.
	Workdir string
	// Top is the top directory of the workspace's repository.
	Top string
	// Base is the commit checked out; changes are captured against it.
	Base string
	// Removed lists the leftover worktrees torn down before this one was
	// made.
	Removed []string
}

// Create tears down the leftovers of the item (worktrees and temporary
// directories named by [Spec.Prefix] that are not live), then checks out
// the workspace repository's HEAD, detached, in a fresh temporary
// directory.
func Create(ctx context.Context, s Spec) (*Worktree, error) {
	if s.Workspace == "" {
		return nil, ErrNoWorkspace
	}
	out, err := git(ctx, s.Workspace, nil, nil, "rev-parse", "--show-toplevel")
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrNotRepository, s.Workspace, err)
	}
	top := strings.TrimSpace(string(out))
	out, err = git(ctx, top, nil, nil, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
	if err != nil {
		return nil, fmt.Errorf("%w: %s has no commit to check out", ErrNotRepository, top)
	}
	base := strings.TrimSpace(string(out))
	removed := RemoveLeftovers(ctx, top, s.TempDir, s.Prefix, s.Live)
	dir, err := os.MkdirTemp(s.TempDir, s.Prefix)
	if err != nil {
		return nil, fmt.Errorf("make a worktree directory: %w", err)
	}
	if _, err := git(ctx, top, nil, nil, "worktree", "add", "--detach", "--quiet", dir, base); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("create a worktree of %s: %w", top, err)
	}
	// Resolve symlinks on both sides (a temporary directory may be reached
	// through one) so that the workspace's place in the repository is exact.
	realTop, err1 := filepath.EvalSymlinks(top)
	realWS, err2 := filepath.EvalSymlinks(s.Workspace)
	rel, err3 := filepath.Rel(realTop, realWS)
	if err := errors.Join(err1, err2, err3); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		rel = "."
	}
	workdir := filepath.Join(dir, rel)
	if err := os.MkdirAll(workdir, 0o755); err != nil { // the subdirectory may hold no tracked file
		_ = remove(ctx, top, dir)
		return nil, fmt.Errorf("make the workspace directory in the worktree: %w", err)
	}
	return &Worktree{Dir: dir, Workdir: workdir, Top: top, Base: base, Removed: removed}, nil
}

// Capture records the worktree's changes against its base commit as a
// binary patch: new files (not ignored) are first marked intent-to-add so
// that the diff includes them, and commits the agent made in the
// worktree are included. A patch over limit bytes (0 means
// [DefaultPatchLimit]) is a [*TooLargeError]. No changes is an empty patch.
func (w *Worktree) Capture(ctx context.Context, limit int) ([]byte, error) {
	if limit <= 0 {
		limit = DefaultPatchLimit
	}
	if _, err := git(ctx, w.Dir, nil, nil, "add", "--all", "--intent-to-add"); err != nil {
		return nil, fmt.Errorf("record the item's new files: %w", err)
	}
	res, err := run(ctx, proc.Spec{Argv: append(gitArgv(), "diff", "--binary", "--no-color", "--no-ext-diff", "--no-textconv",
		"--no-relative", "--src-prefix=a/", "--dst-prefix=b/", w.Base, "--"), Dir: w.Dir, Env: gitEnv(nil), Timeout: GitTimeout, StdoutLimit: limit + 1})
	if err != nil {
		return nil, fmt.Errorf("capture the item's changes: %w", err)
	}
	if res.StdoutBytes > int64(limit) {
		return nil, &TooLargeError{Size: res.StdoutBytes, Limit: limit}
	}
	return res.Stdout, nil
}

// Remove tears the worktree down: `git worktree remove --force`, and
// when that fails the directory is deleted and the repository's worktree
// list pruned.
func (w *Worktree) Remove(ctx context.Context) error { return remove(ctx, w.Top, w.Dir) }

func remove(ctx context.Context, top, dir string) error {
	// Teardown must happen even when the caller's context has ended.
	ctx = context.WithoutCancel(ctx)
	if _, err := git(ctx, top, nil, nil, "worktree", "remove", "--force", dir); err == nil {
		return nil
	}
	rmErr := os.RemoveAll(dir)
	_, pruneErr := git(ctx, top, nil, nil, "worktree", "prune")
	if err := errors.Join(rmErr, pruneErr); err != nil {
		return fmt.Errorf("remove worktree %s: %w", dir, err)
	}
	return nil
}

// RemoveLeftovers tears down what an earlier process left for a prefix:
// the worktrees of the repository holding dir whose directory name
// starts with it, and directories of that name in tempDir (empty means
// os.TempDir()) that never became worktrees. Directories live reports
// are kept (by base name). It returns what it removed.
func RemoveLeftovers(ctx context.Context, dir, tempDir, prefix string, live func(name string) bool) []string {
	if prefix == "" {
		return nil
	}
	keep := func(dir string) bool { return live != nil && live(filepath.Base(dir)) }
	var removed []string
	seen := map[string]bool{}
	if out, err := git(ctx, dir, nil, nil, "worktree", "list", "--porcelain"); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(out))
		for sc.Scan() {
			wt, ok := strings.CutPrefix(sc.Text(), "worktree ")
			if !ok || !strings.HasPrefix(filepath.Base(wt), prefix) || keep(wt) {
				continue
			}
			if remove(ctx, dir, wt) == nil {
				removed = append(removed, wt)
				seen[filepath.Base(wt)] = true
			}
		}
	}
	if tempDir == "" {
		tempDir = os.TempDir()
	}
	matches, _ := filepath.Glob(filepath.Join(tempDir, prefix+"*"))
	for _, m := range matches {
		if seen[filepath.Base(m)] || keep(m) {
			continue
		}
		if os.RemoveAll(m) == nil {
			removed = append(removed, m)
		}
	}
	if len(matches) > 0 {
		_, _ = git(context.WithoutCancel(ctx), dir, nil, nil, "worktree", "prune")
	}
	return removed
}

// Applied says how [Apply] went.
type Applied int

const (
	// Clean: the patch was applied to the index and the files.
	Clean Applied = iota + 1
	// AlreadyPresent: every change of the patch was already in the
	// workspace (an earlier application whose record was lost in a
	// crash, or an identical change merged before); nothing was done.
	AlreadyPresent
)

// Apply applies a patch made by [Worktree.Capture] to the repository holding
// the workspace, to its index and files, with a three-way merge where the
// workspace has moved on. It is all or nothing: the three-way merge is first
// tried on a scratch copy of the index, and a patch that would conflict is a
// [*ConflictError] with nothing touched. A patch whose changes are all present
// already (its reverse applies) is not applied again and reports
// [AlreadyPresent].
func Apply(ctx context.Context, workspace string, patch []byte) (Applied, error) {
	if len(bytes.TrimSpace(patch)) == 0 {
		return AlreadyPresent, nil
	}
	out, err := git(ctx, workspace, nil, nil, "rev-parse", "--show-toplevel")
	if err != nil {
		return 0, fmt.Errorf("%w: %s: %v", ErrNotRepository, workspace, err)
	}
	top := strings.TrimSpace(string(out))
	scratch, err := scratchIndex(ctx, top)
	if err != nil {
		return 0, err
	}
	defer os.Remove(scratch)
	env := []string{"GIT_INDEX_FILE=" + scratch}
	_, dryErr := git(ctx, top, patch, env, "apply", "--cached", "--3way", "--whitespace=nowarn")
	if dryErr != nil {
		if _, err := git(ctx, top, patch, nil, "apply", "--check", "--reverse", "--index", "--whitespace=nowarn"); err == nil {
			return AlreadyPresent, nil
		}
		return 0, conflict(ctx, top, env, dryErr)
	}
	if _, err := git(ctx, top, patch, nil, "apply", "--index", "--3way", "--whitespace=nowarn"); err != nil {
		// The dry run merged cleanly, so git refused before writing (a
		// file that differs from the index, say) — unless it left
		// conflicts, which are then named.
		if paths := unmerged(ctx, top, nil); len(paths) > 0 {
			return 0, fmt.Errorf("the changes were applied with conflicts left in %s: %w", strings.Join(paths, ", "), err)
		}
		return 0, &ConflictError{Detail: detail(err)}
	}
	return Clean, nil
}

// scratchIndex copies the repository's index to a temporary file (or
// builds one from HEAD when the repository has none yet).
func scratchIndex(ctx context.Context, top string) (string, error) {
	out, err := git(ctx, top, nil, nil, "rev-parse", "--git-path", "index")
	if err != nil {
		return "", err
	}
	index := strings.TrimSpace(string(out))
	if !filepath.IsAbs(index) {
		index = filepath.Join(top, index)
	}
	f, err := scratch.File("index")
	if err != nil {
		return "", fmt.Errorf("scratch index: %w", err)
	}
	name := f.Name()
	b, err := os.ReadFile(index)
	switch {
	case err == nil:
		_, err = f.Write(b)
		err = errors.Join(err, f.Close())
	case errors.Is(err, os.ErrNotExist):
		err = f.Close()
		if err == nil {
			os.Remove(name) // git writes it
			_, err = git(ctx, top, nil, []string{"GIT_INDEX_FILE=" + name}, "read-tree", "HEAD")
		}
	default:
		f.Close()
	}
	if err != nil {
		os.Remove(name)
		return "", fmt.Errorf("scratch index: %w", err)
	}
	return name, nil
}

// conflict describes a refused dry run: the conflicted paths of the
// scratch index, or git's reason.
func conflict(ctx context.Context, top string, env []string, err error) error {
	return &ConflictError{Paths: unmerged(ctx, top, env), Detail: detail(err)}
}

func detail(err error) string {
	var ce *CommandError
	if errors.As(err, &ce) {
		lines := strings.Split(ce.Stderr, "\n")
		var keep []string
		for _, l := range lines {
			l = strings.TrimSpace(l)
			if strings.HasPrefix(l, "error:") || strings.HasPrefix(l, "fatal:") {
				keep = append(keep, l)
			}
		}
		if len(keep) > 0 {
			return strings.Join(keep, "; ")
		}
		return ce.Stderr
	}
	return err.Error()
}

// unmerged lists the paths with conflict stages in an index.
func unmerged(ctx context.Context, top string, env []string) []string {
	out, err := git(ctx, top, nil, env, "ls-files", "--unmerged", "-z")
	if err != nil {
		return nil
	}
	set := map[string]bool{}
	for _, rec := range bytes.Split(out, []byte{0}) {
		if _, path, ok := bytes.Cut(rec, []byte{'\t'}); ok {
			set[string(path)] = true
		}
	}
	paths := make([]string, 0, len(set))
	for p := range set {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	return paths
}

// RunCommand runs a pre_merge command with `sh -lc` in dir. A timeout of
// zero means [CommandTimeout]. A command that does not succeed is a
// [*CommandError].
func RunCommand(ctx context.Context, dir, command string, timeout time.Duration) error {
	if timeout <= 0 {
		timeout = CommandTimeout
	}
	res, err := proc.Run(ctx, proc.Spec{Argv: []string{"sh", "-lc", command}, Dir: dir, Timeout: timeout, StdoutLimit: 64 << 10})
	if err != nil {
		return fmt.Errorf("pre_merge command %q: %w", command, err)
	}
	if !res.Success() {
		return &CommandError{Command: fmt.Sprintf("pre_merge command %q", command), ExitCode: res.ExitCode, Signal: res.Signal,
			TimedOut: res.TimedOut, Stderr: strings.TrimSpace(string(res.StderrTail))}
	}
	return nil
}

// gitArgv is git with the configuration that would change what the
// commands print (a patch must be a plain patch whatever the user's
// settings).
func gitArgv() []string {
	return []string{"git", "-c", "core.quotepath=false", "-c", "diff.noprefix=false", "-c", "diff.mnemonicPrefix=false", "-c", "color.ui=false"}
}

// gitEnv is the environment of git commands: Stratum's, without the
// variables that would point git at another repository or index (set
// when Stratum itself runs from a git hook), plus extra.
func gitEnv(extra []string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_PREFIX", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY":
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0")
	return append(env, extra...)
}

// git runs one git command in dir and returns its stdout; a command that
// does not succeed is a *CommandError.
func git(ctx context.Context, dir string, stdin []byte, env []string, args ...string) ([]byte, error) {
	res, err := run(ctx, proc.Spec{Argv: append(gitArgv(), args...), Dir: dir, Env: gitEnv(env), Stdin: stdin,
		Timeout: GitTimeout, StdoutLimit: 16 << 20})
	if err != nil {
		return nil, err
	}
	return res.Stdout, nil
}

func run(ctx context.Context, s proc.Spec) (proc.Result, error) {
	res, err := proc.Run(ctx, s)
	if err != nil {
		return res, err
	}
	if !res.Success() {
		// argv[0] is git; name the subcommand (after the -c options).
		name := "git"
		for i := 1; i < len(s.Argv); i++ {
			if s.Argv[i] == "-c" {
				i++
				continue
			}
			name += " " + s.Argv[i]
			break
		}
		return res, &CommandError{Command: name, ExitCode: res.ExitCode, Signal: res.Signal, TimedOut: res.TimedOut,
			Stderr: strings.TrimSpace(string(res.StderrTail))}
	}
	return res, nil
}
