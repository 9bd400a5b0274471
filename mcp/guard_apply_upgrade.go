package mcp

import (
	"github.com/stratum-go/stratum/guard"
)

func (s *server) guardApplyUpgradeTool() tool {
	return guardTool(s, toolMeta{
		name:  "stratum_guard_apply_upgrade",
		title: "Apply a signed policy upgrade",
		description: `Move a guarded resource to the exact target policy of a signed upgrade descriptor that the operator installed on this server (STRATUM_GUARD_UPGRADE_DESCRIPTORS), only from the descriptor's reviewed source policy. Use it when the operator tells you which descriptor to apply.
Returns applied (new checksum and graph_version) or unchanged (already at the target). A missing or badly signed descriptor set is refused with error.code upgrade_descriptor_unavailable; a resource not on the reviewed source policy with upgrade_descriptor_mismatch.
Example: stratum_guard_apply_upgrade {"resource_id": "tracker:FEAT-1", "descriptor_id": "add-review-2026-11"}`,
		statuses:   []string{"applied", "unchanged"},
		idempotent: true,
	}, (*guard.Guard).ApplyUpgrade)
}
