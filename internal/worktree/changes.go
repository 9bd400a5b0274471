package worktree

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/stratum-go/stratum/internal/proc"
	"github.com/stratum-go/stratum/internal/scratch"
)

// What one attempt of a do step changed in a git workspace
// (docs/agents.md, "What a step changed"): the driver takes a [Snapshot]
// before and after the attempt and [Compare]s them. A snapshot never
// touches the user's index or files: the tree of the working files is
// written through a temporary copy of the index, removed on return. Only
// the object database gains the blobs and trees of the snapshot (unused
// ones are collected by git's own gc, like those of `git stash create`).

// Snapshot is the repository holding a workspace at one moment.
type Snapshot struct {
	// Top is the repository's top directory.
	Top string
	// Head is the commit HEAD names, "" in a repository without commits.
	Head string
	// Tree is the tree of the working files: tracked and untracked, not
	// ignored, as `git add --all` would stage them.
	Tree string
}

// Diff is what changed between two snapshots.
type Diff struct {
	// Stat is git's diff stat (at most MaxStatFiles files listed, the
	// summary line counting all of them); "" when nothing changed.
	Stat string
	// Patch is the binary patch from the first tree to the second; nil
	// when nothing changed or when it is over the limit (TooLarge).
	Patch []byte
	// TooLarge is set when the patch is over the limit given to Compare.
	TooLarge *TooLargeError
}

// MaxStatFiles bounds the files a [Diff.Stat] lists.
const MaxStatFiles = 50

// Snap takes a snapshot of the repository holding workspace. A workspace
// outside a git repository is [ErrNotRepository].
func Snap(ctx context.Context, workspace string) (Snapshot, error) {
	if workspace == "" {
		return Snapshot{}, ErrNoWorkspace
	}
	out, err := git(ctx, workspace, nil, nil, "rev-parse", "--show-toplevel")
	if err != nil {
		return Snapshot{}, fmt.Errorf("%w: %s: %v", ErrNotRepository, workspace, err)
	}
	s := Snapshot{Top: strings.TrimSpace(string(out))}
	if s.Top == "" {
		return Snapshot{}, fmt.Errorf("%w: %s has no working tree", ErrNotRepository, workspace)
	}
	if out, err := git(ctx, s.Top, nil, nil, "rev-parse", "--verify", "--quiet", "HEAD^{commit}"); err == nil {
		s.Head = strings.TrimSpace(string(out))
	} else if ctx.Err() != nil {
		return Snapshot{}, ctx.Err()
	}
	s.Tree, err = workingTree(ctx, s.Top)
	if err != nil {
		return Snapshot{}, err
	}
	return s, nil
}

// workingTree writes the tree of the working files of the repository at
// top through a temporary index: a copy of the repository's own index
// (so that git reuses what it knows of unchanged files), or an empty one
// when that copy cannot be used.
func workingTree(ctx context.Context, top string) (string, error) {
	dir, err := scratch.Dir("snapshot")
	if err != nil {
		return "", fmt.Errorf("snapshot of %s: %w", top, err)
	}
	defer os.RemoveAll(dir) // the index and git's lock file beside it
	index := filepath.Join(dir, "index")
	copied := copyIndex(ctx, top, index) == nil
	tree, err := writeTree(ctx, top, index)
	if err != nil && copied && ctx.Err() == nil {
		// A copy git cannot use on its own (a split index, say): start
		// from nothing, which costs reading every file once.
		os.Remove(index)
		tree, err = writeTree(ctx, top, index)
	}
	if err != nil {
		return "", fmt.Errorf("snapshot of %s: %w", top, err)
	}
	return tree, nil
}

// writeTree stages every working file into the index file and writes its
// tree.
func writeTree(ctx context.Context, top, index string) (string, error) {
	env := []string{"GIT_INDEX_FILE=" + index}
	if _, err := git(ctx, top, nil, env, "add", "--all", "--", ":/"); err != nil {
		return "", err
	}
	out, err := git(ctx, top, nil, env, "write-tree")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// copyIndex copies the repository's index to dst; a repository without
// an index (nothing staged yet) is an error, and dst is left absent.
func copyIndex(ctx context.Context, top, dst string) error {
	out, err := git(ctx, top, nil, nil, "rev-parse", "--git-path", "index")
	if err != nil {
		return err
	}
	src := strings.TrimSpace(string(out))
	if !filepath.IsAbs(src) {
		src = filepath.Join(top, src)
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	f, err := os.Create(dst)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, in)
	if err = errors.Join(err, f.Close()); err != nil {
		os.Remove(dst)
	}
	return err
}

// Compare describes the changes from one snapshot to a later one of the
// same repository: the diff stat, and the binary patch between their
// trees when it is at most limit bytes (0 means [DefaultPatchLimit]).
// Equal trees are no changes, whatever HEAD did.
func Compare(ctx context.Context, before, after Snapshot, limit int) (Diff, error) {
	if limit <= 0 {
		limit = DefaultPatchLimit
	}
	if before.Tree == after.Tree {
		return Diff{}, nil
	}
	diff := []string{"diff", "--no-color", "--no-ext-diff", "--no-textconv", "--no-relative"}
	out, err := git(ctx, after.Top, nil, nil, append(diff, "--stat=100", fmt.Sprintf("--stat-count=%d", MaxStatFiles), before.Tree, after.Tree, "--")...)
	if err != nil {
		return Diff{}, fmt.Errorf("diff stat: %w", err)
	}
	d := Diff{Stat: strings.TrimRight(string(out), "\n")}
	res, err := run(ctx, proc.Spec{Argv: append(gitArgv(), append(diff, "--binary", "--src-prefix=a/", "--dst-prefix=b/", before.Tree, after.Tree, "--")...),
		Dir: after.Top, Env: gitEnv(nil), Timeout: GitTimeout, StdoutLimit: limit + 1})
	if err != nil {
		return Diff{}, fmt.Errorf("diff: %w", err)
	}
	if res.StdoutBytes > int64(limit) {
		d.TooLarge = &TooLargeError{Size: res.StdoutBytes, Limit: limit}
		return d, nil
	}
	d.Patch = res.Stdout
	return d, nil
}
