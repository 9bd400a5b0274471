package guard

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/stratum-go/stratum/guard/internal/ledger"
)

// LedgerEntry is one ledger entry as stored (docs/guard.md, "Ledger
// entries"), as [HistoryResult.Ledger] lists them.
type LedgerEntry = ledger.Entry

// HistoryRequest asks for a resource's ledger (stratum_guard_history).
type HistoryRequest struct {
	ResourceID string `json:"resource_id" jsonschema:"the guarded resource"`
}

// HistoryResult is the resource's current state and every valid ledger
// entry, oldest first. It has no status key.
type HistoryResult struct {
	ResourceID   string        `json:"resource_id" jsonschema:"the guarded resource"`
	CurrentState string        `json:"current_state" jsonschema:"the state the resource is in now"`
	GraphVersion int64         `json:"graph_version" jsonschema:"the policy version: 1 at registration, one more per policy change"`
	Ledger       []LedgerEntry `json:"ledger" jsonschema:"every recorded attempt, applied or refused, override and policy change, oldest first"`
}

// History reads a resource's ledger without the lock and without the
// ownership or policy tamper checks (a read changes nothing). Damage to
// the ledger is ledger_corrupt, a ledger that disagrees with the head
// registry.json recorded (deleted, truncated, appended to) guard_tampered;
// a torn last line of an interrupted write is left out.
func (g *Guard) History(ctx context.Context, req HistoryRequest) (*HistoryResult, error) {
	if err := validateResourceID(req.ResourceID); err != nil {
		return nil, err
	}
	r, err := g.loadForRead(ctx, req.ResourceID)
	if err != nil {
		return nil, err
	}
	entries := r.Log.Entries
	if entries == nil {
		entries = []LedgerEntry{} // no ledger file yet: [], never null
	}
	for i := range entries {
		if err := entries[i].DecodeVerdict(); err != nil {
			return nil, &Error{Code: CodeLedgerCorrupt, Message: err.Error(), Err: err}
		}
	}
	return &HistoryResult{ResourceID: r.ResourceID, CurrentState: r.CurrentState, GraphVersion: r.GraphVersion, Ledger: entries}, nil
}

// VerifyRequest asks for a strict check of one resource (`stratum guard
// verify [--head HEAD] RESOURCE_ID`).
type VerifyRequest struct {
	ResourceID string `json:"resource_id"`
	// Head, when given, is a head kept from an earlier verify (its "head")
	// — or any entry_digest / ledger_ref of this resource: the check then
	// also proves that the resource's history still contains it, which
	// catches what no local check can (docs/guard.md, "Keeping a head
	// elsewhere").
	Head string `json:"head,omitempty"`
}

// VerifyResult is the outcome of a strict check of one resource.
type VerifyResult struct {
	Status       string `json:"status"`
	ResourceID   string `json:"resource_id"`
	Checksum     string `json:"checksum"`
	GraphVersion int64  `json:"graph_version"`
	CurrentState string `json:"current_state"`
	Entries      int    `json:"entries"`
	// Head is the resource's head now: keep it somewhere this machine's
	// users cannot write, and pass it to a later verify (VerifyRequest.Head).
	Head string `json:"head"`
	// LedgerHead is the entry_digest of the last ledger entry ("" for
	// none): what a signed override or migrate names.
	LedgerHead string `json:"ledger_head"`
	// Sealed is false for a registry written before registries were sealed
	// (or by another engine): its workspace_root, initial and ledger head
	// are not protected until this engine next writes it.
	Sealed bool `json:"sealed"`
	// HeadChecked says where the kept head was found (with VerifyRequest.Head).
	HeadChecked *HeadCheck `json:"head_checked,omitempty"`
	// Warnings are what a person should know although nothing failed:
	// an unsealed registry, an interrupted write, modes open to other users.
	Warnings []string `json:"warnings,omitempty"`
}

// Verify re-checks a resource strictly, under its lock: the registry's
// seal and checksum, every ledger line (a torn tail that normal reads would
// drop is a failure here), the ledger against the head registry.json
// recorded, and, with req.Head ([VerifyRequest.Head]), that the history
// still contains the head kept from earlier ([VerifyResult.Head]).
func (g *Guard) Verify(ctx context.Context, req VerifyRequest) (*VerifyResult, error) {
	id := req.ResourceID
	if err := validateResourceID(id); err != nil {
		return nil, err
	}
	if req.Head != "" && !isChecksum(req.Head) {
		return nil, errorf(CodeInvalidArgument, "head must be 64 lowercase hex digits (a head printed by verify, or an entry_digest)")
	}
	dir := g.dir(id)
	r, err := g.loadForRead(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := r.tamperCheck(); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(dir, ledgerFile))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, wrapInternal(err, "read ledger")
	}
	// An incomplete last line is a failure here, unless registry.json
	// shows it is what an interrupted write left (then it is a warning).
	if _, err := ledger.ParseStrict(data); err != nil && !(r.Log.Torn && r.tornExplained) {
		return nil, &Error{Code: CodeLedgerCorrupt, Message: fmt.Sprintf("resource %q: %v", id, err), Err: err}
	}
	head, err := r.headAt(len(r.Log.Entries))
	if err != nil {
		return nil, wrapInternal(err, "compute head")
	}
	res := &VerifyResult{
		Status: "ok", ResourceID: id, Checksum: r.Checksum, GraphVersion: r.GraphVersion,
		CurrentState: r.CurrentState, Entries: len(r.Log.Entries), Head: head, LedgerHead: r.Log.Head, Sealed: r.Sealed,
	}
	if req.Head != "" {
		if res.HeadChecked, err = r.findHead(req.Head); err != nil {
			return nil, err
		}
	}
	if !r.Sealed {
		res.Warnings = append(res.Warnings, registryFile+" has no seal (written by an older Stratum or by another engine): its workspace_root, initial and the ledger's head are not protected until this engine next writes it")
	}
	res.Warnings = append(res.Warnings, r.notes...)
	res.Warnings = append(res.Warnings, looseModes(dir)...)
	return res, nil
}
