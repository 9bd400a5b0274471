package mcp

import (
	"github.com/stratum-go/stratum/guard"
)

func (s *server) guardTransitionTool() tool {
	return guardTool(s, toolMeta{
		name:  "stratum_guard_transition",
		title: "Move a guarded resource",
		description: `Ask to move a guarded resource along one declared edge (from_state -> to_state). Stratum checks the edge's predicates against real evidence (files, git, commands, the ledger) and records the attempt, applied or refused, in the resource's ledger. Give an idempotency_key when you may retry the same move.
Returns applied (the resource is now in to_state), refused (a predicate failed: see verdict for which and why; fix the evidence, then try again) or replayed (the same idempotency_key was already recorded), with the ledger entry's digests. A from_state that is not the current state is refused with error.code stale_from_state; an undeclared edge with illegal_edge.
Example: stratum_guard_transition {"resource_id": "tracker:FEAT-1", "from_state": "doing", "to_state": "done", "artifacts": {"summary": "changelog updated"}, "idempotency_key": "feat-1-done-1"}`,
		statuses: []string{"applied", "refused", "replayed"},
	}, (*guard.Guard).Transition)
}
