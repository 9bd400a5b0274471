// Package agent runs one attempt of a flow step by an agent: it hands the
// task, the expected output contract and the previous failure to a
// connector, and turns what the agent produced into a step result (a JSON
// output in the expr value model, or a failure reason, plus usage,
// telemetry and the stderr tail).
//
// Connectors: [Command] (any executable speaking the stdin/stdout JSON
// protocol of docs/agents.md), [Claude] (`claude -p`, stream-json), [Codex]
// (`codex exec --json`) and [Human] (a person at a terminal). [Resolver] maps
// an `--agent` value or a step's `agent:` name to a [Connector]. One [Options]
// struct (sandbox, permission mode, model, effort, tools, thinking, time
// limit, progress callback, start record) configures every connector;
// each refuses what it cannot honour ([Options.Validate]).
//
// An agent's misbehaviour (non-zero exit, garbage output, the time limit) is a
// [Result] with Failure set, which the engine records as a failed attempt. An
// error from [Connector.Run] means the attempt did not happen: the agent cannot
// run at all (an [*UnavailableError]: not installed, not logged in, no network,
// a quota reached; errors.Is(err, [ErrUnavailable])), an option it cannot
// honour, or the context ended.
//
// Claude and Codex also run free-form tasks outside any flow
// ([TaskRunner.RunTask]), in the foreground or detached ([StartTask]), and a
// detached agent can be stopped from another process through its
// [ProcessRecord] ([Kill]). Every agent process dies with the process that
// started it (internal/proc; docs/agents.md, "When Stratum dies").
//
// agent imports expr (the JSON value model) and internal/proc (child
// processes); it must not import ir, engine, store, mcp or cli: the engine
// builds Requests, agent knows nothing of specs or runs.
package agent
