package engine

import (
	"context"
	"time"

	"github.com/stratum-go/stratum/ir"
	"github.com/stratum-go/stratum/judge"
)

// Options configure an Engine. The zero value gives production defaults:
// the system clock, crypto/rand ids, no judge (judged ensures fail closed),
// no dispatcher (engine-dispatched fanouts fail the run clearly), the
// default evaluate runner (/bin/sh -c in the workspace), the process's
// working directory as the default workspace root, worktrees of isolated
// fanout items in the system's temporary directory and a 16 MiB limit on
// an item's captured changes.
type Options struct {
	// Now returns the current time. Nil means time.Now.
	Now func() time.Time
	// NewID returns a fresh unique id for runs, dispatch tokens and gate
	// tokens. Nil means random 128-bit UUIDs (version 4) from crypto/rand.
	// Tests inject a deterministic source; production must not.
	NewID func() string
	// Judge decides judged ensures. Nil makes every judged ensure fail
	// closed with "judged predicate requires a configured judge runner".
	Judge judge.Judge
	// Dispatcher runs the items of engine-dispatched fanouts. Nil makes a
	// run that reaches such a fanout fail with "engine dispatch is not
	// configured", unless DeferDispatch is set.
	Dispatcher Dispatcher
	// DeferDispatch, with no Dispatcher, leaves the items of engine
	// fanouts pending for the process that drives the run (a command
	// that only decides a gate or cancels must not fail a run whose
	// driver runs elsewhere).
	DeferDispatch bool
	// Evaluator runs the command of an evaluate step. Nil means the
	// default runner (/bin/sh -c COMMAND in the workspace root, the JSON
	// input on stdin, stdout parsed as JSON, the process group killed on
	// timeout).
	Evaluator Evaluator
	// Workspace decides the workspace root of a new run.
	Workspace WorkspacePolicy
	// WorktreeDir is where the worktrees of engine fanout items with
	// worktree isolation are made. Empty means os.TempDir().
	WorktreeDir string
	// PatchLimit bounds the captured changes of one worktree item, in
	// bytes; an item over it fails its attempt. Zero means 16 MiB.
	PatchLimit int
}

// WorkspacePolicy decides the workspace root of new runs: the jail of file
// predicates and the working directory of evaluate commands and engine
// dispatch.
type WorkspacePolicy struct {
	// Default is used when a plan names no workspace root. Empty means the
	// process's working directory.
	Default string
	// Check, when set, may refuse a root (already absolute and cleaned);
	// its error is returned to the planner as invalid input.
	Check func(root string) error
}

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
// or a failure Kind ("exit", "timeout", "parse") with a Reason.
type EvaluateOutcome struct {
	OK     bool
	Result any
	Kind   string
	Reason string
}
