package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// gitIndex reads the repository's index file.
func gitIndex(t *testing.T, dir string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// snapshotDirs lists what snapshots left in the temporary directory.
func snapshotDirs(t *testing.T) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(os.TempDir(), "stratum-snapshot-*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// A snapshot before and after edits of every kind (modified, new,
// deleted, binary, staged, committed; an ignored file left out) gives a
// stat and a patch that takes the first tree to the second, and neither
// snapshot changes the user's index, files or status, nor leaves a
// temporary file behind.
func TestSnapCompare(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	ctx := context.Background()
	dir := repo(t)
	write(t, filepath.Join(dir, ".gitignore"), "*.log\n")
	gitT(t, dir, "add", ".gitignore")
	gitT(t, dir, "commit", "-q", "-m", "ignore logs")
	head := strings.TrimSpace(gitT(t, dir, "rev-parse", "HEAD"))

	before, err := Snap(ctx, filepath.Join(dir, "sub")) // a workspace below the top
	if err != nil {
		t.Fatal(err)
	}
	if before.Head != head || before.Tree != strings.TrimSpace(gitT(t, dir, "rev-parse", "HEAD^{tree}")) || before.Top == "" {
		t.Fatalf("snapshot of a clean repository %+v, want HEAD %s and its tree", before, head)
	}

	write(t, filepath.Join(dir, "README"), "one\nTWO\nthree\n")
	write(t, filepath.Join(dir, "new", "file.txt"), "new\n")
	write(t, filepath.Join(dir, "blob.bin"), "\x00\x09binary changed\xfe")
	write(t, filepath.Join(dir, "build.log"), "ignored\n")
	write(t, filepath.Join(dir, "staged.txt"), "staged\n")
	gitT(t, dir, "add", "staged.txt")
	if err := os.Remove(filepath.Join(dir, "sub", "keep")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "committed.txt"), "committed\n")
	gitT(t, dir, "add", "committed.txt")
	gitT(t, dir, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "agent commit", "--", "committed.txt")

	index, status := gitIndex(t, dir), gitT(t, dir, "status", "--porcelain")
	after, err := Snap(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(index, gitIndex(t, dir)) || status != gitT(t, dir, "status", "--porcelain") {
		t.Fatalf("the snapshot changed the index or the status:\n%s", gitT(t, dir, "status", "--porcelain"))
	}
	if after.Head == head || after.Head != strings.TrimSpace(gitT(t, dir, "rev-parse", "HEAD")) || after.Tree == before.Tree {
		t.Fatalf("snapshot after the edits %+v (before %+v)", after, before)
	}
	d, err := Compare(ctx, before, after, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"README", "new/file.txt", "blob.bin", "staged.txt", "committed.txt", "sub/keep", "6 files changed"} {
		if !strings.Contains(d.Stat, want) {
			t.Errorf("stat lacks %q:\n%s", want, d.Stat)
		}
	}
	if strings.Contains(d.Stat, "build.log") || bytes.Contains(d.Patch, []byte("build.log")) {
		t.Errorf("an ignored file is in the changes:\n%s", d.Stat)
	}
	for _, want := range []string{"b/new/file.txt", "GIT binary patch", "deleted file mode", "-two\n+TWO"} {
		if !bytes.Contains(d.Patch, []byte(want)) {
			t.Errorf("patch lacks %q:\n%s", want, d.Patch)
		}
	}
	if d.TooLarge != nil {
		t.Errorf("TooLarge %v", d.TooLarge)
	}
	// The patch takes the first tree to the second: applied to a scratch
	// index holding the first tree, it writes the second.
	scratch := filepath.Join(t.TempDir(), "index")
	env := []string{"GIT_INDEX_FILE=" + scratch}
	if _, err := git(ctx, dir, nil, env, "read-tree", before.Tree); err != nil {
		t.Fatal(err)
	}
	if _, err := git(ctx, dir, d.Patch, env, "apply", "--cached"); err != nil {
		t.Fatal(err)
	}
	if out, err := git(ctx, dir, nil, env, "write-tree"); err != nil || strings.TrimSpace(string(out)) != after.Tree {
		t.Errorf("the patch applied to the first tree gives %s (%v), want %s", out, err, after.Tree)
	}

	// Nothing changed since: no stat, no patch, whatever the index says.
	again, err := Snap(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if d, err := Compare(ctx, after, again, 0); err != nil || d.Stat != "" || d.Patch != nil || again.Tree != after.Tree {
		t.Errorf("no change compares as %+v, %v", d, err)
	}

	// Over the limit: the stat, no patch, and the size.
	d, err = Compare(ctx, before, after, 64)
	if err != nil {
		t.Fatal(err)
	}
	if d.Patch != nil || d.TooLarge == nil || d.TooLarge.Limit != 64 || d.TooLarge.Size <= 64 || !strings.Contains(d.Stat, "6 files changed") {
		t.Errorf("over the limit: %+v", d)
	}
	if left := snapshotDirs(t); len(left) > 0 {
		t.Errorf("snapshots left %v", left)
	}
}

// Outside a repository there is nothing to snapshot; a repository
// without a commit has a tree and no HEAD.
func TestSnapNoRepositoryOrCommit(t *testing.T) {
	ctx := context.Background()
	if _, err := Snap(ctx, t.TempDir()); !errors.Is(err, ErrNotRepository) {
		t.Errorf("outside a repository: %v, want ErrNotRepository", err)
	}
	if _, err := Snap(ctx, ""); !errors.Is(err, ErrNoWorkspace) {
		t.Errorf("no workspace: %v, want ErrNoWorkspace", err)
	}
	dir := filepath.Join(t.TempDir(), "fresh")
	write(t, filepath.Join(dir, "a.txt"), "a\n")
	gitT(t, dir, "init", "-q")
	s, err := Snap(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if s.Head != "" || s.Tree == "" {
		t.Errorf("snapshot of a repository without commits %+v", s)
	}
	if _, err := os.Stat(filepath.Join(dir, ".git", "index")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the snapshot made the repository an index: %v", err)
	}
}

// A snapshot git cannot write (an object it cannot store) is an error,
// and its temporary index is removed all the same.
func TestSnapErrorLeavesNothing(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	ctx := context.Background()
	dir := repo(t)
	write(t, filepath.Join(dir, "new.txt"), "a new blob\n")
	sum := strings.TrimSpace(gitT(t, dir, "hash-object", "new.txt"))
	// A file where git must make the blob's object directory.
	write(t, filepath.Join(dir, ".git", "objects", sum[:2]), "in the way")
	if _, err := Snap(ctx, dir); err == nil {
		t.Fatal("a snapshot whose blob cannot be stored succeeded")
	}
	if left := snapshotDirs(t); len(left) > 0 {
		t.Errorf("a failed snapshot left %v", left)
	}
}

// BenchmarkSnap measures one snapshot (the cost added before and after
// each attempt of a do step) of a repository of 2,000 tracked files in
// 40 directories, 10 of them modified and 5 untracked.
func BenchmarkSnap(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "repo")
	for i := 0; i < 2000; i++ {
		p := filepath.Join(dir, fmt.Sprintf("d%02d", i%40), fmt.Sprintf("f%04d.txt", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(strings.Repeat(fmt.Sprintf("line %d\n", i), 20)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	ctx := context.Background()
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "base"}} {
		if _, err := git(ctx, dir, nil, nil, args...); err != nil {
			b.Fatal(err)
		}
	}
	for i := 0; i < 10; i++ {
		if err := os.WriteFile(filepath.Join(dir, "d00", fmt.Sprintf("f%04d.txt", i*40)), []byte("changed\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for i := 0; i < 5; i++ {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("new%d.txt", i)), []byte("new\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := Snap(ctx, dir); err != nil {
			b.Fatal(err)
		}
	}
}
