package engine

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/stratum-go/stratum/expr"
	"github.com/stratum-go/stratum/internal/proc"
	"github.com/stratum-go/stratum/internal/worktree"
)

// The executors of the engine's tests: real commands and real git
// worktrees, as the production executors (package driver) run them. The
// engine's tests cannot import driver (it imports engine), so these are
// the thinnest adapters over the same internal packages.

// testShell runs evaluate commands with /bin/sh -c in a process group.
type testShell struct{}

func (testShell) Evaluate(ctx context.Context, req EvaluateRequest) (EvaluateOutcome, error) {
	stdin := []byte("null")
	if req.Input != nil {
		b, err := expr.EncodeJSON(req.Input)
		if err != nil {
			return EvaluateOutcome{}, err
		}
		stdin = b
	}
	res, err := proc.Run(ctx, proc.Spec{Argv: []string{"/bin/sh", "-c", req.Command}, Dir: req.Dir, Stdin: stdin,
		Timeout: req.Timeout, Grace: 500 * time.Millisecond})
	switch {
	case res.TimedOut:
		return EvaluateOutcome{Kind: EvaluateTimeout, Reason: fmt.Sprintf("after %s; the process group was killed", req.Timeout)}, nil
	case ctx.Err() != nil:
		return EvaluateOutcome{Kind: EvaluateExit, Reason: "stopped"}, nil
	case err != nil:
		return EvaluateOutcome{}, err
	case !res.Success():
		return EvaluateOutcome{Kind: EvaluateExit, Reason: fmt.Sprintf("exit %d: %s", res.ExitCode, strings.TrimSpace(string(res.StderrTail)))}, nil
	}
	v, err := expr.DecodeJSON(bytes.TrimSpace(res.Stdout))
	if err != nil {
		return EvaluateOutcome{Kind: EvaluateParse, Reason: err.Error()}, nil
	}
	return EvaluateOutcome{OK: true, Result: v}, nil
}

// testWorkspaces makes git worktrees in dir.
type testWorkspaces struct {
	dir string
	mu  sync.Mutex
}

func (g *testWorkspaces) Isolate(ctx context.Context, req IsolateRequest) (Isolated, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	wt, err := worktree.Create(ctx, worktree.Spec{Workspace: req.Workspace, Prefix: worktree.Prefix(req.RunID, req.StepID, req.Index),
		TempDir: g.dir, Live: req.Live})
	if err != nil {
		return nil, err
	}
	return &testTree{wt: wt, g: g}, nil
}

func (g *testWorkspaces) Apply(ctx context.Context, workspace string, patch []byte) (bool, error) {
	how, err := worktree.Apply(ctx, workspace, patch)
	return how == worktree.AlreadyPresent, err
}

func (g *testWorkspaces) RunCommand(ctx context.Context, workspace, command string) error {
	return worktree.RunCommand(ctx, workspace, command, 0)
}

func (g *testWorkspaces) Sweep(ctx context.Context, workspace string, req IsolateRequest) {
	g.mu.Lock()
	defer g.mu.Unlock()
	worktree.RemoveLeftovers(ctx, workspace, g.dir, worktree.Prefix(req.RunID, req.StepID, req.Index), req.Live)
}

type testTree struct {
	wt *worktree.Worktree
	g  *testWorkspaces
}

func (w *testTree) Name() string    { return filepath.Base(w.wt.Dir) }
func (w *testTree) Workdir() string { return w.wt.Workdir }
func (w *testTree) Anchor() string {
	anchor, _ := filepath.EvalSymlinks(filepath.Dir(w.wt.Dir))
	return anchor
}
func (w *testTree) Capture(ctx context.Context, limit int) ([]byte, error) {
	return w.wt.Capture(ctx, limit)
}
func (w *testTree) Remove(ctx context.Context) error {
	w.g.mu.Lock()
	defer w.g.mu.Unlock()
	return w.wt.Remove(ctx)
}

// withExecutors gives opts the test executors it lacks (worktrees in dir).
func withExecutors(opts Options, dir string) Options {
	if opts.Evaluator == nil {
		opts.Evaluator = testShell{}
	}
	if opts.Workspaces == nil {
		opts.Workspaces = &testWorkspaces{dir: dir}
	}
	return opts
}
