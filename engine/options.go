package engine

import (
	"time"

	"github.com/stratum-go/stratum/judge"
)

// Options configure an Engine. The zero value causes no effect at all:
// the system clock, crypto/rand ids, no judge (judged ensures fail
// closed), no dispatcher (engine-dispatched fanouts fail the run
// clearly), no evaluator (evaluate steps fail), no workspaces (worktree
// fanouts fail), the process's working directory as the default workspace
// root and a 16 MiB limit on an item's captured changes. The executors
// that do cause effects (Evaluator, Judge, Dispatcher, Workspaces) are
// given by whoever composes the engine (the driver package has the
// production ones; see docs/engine.md, "Effects").
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
	// Evaluator runs the command of an evaluate step. Nil makes evaluate
	// steps fail with "evaluate commands are not available".
	Evaluator Evaluator
	// Workspaces makes, captures and merges the git worktrees of fanout
	// items with worktree isolation. Nil makes such a fanout fail.
	Workspaces Workspaces
	// Workspace decides the workspace root of a new run.
	Workspace WorkspacePolicy
	// Policy is what the person who started Stratum allows runs to do
	// (docs/policy.md): asked at plan time for every effect of the spec
	// and the workspace root, and before each command and agent. Nil
	// allows whatever the executors given here can do, in any root.
	Policy Policy
	// PatchLimit bounds the captured changes of one worktree item, in
	// bytes; an item over it fails its attempt. Zero means 16 MiB.
	PatchLimit int
	// EnsureBudget bounds the work of the ensures (and iterate condition)
	// of one report together, in expression work units; a report that
	// exceeds it fails its attempt with a resource_limit reason. Zero
	// means expr.DefaultBudget.
	EnsureBudget int64
	// LeaseOwner names this process as the holder of the run leases it
	// takes to drive runs (docs/engine.md, "Leases"): unique per process,
	// and readable, because refusals name it. Empty means a fresh
	// "<host>:<pid>:<random>".
	LeaseOwner string
	// LeaseTTL is the time to live of those leases, renewed at a third
	// of it; a dead holder's run is taken over once it runs out. Zero
	// means DefaultLeaseTTL.
	LeaseTTL time.Duration
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
