package engine

import (
	"context"
	"errors"
	"time"

	"github.com/stratum-go/stratum/ir"
)

// The executors: the only way the engine causes effects outside its
// store. Each is called outside every transition (never under a run's
// lock): a transition reserves the work (fenced by a token), the executor
// runs, and another transition settles the outcome if the reservation is
// still current (docs/engine.md, "Effects").

// Dispatcher runs one stage attempt of one item of an engine-dispatched
// fanout: one agent task in a given working directory (the driver's agent
// connectors implement it). It is called outside the run lock, possibly
// concurrently (up to the fanout's concurrency per fanout). Worktrees,
// change capture and merging are the engine's job, not the dispatcher's.
type Dispatcher interface {
	Dispatch(ctx context.Context, req DispatchRequest) (DispatchResult, error)
}

// Sandbox hints of a DispatchRequest: how much the agent may change.
const (
	SandboxReadOnly       = "read-only"
	SandboxWorkspaceWrite = "workspace-write"
)

// DispatchRequest describes one agent task of an engine fanout.
type DispatchRequest struct {
	RunID     string
	StepID    string // the fanout step (scoped id)
	ItemIndex int
	Stage     int
	Agent     string
	// Prompt is the rendered stage task.
	Prompt string
	// Item is the fanout element, Prev the previous stage's output (nil
	// in the first stage). They are the run's own values: read them, do
	// not modify them.
	Item any
	Prev any
	// Attempt counts this item's attempts across stages (1-based).
	Attempt         int
	PreviousFailure *Failure
	// Contract is the stage's output contract, nil when it declares none.
	Contract *Contract
	// Plan is the run's compiled spec (read only), for what Contract
	// cannot say, such as the declaration order of contract fields.
	Plan *ir.Plan
	// Workdir is where the agent works: the item's own git worktree (its
	// place for the workspace root) with worktree isolation, else the
	// workspace root.
	Workdir string
	// Sandbox is SandboxWorkspaceWrite in a worktree (the agent is
	// expected to change files there), SandboxReadOnly otherwise.
	Sandbox string
}

// DispatchResult is what an agent produced. A non-empty Failure wins over
// Output. An error from Dispatch is recorded as a connector failure.
type DispatchResult struct {
	Output    any
	Failure   string
	Usage     Ledger
	Telemetry *Telemetry
	// Stderr is the tail of the agent's standard error, for the audit.
	Stderr string
}

// Evaluator runs the command of an evaluate step.
type Evaluator interface {
	Evaluate(ctx context.Context, req EvaluateRequest) (EvaluateOutcome, error)
}

// EvaluateRequest is one evaluate command to run.
type EvaluateRequest struct {
	Command string
	// Input is the rendered `in` value (nil when absent); the default
	// runner writes its JSON to the command's stdin.
	Input   any
	Timeout time.Duration
	Dir     string
}

// EvaluateOutcome is the command's result: OK with the parsed JSON Result,
// or a failure Kind with a Reason.
type EvaluateOutcome struct {
	OK     bool
	Result any
	Kind   EvaluateFailure
	Reason string
}

// EvaluateFailure says how an evaluate command failed.
type EvaluateFailure string

// How an evaluate command can fail.
const (
	// EvaluateExit: the command exited non-zero or was killed by a signal.
	EvaluateExit EvaluateFailure = "exit"
	// EvaluateTimeout: the command ran past its time limit; its process
	// group was killed.
	EvaluateTimeout EvaluateFailure = "timeout"
	// EvaluateParse: its standard output was not one JSON value.
	EvaluateParse EvaluateFailure = "parse"
)

// ErrAgentUnavailable is what a Dispatcher's error wraps when the agent
// could not run at all (not installed, not logged in, no network, out of
// quota): the item is not charged an attempt; it waits, the fanout stops
// being driven and a dispatch_unavailable event says why, so that the run
// can be resumed once the cause is fixed.
var ErrAgentUnavailable = errors.New("agent unavailable")

// Workspaces performs the git work of fanout items with worktree
// isolation, outside every transition: one isolated worktree per item,
// its changes captured as a patch, patches merged into the workspace, and
// the fanout's pre_merge commands (docs/engine.md, "Worktree isolation").
type Workspaces interface {
	// Isolate makes a fresh worktree of the workspace's repository for
	// one item, first tearing down what an earlier process left for the
	// same item (names for which live reports true are kept: this
	// process still uses them).
	Isolate(ctx context.Context, req IsolateRequest) (Isolated, error)
	// Apply applies a captured patch to the workspace, all or nothing.
	// alreadyPresent reports that every change was present already (an
	// earlier application whose record was lost in a crash).
	Apply(ctx context.Context, workspace string, patch []byte) (alreadyPresent bool, err error)
	// RunCommand runs one pre_merge command in the workspace.
	RunCommand(ctx context.Context, workspace, command string) error
	// Sweep removes what earlier processes left for a fanout (by prefix),
	// except the names live reports.
	Sweep(ctx context.Context, workspace string, req IsolateRequest)
}

// IsolateRequest names the item a worktree is for.
type IsolateRequest struct {
	Workspace string
	RunID     string
	StepID    string
	// Index is the item's index, -1 for every item of the fanout (Sweep).
	Index int
	// Live reports, by base name, worktrees this process still uses.
	Live func(name string) bool
}

// Isolated is one item's worktree.
type Isolated interface {
	// Name is the worktree's base name (what Live is asked about).
	Name() string
	// Workdir is where the agent works: the workspace's place inside the
	// worktree, also the jail of the item's file predicates.
	Workdir() string
	// Anchor is the real path (no symbolic link in it) of the directory
	// the worktree was made in: file functions open Workdir through an
	// os.Root of it, so an item agent that replaces its worktree with a
	// link cannot lead them out ("" for none; docs/policy.md, "The
	// workspace jail").
	Anchor() string
	// Capture returns the item's changes as a patch (limit bytes at
	// most; larger is an error).
	Capture(ctx context.Context, limit int) ([]byte, error)
	// Remove tears the worktree down.
	Remove(ctx context.Context) error
}
