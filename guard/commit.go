package guard

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/stratum-go/stratum/guard/internal/canon"
	"github.com/stratum-go/stratum/guard/internal/ledger"
)

// notRecorded wraps a write failure before the commit point: the answer
// is an error, and an error always means that nothing was recorded.
func notRecorded(id string, err error) error {
	var ge *Error
	if errors.As(err, &ge) {
		if ge.Code != CodeInternal {
			return err // lock_lost and the like say so themselves
		}
		return &Error{Code: CodeInternal, Message: fmt.Sprintf("resource %q: nothing was recorded: %s", id, ge.Message), Err: err}
	}
	return wrapInternal(err, "resource %q: nothing was recorded", id)
}

// commit records e, the commit point of every mutation, in three durable
// steps ordered so that every answer is truthful (docs/guard.md, "Writes
// and failures"):
//
//  1. registry.json names e as pending (and, for a policy change, the
//     policy it installs). A failure here: nothing was applied.
//  2. The ledger line is appended: the commit point. A failure here:
//     nothing was applied (a partial line is cut away again and the
//     pending mark taken back; were either left, the next load would
//     tolerate them as what an interrupted write leaves).
//  3. registry.json records e as the ledger's head, with change installed.
//     A failure here leaves e applied; the answer says so with a warning,
//     and the next load rolls the head forward (reconcile).
//
// An error therefore always means "not applied"; a non-empty warning is
// returned only with an applied commit.
func (g *Guard) commit(h *held, dir string, r *registry, e *ledger.Entry, change *policyChange) (warning string, err error) {
	path := filepath.Join(dir, ledgerFile)
	if err := h.fence(); err != nil {
		return "", err
	}
	if err := ledger.Repair(path, r.Log, g.now()); err != nil {
		return "", notRecorded(r.ResourceID, err)
	}
	e.TsMs = g.now().UnixMilli()
	line, err := ledger.Seal(e, r.Log.Head)
	if err != nil {
		if errors.Is(err, canon.ErrNotCanonical) {
			return "", errorf(CodeInvalidArgument, "ledger entry has no canonical JSON form: %v", err)
		}
		return "", wrapInternal(err, "resource %q", r.ResourceID)
	}

	// 1. The entry is announced.
	r.pending, r.pendingPolicy = e.EntryDigest, change
	if err := g.save(h, dir, r); err != nil {
		r.pending, r.pendingPolicy = "", nil
		return "", notRecorded(r.ResourceID, err)
	}

	// 2. The commit point.
	if err := h.fence(); err != nil {
		return "", err
	}
	landed, werr := g.appendEntryLine(path, r.Log, line, e)
	if !landed {
		// Take the pending mark back if the ledger is as it was (best
		// effort: on a full disk it stays, and the next load clears it).
		r.pending, r.pendingPolicy = "", nil
		if fi, err := os.Stat(path); (err == nil && fi.Size() == r.Log.Size) || (errors.Is(err, os.ErrNotExist) && r.Log.Size == 0) {
			_ = g.save(h, dir, r)
		}
		return "", notRecorded(r.ResourceID, werr)
	}
	var warnings []string
	if werr != nil {
		warnings = append(warnings, fmt.Sprintf("the ledger write reported %v, but the entry is in the ledger", werr))
	}

	// 3. The entry becomes the head.
	if change != nil {
		r.Policy, r.Checksum = change.policy, change.checksum
		r.GraphVersion++
	}
	r.CurrentState = r.Log.CurrentState(r.Initial)
	r.pending, r.pendingPolicy = "", nil
	if err := g.save(h, dir, r); err != nil {
		warnings = append(warnings, fmt.Sprintf("applied (ledger entry %d, %s), but %s could not record it as the head: %v; the next operation on this resource records it (until then, deleting that last entry would look like this interrupted write)",
			len(r.Log.Entries), short(e.EntryDigest), registryFile, err))
	}
	return strings.Join(warnings, "; "), nil
}

// appendEntryLine appends e's sealed line and adds e to log. When the
// append reports an error, the file is read back to learn what it holds:
// the whole entry (the failure came after the data, say at fsync: the
// entry counts as written), or not (nothing, or a partial line, which is
// truncated away again).
func (g *Guard) appendEntryLine(path string, log *ledger.Log, line []byte, e *ledger.Entry) (landed bool, err error) {
	err = g.appendLine(opLedger, path, line)
	if err == nil {
		log.Entries = append(log.Entries, *e)
		log.Head = e.EntryDigest
		log.Size += int64(len(line) + 1)
		log.ValidEnd = log.Size
		return true, nil
	}
	if after, rerr := ledger.Read(path); rerr == nil && after.Head == e.EntryDigest && len(after.Entries) == len(log.Entries)+1 {
		*log = *after
		return true, err
	}
	if fi, serr := os.Stat(path); serr == nil && fi.Size() > log.Size {
		if f, oerr := os.OpenFile(path, os.O_WRONLY, 0); oerr == nil {
			if f.Truncate(log.Size) == nil {
				_ = f.Sync()
			}
			f.Close()
		}
	}
	return false, err
}
