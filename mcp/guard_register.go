package mcp

import (
	"github.com/stratum-go/stratum/guard"
)

func (s *server) guardRegisterTool() tool {
	return guardTool(s, toolMeta{
		name:  "stratum_guard_register",
		title: "Register a guarded resource",
		description: `Register the lifecycle of an external resource (a ticket, a feature, a release) as a guarded state machine: its states, the edges between them, and the evidence each edge requires. Afterwards the resource moves only through stratum_guard_transition along declared edges whose predicates hold, and every attempt is recorded in a hash-chained ledger. Registering the same policy again is a no-op.
Returns registered (or exists) with guard_id and the policy checksum. A different policy for an already registered resource is refused with error.code guard_already_registered (use stratum_guard_upgrade).
Example: stratum_guard_register {"resource_id": "tracker:FEAT-1", "graph": {"todo": ["doing"], "doing": ["done"]}, "edge_predicates": {"doing->done": [{"type": "deterministic", "statement": "server_file_exists('CHANGELOG.md')"}]}, "initial": "todo", "terminal": ["done"], "workspace_root": "/home/me/project"}`,
		statuses:   []string{"registered", "exists"},
		idempotent: true,
	}, (*guard.Guard).Register)
}
