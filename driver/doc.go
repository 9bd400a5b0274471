// Package driver runs a flow end to end on this machine (DESIGN decision
// 9): it hands every ready do step and consumer fanout item to an agent
// connector, reports each result to the engine, resolves or stops at gates
// as told, and lends the engine a Dispatcher backed by the same connectors
// for engine-dispatched fanouts. NewDispatcher is that Dispatcher on its
// own: the one the module has, which `stratum mcp` uses too. The engine
// isolates and merges engine fanouts itself; the driver isolates and
// merges only the consumer fanout items it executes (it is their
// consumer).
//
// The person who runs it configures the agents (AgentSetup: options such
// as the sandbox, model and attempt time limit, a per-step hook for a
// policy, a progress view) and bounds each drive (Options.RunTimeout). An
// attempt's measured wall time is reported as its ms usage. An agent that
// cannot run at all (agent.ErrUnavailable) halts the drive without using
// an attempt, so that the run can be resumed once the cause is fixed
// (docs/agents.md, "When the agent cannot run"). Gate decisions carry who
// made them and why (GateAnswer), and a question about a gate is asked
// with the gate's view and answered on its digest. In a git workspace each
// attempt of a do step is reported with what it changed there (snapshots
// before and after through a temporary index: docs/agents.md, "What a
// step changed").
//
// The run is an ordinary persisted run: everything the driver does goes
// through the engine's public API, so any other process (stratum gate,
// stratum flow cancel, an MCP client) can observe and act on the same run
// while it is driven, and an interrupted drive is resumed with Resume.
//
// driver imports engine, agent, ir and internal/worktree. It must not
// import cli or mcp: the command line and the MCP server are front ends
// over it.
package driver
