package guard

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"

	"github.com/stratum-go/stratum/guard/internal/canon"
	"github.com/stratum-go/stratum/guard/internal/ledger"
)

// The registry seal (docs/guard.md, "What is protected, and how";
// docs/decisions/0030-guard-registry-seal.md). The reference protects only
// the policy, with its checksum; Stratum also seals the rest of
// registry.json — workspace_root and initial included — and records there
// the ledger's head, so that an edited record, a deleted or truncated
// ledger and an entry appended by someone else are all detected.
//
// seal = sha256_hex(canonical(the record without its "seal" key)); the
// record carries seal_version, registered_checksum, ledger_entries,
// ledger_head, ledger_pending and, while a policy change is being
// written, pending_policy. The reference's checksum is unchanged, so
// signatures, descriptors and payload digests keep their meaning.
const sealVersion = 1

// ledgerRecord is the ledger head as registry.json recorded it.
type ledgerRecord struct {
	entries int
	head    string
	pending string
	policy  *policyChange
}

// sealOf hashes a record without its seal.
func sealOf(m map[string]any) (string, error) {
	body := maps.Clone(m)
	delete(body, "seal")
	b, err := canon.Marshal(body)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// addSeal completes a record with the ledger head (from r.Log and
// r.pending) and its seal.
func (r *registry) addSeal(m map[string]any) error {
	m["seal_version"] = sealVersion
	m["registered_checksum"] = r.RegisteredChecksum
	m["ledger_entries"] = len(r.Log.Entries)
	m["ledger_head"] = r.Log.Head
	m["ledger_pending"] = nil
	if r.pending != "" {
		m["ledger_pending"] = r.pending
	}
	if r.pendingPolicy != nil {
		pp := policyFields(r.pendingPolicy.policy)
		pp["checksum"] = r.pendingPolicy.checksum
		m["pending_policy"] = pp
	}
	seal, err := sealOf(m)
	if err != nil {
		return err
	}
	m["seal"] = seal
	return nil
}

// readSeal reads the sealed part of a raw record: the recorded ledger
// head, and whether the seal matches (r.sealErr, reported by tamperCheck).
func (r *registry) readSeal(raw map[string]any) (ledgerRecord, error) {
	var rec ledgerRecord
	if v, ok := rawCount(raw["seal_version"]); !ok || v != sealVersion {
		return rec, fmt.Errorf("seal_version %v is not %d (written by a newer Stratum?)", raw["seal_version"], sealVersion)
	}
	r.Sealed = true
	var ok bool
	if r.RegisteredChecksum, ok = raw["registered_checksum"].(string); !ok {
		return rec, errors.New("registered_checksum is not a string")
	}
	if rec.entries, ok = rawCount(raw["ledger_entries"]); !ok {
		return rec, errors.New("ledger_entries is not a count")
	}
	if rec.head, ok = raw["ledger_head"].(string); !ok {
		return rec, errors.New("ledger_head is not a string")
	}
	if p := raw["ledger_pending"]; p != nil {
		if rec.pending, ok = p.(string); !ok || rec.pending == "" {
			return rec, errors.New("ledger_pending is not a digest or null")
		}
	}
	if pp, present := raw["pending_policy"]; present {
		obj, isObj := pp.(map[string]any)
		if !isObj {
			return rec, errors.New("pending_policy is not an object")
		}
		p, err := rawPolicy(obj, r.Initial)
		if err != nil {
			return rec, fmt.Errorf("pending_policy: %w", err)
		}
		sum, isStr := obj["checksum"].(string)
		if !isStr {
			return rec, errors.New("pending_policy.checksum is not a string")
		}
		rec.policy = &policyChange{policy: p, checksum: sum}
	}
	stored, _ := raw["seal"].(string)
	want, err := sealOf(raw)
	if err != nil || stored != want {
		r.sealErr = errorf(CodeTampered, "resource %q: %s was edited: its seal %s does not match its content (recomputed %s); restore it, or repair it with a signed migrate", r.ResourceID, registryFile, short(stored), short(want))
	}
	return rec, nil
}

// reconcile checks the ledger against the head registry.json recorded.
// Every mutation records its entry as pending, appends it, then records it
// as the head, so the only disagreements a crash (or a failed write) can
// leave are: the pending entry is not in the ledger (nothing of that write
// happened; perhaps a torn line of it), or it is the one extra entry at
// the end (the write stopped after its commit point: roll forward). Any
// other disagreement is tampering.
func (r *registry) reconcile(rec ledgerRecord) error {
	log := r.Log
	n, got := rec.entries, len(log.Entries)
	digestAt := func(k int) string {
		if k == 0 {
			return ""
		}
		return log.Entries[k-1].EntryDigest
	}
	switch {
	case got == n && log.Head == rec.head:
		if log.Torn && rec.pending == "" {
			return errorf(CodeLedgerCorrupt, "resource %q: line %d of the ledger is incomplete, but no write was in progress: %s", r.ResourceID, log.TornLine, log.TornReason)
		}
		if rec.pending != "" {
			r.tornExplained = log.Torn
			r.notes = append(r.notes, fmt.Sprintf("a write was interrupted before its ledger entry %s was complete; nothing of it was recorded, and the next mutation clears the mark (and sets aside the incomplete line, if any)", short(rec.pending)))
		}
		return nil
	case got == n+1 && rec.pending != "" && log.Head == rec.pending && digestAt(n) == rec.head && !log.Torn:
		last := &log.Entries[got-1]
		isPolicy := last.Outcome == ledger.OutcomeGraphVersion
		if isPolicy != (rec.policy != nil) {
			return errorf(CodeTampered, "resource %q: ledger entry %d (%s) does not match the change %s recorded as pending", r.ResourceID, got, last.Outcome, registryFile)
		}
		if rec.policy != nil {
			r.Policy, r.Checksum = rec.policy.policy, rec.policy.checksum
			r.GraphVersion++
		}
		r.notes = append(r.notes, fmt.Sprintf("the last write stopped after its ledger entry %d (%s) was written; the next mutation records it as the head", got, short(last.EntryDigest)))
		return nil
	case got < n:
		return errorf(CodeTampered, "resource %q: the ledger has %s, but %s recorded %d (head %s): the ledger was truncated or deleted", r.ResourceID, plural(got, "entry", "entries"), registryFile, n, short(rec.head))
	case got == n:
		return errorf(CodeTampered, "resource %q: ledger entry %d is %s, but %s recorded %s: the ledger was rewritten", r.ResourceID, n, short(log.Head), registryFile, short(rec.head))
	case digestAt(n) != rec.head:
		return errorf(CodeTampered, "resource %q: ledger entry %d is %s, but %s recorded %s: the ledger was rewritten", r.ResourceID, n, short(digestAt(n)), registryFile, short(rec.head))
	}
	return errorf(CodeTampered, "resource %q: the ledger has %s, but %s recorded %d: %s was rolled back, or entries %d to %d were appended by something other than this guard", r.ResourceID, plural(got, "entry", "entries"), registryFile, n, registryFile, n+1, got)
}

// headScheme names the anchor formula.
const headScheme = "stratum-guard-head/1"

// headAt is the anchor of the resource's history up to its first k ledger
// entries (docs/guard.md, "Keeping a head elsewhere"): a digest over the
// parts of the registry that never change after registration — the
// resource id, initial, workspace_root and the registered policy checksum
// — and the ledger entry count and digest at k. Rewriting any of them, or
// the ledger up to k, changes every head from there on.
func (r *registry) headAt(k int) (string, error) {
	d := ""
	if k > 0 {
		d = r.Log.Entries[k-1].EntryDigest
	}
	b, err := canon.Marshal(map[string]any{
		"scheme":              headScheme,
		"resource_id":         r.ResourceID,
		"initial":             r.Initial,
		"workspace_root":      r.WorkspaceRoot,
		"registered_checksum": r.RegisteredChecksum,
		"entries":             k,
		"ledger_head":         d,
	})
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// HeadCheck reports where a kept head was found in a resource's history.
type HeadCheck struct {
	// Head is the head that was checked.
	Head string `json:"head"`
	// Entries is the number of ledger entries the head covers.
	Entries int `json:"entries"`
	// Kind is "head" (a head printed by verify) or "entry_digest" (a
	// ledger_ref or entry_digest of this resource, which pins the ledger
	// but not the registry).
	Kind string `json:"kind"`
}

// findHead looks for a kept head in the history as it is now.
func (r *registry) findHead(want string) (*HeadCheck, error) {
	for k := len(r.Log.Entries); k >= 0; k-- {
		h, err := r.headAt(k)
		if err != nil {
			return nil, wrapInternal(err, "compute head")
		}
		if h == want {
			return &HeadCheck{Head: want, Entries: k, Kind: "head"}, nil
		}
		if k > 0 && r.Log.Entries[k-1].EntryDigest == want {
			return &HeadCheck{Head: want, Entries: k, Kind: "entry_digest"}, nil
		}
	}
	return nil, errorf(CodeTampered, "resource %q: the head %s is not in its history (%s): the ledger or registry was rewritten, truncated or rolled back since that head was printed", r.ResourceID, short(want), plural(len(r.Log.Entries), "ledger entry", "ledger entries"))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
