// Package engine runs Stratum flows: it plans a run from a validated spec,
// hands out ready steps with dispatch tokens, decides whether a reported
// result actually finished its step (contracts, ensures, iterate,
// attempts, on_fail routing), resolves gates, runs subflows, fanouts, set
// and evaluate steps, carries loop values across gate revisions, enforces
// budgets, keeps checkpoints, and answers audits and polls.
//
// An Engine is built from a store.Store and Options (clock, id source,
// judge, dispatcher, evaluator, workspace policy). Every state-changing
// method runs as one transition inside the store's locked Update: the
// run's current state (a compact JSON document: header, step states,
// carry, checkpoints, spend, counters — no history) is replaced and the
// transition's audit events are appended to the run's hash-chained log,
// and the method returns only once both are durable. Any process can
// continue any run; concurrent calls are serialised by the store's
// per-run lock and fenced by tokens.
//
// Domain refusals are *Error values wrapping a sentinel (ErrStaleToken,
// ErrRunNotFound, ErrRunTerminal, ...) with a stable Code() for the MCP
// and CLI front ends, and, where the refusal returns it, the run's current
// state. Responses are exported structs whose JSON is the wire vocabulary
// of spec/mcp.md, so front ends return them as they are.
//
// Engine-dispatched fanouts with worktree isolation are the engine's
// whole job: per-item git worktrees, the captured patches (persisted with
// the run) and their merge into the workspace, restart-safe (merge.go);
// the Dispatcher only runs one agent task in the directory it is given.
//
// engine imports ir, expr, store, internal/proc and internal/worktree. It
// must not import cli, mcp, agent, driver or guard: front ends sit above
// it, and agent connectors reach it through the Dispatcher interface.
package engine
