package worktree

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// repo makes a git repository with one commit (README, a binary file and
// sub/keep) and returns its directory.
func repo(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is required")
	}
	dir := filepath.Join(t.TempDir(), "repo")
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "README"), "one\ntwo\nthree\n")
	write(t, filepath.Join(dir, "sub", "keep"), "keep\n")
	write(t, filepath.Join(dir, "blob.bin"), "\x00\x01\x02binary\xff")
	gitT(t, dir, "init", "-q")
	gitT(t, dir, "add", ".")
	gitT(t, dir, "commit", "-q", "-m", "base")
	return dir
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

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func gitT(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v: %s", args, err, out)
	}
	return string(out)
}

// worktrees lists the repository's worktrees other than the main one.
func worktrees(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for _, l := range strings.Split(gitT(t, dir, "worktree", "list", "--porcelain"), "\n") {
		if p, ok := strings.CutPrefix(l, "worktree "); ok {
			out = append(out, p)
		}
	}
	return out[1:]
}

func create(t *testing.T, ws, prefix, tmp string) *Worktree {
	t.Helper()
	w, err := Create(context.Background(), Spec{Workspace: ws, Prefix: prefix, TempDir: tmp})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// An item's changes of every kind (modified, new, deleted, binary, a
// commit made in the worktree) travel through Capture and Apply into the
// workspace's index and files; the worktree is gone after Remove.
func TestCaptureApplyRemove(t *testing.T) {
	ctx := context.Background()
	dir := repo(t)
	tmp := t.TempDir()
	w := create(t, dir, Prefix("run-1", "fan", 0), tmp)
	if !strings.HasPrefix(filepath.Base(w.Dir), "stratum-run-1.fan.0-") || filepath.Dir(w.Dir) != tmp || w.Workdir != w.Dir {
		t.Fatalf("worktree %+v", w)
	}
	if got := read(t, filepath.Join(w.Dir, "README")); got != "one\ntwo\nthree\n" {
		t.Fatalf("checkout README %q", got)
	}
	write(t, filepath.Join(w.Dir, "README"), "one\nTWO\nthree\n")
	write(t, filepath.Join(w.Dir, "new", "file.txt"), "new\n")
	write(t, filepath.Join(w.Dir, "blob.bin"), "\x00\x09binary changed\xfe")
	if err := os.Remove(filepath.Join(w.Dir, "sub", "keep")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(w.Dir, "committed.txt"), "committed\n")
	gitT(t, w.Dir, "add", "committed.txt")
	gitT(t, w.Dir, "commit", "-q", "-m", "agent commit")
	patch, err := w.Capture(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"b/new/file.txt", "GIT binary patch", "deleted file mode", "b/committed.txt"} {
		if !bytes.Contains(patch, []byte(want)) {
			t.Errorf("patch lacks %q:\n%s", want, patch)
		}
	}
	if err := w.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(w.Dir); !os.IsNotExist(err) {
		t.Fatalf("worktree directory still there: %v", err)
	}
	if l := worktrees(t, dir); len(l) != 0 {
		t.Fatalf("worktrees left %v", l)
	}

	how, err := Apply(ctx, dir, patch)
	if err != nil || how != Clean {
		t.Fatalf("apply: %v %v", how, err)
	}
	if got := read(t, filepath.Join(dir, "README")); got != "one\nTWO\nthree\n" {
		t.Errorf("README %q", got)
	}
	if got := read(t, filepath.Join(dir, "blob.bin")); got != "\x00\x09binary changed\xfe" {
		t.Errorf("blob %q", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "sub", "keep")); !os.IsNotExist(err) {
		t.Errorf("deleted file still there")
	}
	staged := strings.Fields(gitT(t, dir, "diff", "--cached", "--name-only"))
	if want := []string{"README", "blob.bin", "committed.txt", "new/file.txt", "sub/keep"}; !slices.Equal(staged, want) {
		t.Errorf("staged %v, want %v", staged, want)
	}
	// Applying again (a crash between applying and recording) changes
	// nothing and says so.
	before := gitT(t, dir, "status", "--porcelain")
	how, err = Apply(ctx, dir, patch)
	if err != nil || how == 0 {
		t.Fatalf("re-apply: %v %v", how, err)
	}
	if after := gitT(t, dir, "status", "--porcelain"); after != before {
		t.Errorf("re-apply changed the workspace:\n%s\n%s", before, after)
	}
}

// Nothing changed: an empty patch, applied as a no-op.
func TestCaptureNoChanges(t *testing.T) {
	ctx := context.Background()
	dir := repo(t)
	w := create(t, dir, Prefix("r", "s", 1), t.TempDir())
	defer w.Remove(ctx)
	patch, err := w.Capture(ctx, 0)
	if err != nil || len(patch) != 0 {
		t.Fatalf("patch %q %v", patch, err)
	}
	if how, err := Apply(ctx, dir, patch); err != nil || how != AlreadyPresent {
		t.Fatalf("apply empty: %v %v", how, err)
	}
}

// Ignored files (build output) are not captured.
func TestCaptureIgnored(t *testing.T) {
	ctx := context.Background()
	dir := repo(t)
	write(t, filepath.Join(dir, ".gitignore"), "out/\n")
	gitT(t, dir, "add", ".gitignore")
	gitT(t, dir, "commit", "-q", "-m", "ignore")
	w := create(t, dir, Prefix("r", "s", 1), t.TempDir())
	defer w.Remove(ctx)
	write(t, filepath.Join(w.Dir, "out", "big"), strings.Repeat("x", 1000))
	write(t, filepath.Join(w.Dir, "src.txt"), "src\n")
	patch, err := w.Capture(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(patch, []byte("out/big")) || !bytes.Contains(patch, []byte("src.txt")) {
		t.Fatalf("patch:\n%s", patch)
	}
}

func TestCaptureTooLarge(t *testing.T) {
	ctx := context.Background()
	dir := repo(t)
	w := create(t, dir, Prefix("r", "s", 0), t.TempDir())
	defer w.Remove(ctx)
	write(t, filepath.Join(w.Dir, "big.txt"), strings.Repeat("line of text\n", 200))
	_, err := w.Capture(ctx, 1000)
	var tl *TooLargeError
	if !errors.As(err, &tl) || tl.Limit != 1000 || tl.Size <= 1000 || !strings.Contains(err.Error(), "over the 1000 bytes limit") {
		t.Fatalf("err %v", err)
	}
}

// A workspace in a subdirectory of its repository: the agent's workdir
// is the same subdirectory of the worktree, and changes anywhere in the
// repository are captured and applied at its top.
func TestWorkspaceSubdirectory(t *testing.T) {
	ctx := context.Background()
	dir := repo(t)
	ws := filepath.Join(dir, "sub")
	w := create(t, ws, Prefix("r", "s", 0), t.TempDir())
	if w.Workdir != filepath.Join(w.Dir, "sub") || read(t, filepath.Join(w.Workdir, "keep")) != "keep\n" {
		t.Fatalf("workdir %s", w.Workdir)
	}
	write(t, filepath.Join(w.Workdir, "made.txt"), "made\n")
	write(t, filepath.Join(w.Dir, "README"), "changed at the top\n")
	patch, err := w.Capture(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	_ = w.Remove(ctx)
	if how, err := Apply(ctx, ws, patch); err != nil || how != Clean {
		t.Fatalf("apply %v %v", how, err)
	}
	if read(t, filepath.Join(ws, "made.txt")) != "made\n" || read(t, filepath.Join(dir, "README")) != "changed at the top\n" {
		t.Fatal("changes not applied at the repository's top")
	}
}

// Two items changing the same line: the second patch conflicts, is
// refused, and leaves the workspace exactly as the first left it. A
// patch touching a file that lines elsewhere changed merges three-way.
func TestApplyConflictTouchesNothing(t *testing.T) {
	ctx := context.Background()
	dir := repo(t)
	tmp := t.TempDir()
	patchOf := func(index int, edit func(w *Worktree)) []byte {
		w := create(t, dir, Prefix("r", "s", index), tmp)
		defer w.Remove(ctx)
		edit(w)
		p, err := w.Capture(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	p0 := patchOf(0, func(w *Worktree) { write(t, filepath.Join(w.Dir, "README"), "one\nzero\nthree\n") })
	p1 := patchOf(1, func(w *Worktree) {
		write(t, filepath.Join(w.Dir, "README"), "one\nfirst\nthree\n")
		write(t, filepath.Join(w.Dir, "also.txt"), "also\n")
	})
	p2 := patchOf(2, func(w *Worktree) { write(t, filepath.Join(w.Dir, "README"), "one\ntwo\nthree\nfour\n") })
	if _, err := Apply(ctx, dir, p0); err != nil {
		t.Fatal(err)
	}
	before := gitT(t, dir, "status", "--porcelain")
	readme := read(t, filepath.Join(dir, "README"))
	_, err := Apply(ctx, dir, p1)
	var ce *ConflictError
	if !errors.As(err, &ce) || !slices.Equal(ce.Paths, []string{"README"}) || !strings.Contains(err.Error(), "nothing of them was applied") {
		t.Fatalf("err %v", err)
	}
	if after := gitT(t, dir, "status", "--porcelain"); after != before || read(t, filepath.Join(dir, "README")) != readme {
		t.Fatalf("a refused patch changed the workspace:\n%s\n%s", before, after)
	}
	if _, err := os.Stat(filepath.Join(dir, "also.txt")); !os.IsNotExist(err) {
		t.Fatal("half of the refused patch was applied")
	}
	// p2 adds a line at the end: it merges with p0's change.
	if how, err := Apply(ctx, dir, p2); err != nil || how != Clean {
		t.Fatalf("three-way apply: %v %v", how, err)
	}
	if got := read(t, filepath.Join(dir, "README")); got != "one\nzero\nthree\nfour\n" {
		t.Fatalf("README %q", got)
	}
}

// A worktree of an item left by a killed process is torn down when the
// item's worktree is made again; one still live in this process, and
// those of other items, are kept.
func TestLeftoversTornDown(t *testing.T) {
	ctx := context.Background()
	dir := repo(t)
	tmp := t.TempDir()
	prefix := Prefix("run-1", "fan", 3)
	live := create(t, dir, prefix, tmp)
	// What a killed process left: a registered worktree, and a directory
	// made but never registered.
	old := &Worktree{Dir: filepath.Join(tmp, prefix+"8")}
	gitT(t, dir, "worktree", "add", "-q", "--detach", old.Dir, "HEAD")
	stray := filepath.Join(tmp, prefix+"9")
	if err := os.Mkdir(stray, 0o755); err != nil {
		t.Fatal(err)
	}
	other := create(t, dir, Prefix("run-1", "fan", 30), tmp)
	w, err := Create(ctx, Spec{Workspace: dir, Prefix: prefix, TempDir: tmp,
		Live: func(name string) bool { return name == filepath.Base(live.Dir) }})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(w.Removed, old.Dir) || !slices.Contains(w.Removed, stray) || len(w.Removed) != 2 {
		t.Fatalf("removed %v", w.Removed)
	}
	for _, gone := range []string{old.Dir, stray} {
		if _, err := os.Stat(gone); !os.IsNotExist(err) {
			t.Errorf("%s still there", gone)
		}
	}
	for _, kept := range []string{other.Dir, live.Dir, w.Dir} {
		if _, err := os.Stat(kept); err != nil {
			t.Errorf("%s removed: %v", kept, err)
		}
	}
	if n := len(worktrees(t, dir)); n != 3 {
		t.Errorf("%d worktrees registered, want 3", n)
	}
}

func TestCreateErrors(t *testing.T) {
	ctx := context.Background()
	if _, err := Create(ctx, Spec{Prefix: "p-"}); !errors.Is(err, ErrNoWorkspace) || err.Error() != "worktree fanout requires workspaceRoot" {
		t.Fatalf("no workspace: %v", err)
	}
	if _, err := Create(ctx, Spec{Workspace: t.TempDir(), Prefix: "p-", TempDir: t.TempDir()}); !errors.Is(err, ErrNotRepository) {
		t.Fatalf("not a repository: %v", err)
	}
	empty := t.TempDir()
	gitT(t, empty, "init", "-q")
	if _, err := Create(ctx, Spec{Workspace: empty, Prefix: "p-", TempDir: t.TempDir()}); !errors.Is(err, ErrNotRepository) || !strings.Contains(err.Error(), "no commit") {
		t.Fatalf("no commit: %v", err)
	}
}

func TestPrefixNamesOneItem(t *testing.T) {
	names := []string{
		Prefix("a-b", "c", 1), Prefix("a", "b-c", 1), Prefix("a", "b", 1), Prefix("a", "b", 10),
		Prefix("a", "b", 0), Prefix("b", "b", 1), Prefix(strings.Repeat("r", 128), strings.Repeat("s", 64), 1),
	}
	for i, a := range names {
		for j, b := range names {
			if i != j && strings.HasPrefix(a, b) {
				t.Errorf("%q is a prefix of %q", b, a)
			}
		}
	}
	if long := names[len(names)-1]; len(long) > 60 {
		t.Errorf("long ids make a %d-byte prefix", len(long))
	}
}

func TestRunCommand(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if err := RunCommand(ctx, dir, "touch ran && test -f ran", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err != nil {
		t.Fatal("the command did not run in dir")
	}
	err := RunCommand(ctx, dir, "echo broken >&2; exit 3", 0)
	var ce *CommandError
	if !errors.As(err, &ce) || ce.ExitCode != 3 || err.Error() != `pre_merge command "echo broken >&2; exit 3" exited with status 3: broken` {
		t.Fatalf("err %v", err)
	}
	err = RunCommand(ctx, dir, "sleep 5", 100*time.Millisecond)
	if !errors.As(err, &ce) || !ce.TimedOut {
		t.Fatalf("timeout: %v", err)
	}
}

// A deletion applied twice cannot be applied forward again; its reverse
// applies, so the second Apply reports AlreadyPresent and does nothing.
func TestApplyAlreadyPresent(t *testing.T) {
	ctx := context.Background()
	dir := repo(t)
	w := create(t, dir, Prefix("r", "s", 0), t.TempDir())
	if err := os.Remove(filepath.Join(w.Dir, "sub", "keep")); err != nil {
		t.Fatal(err)
	}
	patch, err := w.Capture(ctx, 0)
	_ = w.Remove(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if how, err := Apply(ctx, dir, patch); err != nil || how != Clean {
		t.Fatalf("apply %v %v", how, err)
	}
	if how, err := Apply(ctx, dir, patch); err != nil || how != AlreadyPresent {
		t.Fatalf("re-apply %v %v", how, err)
	}
}
