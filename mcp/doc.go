// Package mcp is Stratum's Model Context Protocol server: the tool surface
// that coding agents (Claude Code, Codex, any MCP host) call to validate
// specs and drive runs. It is a thin front end over the engine: every tool
// decodes its arguments, calls one engine (or guard, or speckit) method
// and encodes the answer. A rule that matters to a run lives in engine
// (or ir, guard, ...), never here, so that the CLI and the MCP server give
// the same answer.
//
// Conventions of the wire (docs/mcp.md, "Wire conventions"):
//   - parameter names runId, stepId, dispatchToken, gateToken, decision;
//   - a spec is YAML text or a JSON object;
//   - every result carries a string status and is returned both as
//     structured content and as JSON text content;
//   - a domain refusal (invalid spec or input, unknown run, stale token,
//     terminal or locked run, ...) is a tool result with isError set and
//     {"status": "error", "error": {"code", "message", ...}}; it is never a
//     JSON-RPC error and never ends the server.
//
// [NewServer] registers, from [Deps], one file per tool (validate.go,
// plan.go, ...): nineteen run tools (the background-flow and agent-run
// tools among them, served through [Deps].Background and [Deps].Agents)
// and, when Deps.Guard is set, the seven guard tools, 26 in all
// (docs/mcp.md, "Tools"); the language reference
// ([Language]) as the resource [LanguageURI] and the prompt
// [WriteFlowPrompt] (docs.go); and the server's [Instructions]. Everything
// a model reads besides the answers (instructions.md, the descriptions,
// the reference) is pinned in testdata/model-facing.golden and the schemas
// of each tool in testdata/tools/; docs/mcp.md, "What a model sees", says
// what each host shows of them.
//
// The tool annotations tell the truth about the effects policy the server
// was started with ([Deps].Effects, [Effects]; docs/policy.md), and
// stratum_plan passes the roots a client declares (roots/list, cached per
// session: roots.go) for the engine's policy to judge a workspace root by.
// [ServeStream] serves `stratum mcp` on stdio over [NewStreamTransport],
// and answers the plain tool calls itself, with the handler and the
// encoding the SDK would use (direct.go). The transport answers
// a line that is not one JSON-RPC message instead of ending the session,
// and bounds what a client can make it hold ([MaxFrameBytes],
// [MaxInFlight]; docs/mcp.md, "Limits and backpressure"). A call that
// takes a while sends progress notifications when its client gave a
// progress token (progress.go, [DefaultProgressInterval]).
//
// mcp imports engine, driver (background runs, agent runs, cancel), agent,
// guard, ir and speckit. It must not import cli, and it holds no run state
// of its own: everything lives in the engine's and the agent runs'
// stores.
package mcp
