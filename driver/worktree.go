package driver

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// worktrees keeps one git worktree per fanout item with worktree isolation
// (spec/engine.md 5.4): created at the item's first attempt, reused by its
// later stages and retries, its changes captured after each accepted
// attempt, merged into the workspace when the fanout succeeds and removed
// when it settles.
//
// A worktree is a detached checkout of HEAD of the repository holding the
// workspace, in a temporary directory named stratum-<run>-<step>-<item>-*,
// so that a later drive of the same run finds and removes what an
// interrupted one left behind.
type worktrees struct {
	mu    sync.Mutex
	items map[string]*worktree // by itemKey
}

type worktree struct {
	run, step string
	index     int
	// dir is the worktree; workdir the workspace's place inside it (the
	// workspace may be a subdirectory of its repository).
	dir, workdir string
	top          string // the repository's top level
	base         string // the commit the worktree was made from
	mu           sync.Mutex
	patch        []byte // changes of the last accepted attempt
}

func newWorktrees() *worktrees { return &worktrees{items: map[string]*worktree{}} }

func itemKey(run, step string, index int) string {
	return run + "\x00" + step + "\x00" + strconv.Itoa(index)
}

// prefix is the temporary directory name prefix of a run's worktrees
// (of one step when step is non-empty, of one item when index >= 0).
func prefix(run, step string, index int) string {
	short := run
	if len(short) > 8 {
		short = short[:8]
	}
	p := "stratum-" + short + "-"
	if step != "" {
		p += safeName(step) + "-"
		if index >= 0 {
			p += strconv.Itoa(index) + "-"
		}
	}
	return p
}

func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' {
			return r
		}
		return '_'
	}, s)
}

func (w *worktrees) has(run, step string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, wt := range w.items {
		if wt.run == run && wt.step == step {
			return true
		}
	}
	return false
}

// acquire returns the item's worktree, creating it (after removing any
// left by an earlier process) on first use.
func (w *worktrees) acquire(ctx context.Context, workspace, run, step string, index int, notice func(string)) (*worktree, error) {
	key := itemKey(run, step, index)
	w.mu.Lock()
	defer w.mu.Unlock()
	if wt := w.items[key]; wt != nil {
		return wt, nil
	}
	if workspace == "" {
		return nil, errors.New("worktree isolation needs a workspace root")
	}
	top, err := git(ctx, workspace, nil, "rev-parse", "--show-toplevel")
	if err != nil {
		return nil, fmt.Errorf("worktree isolation needs the workspace %s to be inside a git repository: %w", workspace, err)
	}
	top = strings.TrimSpace(top)
	base, err := git(ctx, top, nil, "rev-parse", "--verify", "HEAD^{commit}")
	if err != nil {
		return nil, fmt.Errorf("worktree isolation needs a commit to check out in %s: %w", top, err)
	}
	base = strings.TrimSpace(base)
	removeLeftovers(ctx, top, prefix(run, step, index), notice)
	dir, err := os.MkdirTemp("", prefix(run, step, index))
	if err != nil {
		return nil, fmt.Errorf("create a worktree directory: %w", err)
	}
	if _, err := git(ctx, top, nil, "worktree", "add", "--detach", dir, base); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("create a worktree for %s[%d]: %w", step, index, err)
	}
	// Resolve symlinks on both sides (a temp dir under /tmp may be a
	// symlink) so the workspace's place in the repository is exact.
	realTop, _ := filepath.EvalSymlinks(top)
	realWS, _ := filepath.EvalSymlinks(workspace)
	rel, err := filepath.Rel(realTop, realWS)
	if err != nil || strings.HasPrefix(rel, "..") {
		rel = "."
	}
	wt := &worktree{run: run, step: step, index: index, dir: dir, workdir: filepath.Join(dir, rel), top: top, base: base}
	w.items[key] = wt
	if notice != nil {
		notice(fmt.Sprintf("%s[%d]: working in worktree %s", step, index, dir))
	}
	return wt, nil
}

// capture records the worktree's changes against its base commit,
// new files included, as a binary patch.
func (wt *worktree) capture(ctx context.Context) error {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	if _, err := git(ctx, wt.dir, nil, "add", "--all", "--intent-to-add"); err != nil {
		return fmt.Errorf("record the item's new files: %w", err)
	}
	patch, err := git(ctx, wt.dir, nil, "diff", "--binary", wt.base)
	if err != nil {
		return fmt.Errorf("capture the item's changes: %w", err)
	}
	wt.patch = []byte(patch)
	return nil
}

// merge runs preMerge (each with sh -c in the workspace) and applies the
// captured changes of the succeeded items, in index order.
func (w *worktrees) merge(ctx context.Context, workspace, run, step string, preMerge []string, succeeded []int, notice func(string)) error {
	w.mu.Lock()
	var items []*worktree
	for _, i := range succeeded {
		if wt := w.items[itemKey(run, step, i)]; wt != nil {
			items = append(items, wt)
		}
	}
	w.mu.Unlock()
	if len(items) == 0 {
		return nil
	}
	for _, c := range preMerge {
		cmd := exec.CommandContext(ctx, "sh", "-c", c)
		cmd.Dir = workspace
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("pre_merge command %q: %w: %s", c, err, tail(out))
		}
	}
	for _, wt := range items {
		wt.mu.Lock()
		patch := wt.patch
		wt.mu.Unlock()
		if len(bytes.TrimSpace(patch)) == 0 {
			continue
		}
		if _, err := git(ctx, wt.top, patch, "apply", "--index", "--3way", "--whitespace=nowarn"); err != nil {
			return fmt.Errorf("item %d: %w", wt.index, err)
		}
		if notice != nil {
			notice(fmt.Sprintf("%s[%d]: changes merged into the workspace", step, wt.index))
		}
	}
	return nil
}

// discard removes a step's worktrees.
func (w *worktrees) discard(ctx context.Context, run, step string, notice func(string)) {
	w.mu.Lock()
	var gone []*worktree
	for k, wt := range w.items {
		if wt.run == run && wt.step == step {
			gone = append(gone, wt)
			delete(w.items, k)
		}
	}
	w.mu.Unlock()
	for _, wt := range gone {
		removeWorktree(ctx, wt.top, wt.dir)
	}
}

// discardRun removes every worktree of a run, those of earlier processes
// included.
func (w *worktrees) discardRun(ctx context.Context, run string, notice func(string)) {
	w.mu.Lock()
	tops := map[string]bool{}
	var gone []*worktree
	for k, wt := range w.items {
		if wt.run == run {
			gone = append(gone, wt)
			tops[wt.top] = true
			delete(w.items, k)
		}
	}
	w.mu.Unlock()
	for _, wt := range gone {
		removeWorktree(ctx, wt.top, wt.dir)
	}
	for top := range tops {
		removeLeftovers(ctx, top, prefix(run, "", -1), notice)
	}
}

// removeLeftovers removes the worktrees of top whose directory name starts
// with namePrefix.
func removeLeftovers(ctx context.Context, top, namePrefix string, notice func(string)) {
	list, err := git(ctx, top, nil, "worktree", "list", "--porcelain")
	if err != nil {
		return
	}
	sc := bufio.NewScanner(strings.NewReader(list))
	for sc.Scan() {
		path, ok := strings.CutPrefix(sc.Text(), "worktree ")
		if ok && strings.HasPrefix(filepath.Base(path), namePrefix) {
			removeWorktree(ctx, top, path)
			if notice != nil {
				notice("removed leftover worktree " + path)
			}
		}
	}
}

func removeWorktree(ctx context.Context, top, dir string) {
	if _, err := git(ctx, top, nil, "worktree", "remove", "--force", dir); err != nil {
		os.RemoveAll(dir)
		_, _ = git(ctx, top, nil, "worktree", "prune")
	}
}

// git runs git in dir with stdin and returns its stdout; a failure carries
// the end of its stderr.
func git(ctx context.Context, dir string, stdin []byte, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %w: %s", args[0], err, tail(stderr.Bytes()))
	}
	return stdout.String(), nil
}

// tail is the last lines of a command's output, for an error message.
func tail(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 1000 {
		s = "..." + s[len(s)-1000:]
	}
	return s
}
