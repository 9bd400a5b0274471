package mcp

import (
	"github.com/stratum-go/stratum/guard"
)

func (s *server) guardOverrideTool() tool {
	return guardTool(s, toolMeta{
		name:  "stratum_guard_override",
		title: "Override a guarded edge (signed)",
		description: `Move a guarded resource along a declared edge WITHOUT its predicates, on a person's signed one-shot authorization: the escape hatch when the evidence cannot be produced. Only a person can create the signature (stratum guard authorize prints the payload; they sign it with ssh-keygen -Y sign -n stratum-guard-override); never call this without one they gave you.
Returns deviation with the ledger entry, the rationale and the signer. A bad or spent signature is refused (error.code override_unavailable).
Example: stratum_guard_override {"resource_id": "tracker:FEAT-1", "from_state": "doing", "to_state": "done", "authorization": "-----BEGIN SSH SIGNATURE-----\n…", "rationale": "shipped by hand during the outage"}`,
		statuses: []string{"deviation"},
	}, (*guard.Guard).Override)
}
