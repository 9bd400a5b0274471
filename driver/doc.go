// Package driver runs a flow end to end on this machine (DESIGN decision
// 9): it hands every ready do step and consumer fanout item to an agent
// connector, reports each result to the engine, resolves or stops at gates
// as told, and lends the engine a Dispatcher backed by the same connectors
// for engine-dispatched fanouts, with per-item git worktrees when a fanout
// asks for isolation.
//
// The run is an ordinary persisted run: everything the driver does goes
// through the engine's public API, so any other process (stratum gate,
// stratum flow cancel, an MCP client) can observe and act on the same run
// while it is driven, and an interrupted drive is resumed with Resume.
//
// driver imports engine, agent and ir. It must not import cli or mcp: the
// command line and a future MCP background runner are front ends over it.
package driver
