// Package engine runs Stratum flows (docs/engine.md): it plans a run from a
// validated spec ([Engine.Plan]), hands out ready steps with dispatch
// tokens, decides whether a reported result actually finished its step
// ([Engine.StepDone]: contracts, ensures, iterate, attempts, on_fail
// routing), resolves gates ([Engine.ResolveGate], [Engine.GateViews]),
// runs subflows, fanouts, set and evaluate steps, carries loop values
// across gate revisions, enforces budgets and usage receipts, keeps
// checkpoints ([Engine.Commit], [Engine.Revert]), settles cancels
// ([Engine.Cancel]) and continues any run from its store ([Engine.Resume]).
//
// An [Engine] is built by [New] from a [store.Store] and [Options]. Every
// state-changing method is one transition inside the store's locked
// Update: the run's current state document (header, the steps still in
// progress, carry, checkpoints, spend, counters, a bounded index of the
// finished steps; no history) is replaced, the transition's events are
// appended to the run's hash-chained log, the run's summary is rewritten,
// and the method returns only once all of it is durable. A finished step's
// state is written once into the log and read back only when needed, so a
// step costs the same at step 10,000 as at step 10 (docs/engine.md, "What
// is persisted"). Any process can continue any run; concurrent calls are
// serialised by the store's per-run lock and fenced by tokens.
//
// A transition only decides. Effects (evaluate commands, judges, the
// agents of engine fanouts, git worktrees, patches and pre_merge commands)
// run outside every transition, never under the run's lock, through the
// executors of Options ([Evaluator], judge.Judge, [Dispatcher],
// [Workspaces]): a transition reserves the work, the executor runs, and
// another transition settles the outcome if the reservation is still
// current (docs/engine.md, "Effects"). The costly checks of a reported
// result (contract, ensures, iterate condition) are evaluated outside the
// lock too, and their outcome reused while the report's token is current
// (checks.go; docs/engine.md, "Checks outside the lock"). Engine fanouts with worktree
// isolation are the engine's whole job (per-item worktrees, captured
// patches persisted with the run, their merge into the workspace,
// restart-safe: merge.go); a Dispatcher only runs one agent task in the
// directory it is given.
//
// A process that drives a run holds the run's lease, through the store
// ([Engine.Hold], renewed by internal/lease; docs/engine.md, "Leases").
// While another owner holds it, the calls that drive the run are refused
// with [ErrRunLeased] unless they come from the holder's own driver
// ([AsDriver]); a gate decision, a cancel and every read never are.
// Background runs (PlanRequest.Background) are driven only under their
// lease: [Engine.TakeOver] continues one whose holder died,
// [Engine.PollBackground] and [Engine.CancelBackground] serve the clients
// that handed it over.
//
// Reads change nothing and take no lock on the usual path (the store's
// Load does not). [Engine.Audit] returns a run's whole record,
// [Engine.AuditStream] hands it to an [AuditVisitor] piece by piece
// (events oldest first, then steps) so that a long run's audit holds a
// page of its log, and [Engine.AuditWith] narrows it ([AuditOptions]: a
// page of events, some steps). [Engine.Poll] returns the events after a
// cursor, [Engine.Status] the current actionable state, [Engine.Patch] a
// recorded patch. [Engine.ListRuns] and [Engine.ListGates] (for every run)
// read the runs' summaries only, never their logs ([RunSummary]).
//
// Domain refusals are [*Error] values wrapping a sentinel ([ErrStaleToken],
// [ErrRunNotFound], [ErrRunTerminal], ...) with a stable [Error.Code] for
// the MCP and CLI front ends and, where the refusal returns it, the run's
// current state. Answers are exported structs ([Response], [AuditReport],
// [PollReport], [StepView], [GateView], ...) whose JSON tags are the wire
// form and whose jsonschema tags its documentation, so front ends return
// them as they are (docs/engine.md, "Responses").
//
// engine imports ir, expr, judge, store and internal/lease. It must not
// import cli, mcp, agent, driver or guard: front ends sit above it, and
// the executors that cause effects (the driver's) reach it through its
// interfaces.
package engine
