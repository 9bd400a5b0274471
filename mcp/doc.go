// Package mcp is Stratum's Model Context Protocol server: the tool surface
// that coding agents (Claude Code, Codex, any MCP host) call to validate
// specs and drive runs. It is a thin front end over the engine: every tool
// decodes its arguments, calls one engine method and encodes the answer.
// A rule that matters to a run lives in engine (or ir, guard, ...), never
// here, so that the CLI and the MCP server give the same answer.
//
// Conventions of the wire (docs/mcp.md):
//   - parameter names runId, stepId, dispatchToken, gateToken, decision;
//   - a spec is YAML text or a JSON object;
//   - every result carries a string status and is returned both as
//     structured content and as JSON text content;
//   - a domain refusal (invalid spec or input, unknown run, stale token,
//     terminal or locked run, ...) is a tool result with isError set and
//     {"status": "error", "error": {"code", "message", ...}}; it is never a
//     JSON-RPC error and never ends the server.
//
// The tool annotations tell the truth about the effects policy the server
// was started with (Deps.Effects; docs/policy.md), and stratum_plan passes
// the roots a client declares (roots/list, cached per session: roots.go)
// for the engine's policy to judge a workspace root by.
//
// One file per tool (validate.go, plan.go, ...). NewServer registers them,
// and the language reference (language.md, [Language]) as the resource
// [LanguageURI] and the prompt [WriteFlowPrompt] (docs.go). Everything a
// model reads besides the answers (instructions.md, the descriptions, the
// reference) is pinned in testdata/model-facing.golden and the schemas of
// each tool in testdata/tools/; docs/mcp.md, "What a model sees", says what
// each host shows of them.
//
// mcp imports engine, ir and store types. It must not import cli, and it
// holds no run state of its own: everything lives in the engine's store.
package mcp
