// Package driver runs a flow end to end on this machine, without an MCP
// host (docs/cli.md, "stratum run: the local driver"): a [Driver] hands
// every ready do step and consumer fanout item to an agent connector,
// reports each result to the engine, and resolves or stops at gates as its
// [GateMode] says ([Driver.Start], [Driver.Resume]).
//
// The package also has the production executors of the engine's effects
// (docs/engine.md, "Effects"), which the engine calls outside its
// transitions: [Dispatcher] runs one agent task of an engine-dispatched
// fanout ([NewDispatcher] is the one the module has; `stratum mcp` uses it
// too, and [Driver.Dispatcher] lends a Driver's), [Shell] runs evaluate
// commands, and [GitWorkspaces] makes, captures and merges the worktrees
// of fanout items. The engine isolates and merges engine fanouts itself
// through GitWorkspaces; the driver isolates and merges only the consumer
// fanout items it executes (it is their consumer).
//
// The person who runs it configures the agents ([AgentSetup]: options
// such as the sandbox, model and attempt time limit, a per-step hook for a
// policy, a progress view) and bounds each drive ([Options].RunTimeout,
// ending in a [RunTimeLimitError]). An attempt's measured wall time is
// reported as its ms usage. An agent that cannot run at all
// (agent.ErrUnavailable) halts the drive with a [HaltError] without using
// an attempt, so that the run can be resumed once the cause is fixed
// (docs/agents.md, "When the agent cannot run"). Gate decisions carry who
// made them and why ([GateAnswer]), and a question about a gate is asked
// with the gate's view and answered on its digest. In a git workspace each
// attempt of a do step is reported with what it changed there (snapshots
// before and after through a temporary index: docs/agents.md, "What a
// step changed").
//
// The run is an ordinary persisted run: everything the driver does goes
// through the engine's public API, so any other process (stratum gate,
// stratum flow cancel, an MCP client) can observe and act on the same run
// while it is driven, and an interrupted drive is resumed with
// [Driver.Resume]; the engine's tokens fence every report.
//
// What a server does besides (docs/mcp.md, "Background flows" and "Agent
// runs"): [Background] supervises the background runs of a state root,
// driving each with a Driver under the run's lease and taking over those
// whose holder died; [AgentRuns] runs claude or codex on a free-form
// prompt for an MCP client, recorded in a store of their own so that any
// process polls or stops them; [Cancel] cancels a run and tears its
// agents down wherever they run.
//
// driver imports engine, agent, expr, ir, store, internal/lease,
// internal/proc and internal/worktree. It must not import cli or mcp: the
// command line and the MCP server are front ends over it.
package driver
