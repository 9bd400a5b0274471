package mcp

import (
	"github.com/stratum-go/stratum/guard"
)

func (s *server) guardUpgradeTool() tool {
	return guardTool(s, toolMeta{
		name:  "stratum_guard_upgrade",
		title: "Extend a guarded policy",
		description: `Extend a guarded resource's policy without authorization, provided the change only adds: new states and new edges into new states, with nothing removed and no existing predicate, stake or terminal state changed. An identical policy is unchanged.
Returns migrated (the new checksum and graph_version) or unchanged. Any weakening change is refused with error.code incompatible_policy_upgrade listing every reason; such changes need stratum_guard_migrate with a person's signature.
Example: stratum_guard_upgrade {"resource_id": "tracker:FEAT-1", "new_graph": {"todo": ["doing"], "doing": ["done", "review"], "review": []}, "new_edge_predicates": {"doing->done": [{"type": "deterministic", "statement": "server_file_exists('CHANGELOG.md')"}]}, "new_terminal": ["done"], "rationale": "add a review state"}`,
		statuses:   []string{"migrated", "unchanged"},
		idempotent: true,
	}, (*guard.Guard).Upgrade)
}
