package guard

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/stratum-go/stratum/guard/internal/ledger"
)

// LedgerEntry is one ledger entry as stored (spec/guard.md §2.4).
type LedgerEntry = ledger.Entry

// HistoryRequest asks for a resource's ledger (stratum_guard_history).
type HistoryRequest struct {
	ResourceID string `json:"resource_id" jsonschema:"the guarded resource"`
}

// HistoryResult is the resource's current state and every valid ledger
// entry, oldest first. It has no status key.
type HistoryResult struct {
	ResourceID   string        `json:"resource_id"`
	CurrentState string        `json:"current_state"`
	GraphVersion int64         `json:"graph_version"`
	Ledger       []LedgerEntry `json:"ledger"`
}

// History reads a resource's ledger without the lock and without the
// ownership or tamper checks (a read changes nothing). Interior damage is
// ledger_corrupt; a torn last line is left out.
func (g *Guard) History(ctx context.Context, req HistoryRequest) (*HistoryResult, error) {
	if err := validateResourceID(req.ResourceID); err != nil {
		return nil, err
	}
	r, err := g.load(req.ResourceID, g.dir(req.ResourceID))
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

// VerifyResult is the outcome of a strict check of one resource.
type VerifyResult struct {
	Status       string `json:"status"`
	ResourceID   string `json:"resource_id"`
	Checksum     string `json:"checksum"`
	GraphVersion int64  `json:"graph_version"`
	CurrentState string `json:"current_state"`
	Entries      int    `json:"entries"`
	Head         string `json:"head"`
}

// Verify re-checks a resource strictly: the registry's checksum against
// its policy, and every ledger line, the last one included (a torn tail
// that normal reads would drop is a failure here).
func (g *Guard) Verify(ctx context.Context, resourceID string) (*VerifyResult, error) {
	if err := validateResourceID(resourceID); err != nil {
		return nil, err
	}
	dir := g.dir(resourceID)
	r, err := g.load(resourceID, dir)
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
	log, err := ledger.ParseStrict(data)
	if err != nil {
		return nil, &Error{Code: CodeLedgerCorrupt, Message: fmt.Sprintf("resource %q: %v", resourceID, err), Err: err}
	}
	return &VerifyResult{
		Status: "ok", ResourceID: resourceID, Checksum: r.Checksum, GraphVersion: r.GraphVersion,
		CurrentState: log.CurrentState(r.Initial), Entries: len(log.Entries), Head: log.Head,
	}, nil
}
