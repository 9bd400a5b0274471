package mcp

import "github.com/stratum-go/stratum/engine"

// The result shapes of the run tools are the engine's own types
// (engine.Response, engine.AuditReport, engine.PollReport, ...): their
// json tags are the wire form and their jsonschema tags the documentation
// a model reads (see schema.go), so the engine owns the wire and this
// package sends its answers unchanged (docs/mcp.md).
//
// Only status is required in the advertised schema (see tool.go): an
// error result ({"status": "error", "error": {...}}) must validate against
// the same output schema as a success. Fields without omitzero are
// nevertheless always present in a success.

// statusError is the status of every refused call.
const statusError = "error"

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// runStatuses lists run statuses as a tool's advertised statuses.
func runStatuses(ss ...engine.RunStatus) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = string(s)
	}
	return out
}
