package driver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/expr"
	"github.com/stratum-go/stratum/internal/proc"
	"github.com/stratum-go/stratum/internal/worktree"
)

// The production executors of the engine's effects: the engine decides
// (reserving each effect in a transition), these perform, outside every
// transition.

// Shell is the engine.Evaluator that runs an evaluate step's command with
// /bin/sh -c in the workspace root, in its own process group (killed
// whole on timeout or when the run is cancelled), the step's JSON input on
// stdin and its stdout parsed as JSON.
type Shell struct{}

// Evaluate implements engine.Evaluator.
func (Shell) Evaluate(ctx context.Context, req engine.EvaluateRequest) (engine.EvaluateOutcome, error) {
	stdin := []byte("null")
	if req.Input != nil {
		b, err := expr.EncodeJSON(req.Input)
		if err != nil {
			return engine.EvaluateOutcome{}, err
		}
		stdin = b
	}
	res, err := proc.Run(ctx, proc.Spec{Argv: []string{"/bin/sh", "-c", req.Command}, Dir: req.Dir, Stdin: stdin,
		Timeout: req.Timeout, Grace: 500 * time.Millisecond})
	if err != nil && !errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		return engine.EvaluateOutcome{}, err
	}
	switch {
	case res.TimedOut:
		return engine.EvaluateOutcome{Kind: engine.EvaluateTimeout, Reason: fmt.Sprintf("after %s; the process group was killed", req.Timeout)}, nil
	case ctx.Err() != nil:
		return engine.EvaluateOutcome{Kind: engine.EvaluateExit, Reason: "stopped: " + context.Cause(ctx).Error() + "; the process group was killed"}, nil
	case !res.Success():
		msg := strings.TrimSpace(string(res.StderrTail))
		if res.Signal != "" {
			return engine.EvaluateOutcome{Kind: engine.EvaluateExit, Reason: fmt.Sprintf("signal %s: %s", res.Signal, msg)}, nil
		}
		return engine.EvaluateOutcome{Kind: engine.EvaluateExit, Reason: fmt.Sprintf("exit %d: %s", res.ExitCode, msg)}, nil
	case res.StdoutTruncated:
		return engine.EvaluateOutcome{Kind: engine.EvaluateParse, Reason: "stdout exceeded the output limit"}, nil
	}
	v, err := expr.DecodeJSON(bytes.TrimSpace(res.Stdout))
	if err != nil {
		return engine.EvaluateOutcome{Kind: engine.EvaluateParse, Reason: err.Error()}, nil
	}
	return engine.EvaluateOutcome{OK: true, Result: v}, nil
}

// GitWorkspaces is the engine.Workspaces executor over git worktrees: one
// detached worktree per fanout item in TempDir, patches captured against
// the worktree's base commit and applied all or nothing.
type GitWorkspaces struct {
	// TempDir is where item worktrees are made; empty means os.TempDir().
	TempDir string
	// CommandTimeout bounds each pre_merge command (the policy's longest
	// command time limit, docs/policy.md); zero means 30 minutes.
	CommandTimeout time.Duration
	// mu serialises making and removing worktrees: git does not support
	// concurrent `git worktree add` on one repository (one can read
	// another's half-written administrative files).
	mu sync.Mutex
}

// Isolate implements engine.Workspaces.
func (g *GitWorkspaces) Isolate(ctx context.Context, req engine.IsolateRequest) (engine.Isolated, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	wt, err := worktree.Create(ctx, worktree.Spec{Workspace: req.Workspace, Prefix: worktree.Prefix(req.RunID, req.StepID, req.Index),
		TempDir: g.TempDir, Live: req.Live})
	if err != nil {
		return nil, err
	}
	// The anchor of the item's file functions (engine.Isolated.Anchor):
	// without it, they would not be jailed as documented, so no worktree.
	anchor, err := filepath.EvalSymlinks(filepath.Dir(wt.Dir))
	if err != nil {
		_ = wt.Remove(ctx)
		return nil, fmt.Errorf("resolve the directory of worktree %s: %w", wt.Dir, err)
	}
	return &isolated{wt: wt, g: g, anchor: anchor}, nil
}

// Apply implements engine.Workspaces.
func (g *GitWorkspaces) Apply(ctx context.Context, workspace string, patch []byte) (bool, error) {
	how, err := worktree.Apply(ctx, workspace, patch)
	return how == worktree.AlreadyPresent, err
}

// RunCommand implements engine.Workspaces.
func (g *GitWorkspaces) RunCommand(ctx context.Context, workspace, command string) error {
	return worktree.RunCommand(ctx, workspace, command, g.CommandTimeout)
}

// Sweep implements engine.Workspaces.
func (g *GitWorkspaces) Sweep(ctx context.Context, workspace string, req engine.IsolateRequest) {
	g.mu.Lock()
	defer g.mu.Unlock()
	worktree.RemoveLeftovers(ctx, workspace, g.TempDir, worktree.Prefix(req.RunID, req.StepID, req.Index), req.Live)
}

// isolated is one item's worktree.
type isolated struct {
	wt     *worktree.Worktree
	g      *GitWorkspaces
	anchor string
}

func (w *isolated) Name() string    { return filepath.Base(w.wt.Dir) }
func (w *isolated) Workdir() string { return w.wt.Workdir }
func (w *isolated) Anchor() string  { return w.anchor }

func (w *isolated) Capture(ctx context.Context, limit int) ([]byte, error) {
	return w.wt.Capture(ctx, limit)
}

func (w *isolated) Remove(ctx context.Context) error {
	w.g.mu.Lock()
	defer w.g.mu.Unlock()
	return w.wt.Remove(ctx)
}
