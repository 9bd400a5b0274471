package guard

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"

	"github.com/stratum-go/stratum/guard/internal/canon"
	"github.com/stratum-go/stratum/guard/internal/sshsig"
)

// Signature namespaces, one per purpose: a signature made for one purpose
// can never be spent on another.
const (
	NamespaceOverride    = "stratum-guard-override"
	NamespaceMigrate     = "stratum-guard-migrate"
	NamespaceDescriptors = "stratum-guard-descriptors"
)

// Authorization kinds.
const (
	KindOverride = "override"
	KindMigrate  = "migrate"
)

// overridePayload is the exact byte string an override signature covers.
func overridePayload(resourceID, from, to, rationale, head string) ([]byte, error) {
	return canon.Marshal(map[string]any{
		"action": KindOverride, "resource_id": resourceID, "from_state": from, "to_state": to,
		"rationale": rationale, "ledger_head": head,
	})
}

// migratePayload is the exact byte string a migrate signature covers.
func migratePayload(resourceID, policyChecksum, rationale, head string) ([]byte, error) {
	return canon.Marshal(map[string]any{
		"action": KindMigrate, "resource_id": resourceID, "policy_checksum": policyChecksum,
		"rationale": rationale, "ledger_head": head,
	})
}

// inputChecksum is the checksum of a submitted policy before validation
// (what a migrate signature names). For any policy that validates it
// equals the validated policy's checksum: nil maps hash as {}, terminal as
// its sorted strings.
func inputChecksum(in PolicyInput) (string, error) {
	terminal := []string{}
	if in.Terminal != nil {
		t, ok := stringList(in.Terminal)
		if !ok {
			return "", errorf(CodeInvalidStateName, "terminal must be an array of state names")
		}
		terminal = slices.Sorted(slices.Values(t))
	}
	stakes, ok := stakesMap(in.Stakes)
	if !ok {
		return "", errorf(CodeInvalidStateName, "stakes must be an object of \"from->to\": stake")
	}
	orEmpty := func(m map[string]any) map[string]any {
		if m == nil {
			return map[string]any{}
		}
		return m
	}
	b, err := canon.Marshal(map[string]any{
		"graph": orEmpty(in.Graph), "edge_predicates": orEmpty(in.EdgePredicates),
		"terminal": terminal, "stakes": stakes,
	})
	if err != nil {
		return "", errorf(CodeEvidenceParseError, "policy has no canonical JSON form: %v", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// trustRoot parses the embedded allowed-signers file. A malformed file
// disables every signed path; an empty one trusts nobody.
func (g *Guard) trustRoot() (*sshsig.AllowedSigners, error) {
	return sshsig.ParseAllowedSigners(g.trust)
}

// authorize verifies an override or migrate authorization over payload.
// Every failure is override_unavailable and echoes the payload the server
// expected (most honest failures are a moved ledger head).
func (g *Guard) authorize(namespace, authorization string, payload []byte) (sshsig.Verified, error) {
	if blank(authorization) {
		return sshsig.Verified{}, errorf(CodeOverrideUnavailable,
			"authorization is empty: run `stratum guard authorize` for the exact payload, sign it with `ssh-keygen -Y sign -n %s`, and pass the .sig text as authorization", namespace)
	}
	trust, err := g.trustRoot()
	if err != nil {
		return sshsig.Verified{}, errorf(CodeOverrideUnavailable, "signed actions are unavailable: the trust root is unusable: %v", err)
	}
	v, err := sshsig.Verify(authorization, payload, namespace, trust)
	if err != nil {
		return sshsig.Verified{}, errorf(CodeOverrideUnavailable, "authorization rejected: %v; the server expected a signature (namespace %s) over exactly: %s", err, namespace, payload)
	}
	return v, nil
}

func authorizedBy(v sshsig.Verified) string { return v.Principal + " (" + v.Fingerprint + ")" }
