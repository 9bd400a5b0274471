package mcp

import (
	"github.com/stratum-go/stratum/guard"
)

func (s *server) guardMigrateTool() tool {
	return guardTool(s, toolMeta{
		name:  "stratum_guard_migrate",
		title: "Replace a guarded policy (signed)",
		description: `Replace a guarded resource's policy with any valid policy, on a person's signed one-shot authorization (stratum guard authorize --kind migrate prints the payload; they sign it with ssh-keygen -Y sign -n stratum-guard-migrate). The current state is kept. It is the emergency path (and the repair for a tampered registry); never call it without a signature the person gave you.
Returns migrated with the new checksum, graph_version, the ledger entry and the signer. A bad or spent signature is refused.
Example: stratum_guard_migrate {"resource_id": "tracker:FEAT-1", "new_graph": {"todo": ["done"]}, "new_edge_predicates": {}, "new_terminal": ["done"], "authorization": "-----BEGIN SSH SIGNATURE-----\n…", "rationale": "simplify the workflow"}`,
		statuses:    []string{"migrated"},
		destructive: true,
	}, (*guard.Guard).Migrate)
}
