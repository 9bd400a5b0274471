// Package agent runs one attempt of a flow step by an agent: it hands the
// task, the expected output contract and the previous failure to a
// connector, and turns what the agent produced into a step result (a JSON
// output in the expr value model, or a failure reason, plus usage and
// telemetry).
//
// Connectors: Command (any executable speaking the stdin/stdout JSON
// protocol of docs/agents.md), Claude (`claude -p`), Codex (`codex exec`)
// and Human (a person at a terminal). Resolver maps an `--agent` value or a
// step's `agent:` name to a connector.
//
// An agent's misbehaviour (non-zero exit, garbage output, timeout) is a
// Result with Failure set, which the engine records as a failed attempt; an
// error from Run means the connector itself is unusable (executable missing,
// bad configuration) or the context ended.
//
// agent imports expr (the JSON value model) and internal/proc (child
// processes); it must not import ir, engine, store, mcp or cli: the engine
// builds Requests, agent knows nothing of specs or runs.
package agent
