// Package web is the web view of `stratum serve` (docs/serve.md): the runs
// of a store, each run with its step graph, steps, attempts, outputs,
// spend and event log and the verdict on its hash chain, and the gates
// waiting on a person, decided with the gate token and the digest of the
// content the page showed. Pages are rendered on the server with
// html/template (every recorded string is untrusted and escaped where it
// lands, the SVG graph included) and kept live by a server-sent event
// stream that polls the engine; the script and style are embedded static
// files, so nothing is fetched from anywhere else. A long run's page holds
// its closed steps' summaries only: a step's details are its own page,
// fetched when it is opened. Every request needs the
// server's token (a bearer token, or the cookie the printed address sets),
// names an allowed host, and, for a mutation, comes from the server's own
// pages. The MCP endpoint the command mounts at /mcp is served behind the
// same checks, to bearer tokens only.
//
// web imports engine, ir (a run's plan), store (the chain verifier's report), internal/graph
// and internal/eventtext. It owns no rule about runs: every answer is the
// engine's, so the pages, the CLI and the MCP tools agree. It must not
// import cli or mcp (the command composes them).
package web
