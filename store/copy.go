package store

import (
	"context"
	"encoding/json"
	"fmt"
)

// RunCopy is a whole run as one store hands it to another: what a copy
// needs for the run to arrive with the same chain, byte for byte
// (docs/storage.md, "Moving runs between stores").
type RunCopy struct {
	RunID string
	// State is the engine's document and Summary the run's summary (nil
	// when none).
	State   []byte
	Summary json.RawMessage
	// Lines are the acknowledged event lines, seq 1 to the head, each
	// exactly as stored (canonical, without a newline). Data after the
	// head, never acknowledged, is not part of a copy.
	Lines [][]byte
	// Kept is the data kept aside by the run's repair events, under the
	// names the events give it.
	Kept []KeptData
}

// KeptData is data a repair kept aside, by the name its repair event
// records.
type KeptData struct {
	Name string
	Data []byte
}

// Copier is the optional capability of a store to hand out a run whole
// and to take one in whole, for "stratum store copy". The file store and
// the PostgreSQL store implement it.
type Copier interface {
	// ExportRun reads a run whole, after checking it as Verify does.
	ExportRun(ctx context.Context, runID string) (*RunCopy, error)
	// ImportRun stores c as a new run, after checking it with CheckCopy:
	// its events exactly as given (the same seqs, marks and hashes), its
	// state, summary and kept data; the run's write count starts again
	// at 1. It fails with ErrRunExists when the id is taken, and leaves
	// nothing when it fails.
	ImportRun(ctx context.Context, c *RunCopy) (Head, error)
}

// CheckCopy checks a copy before it is stored: the run id, the state
// document, the summary, every line canonical with a correct hash and
// chained from the run's genesis hash with seqs 1, 2, ..., and the data
// every repair event names present and matching its digest. It returns
// the copy's head.
func CheckCopy(c *RunCopy) (Head, error) {
	if err := ValidateRunID(c.RunID); err != nil {
		return Head{}, err
	}
	if err := checkStateDoc(c.RunID, c.State); err != nil {
		return Head{}, err
	}
	if c.Summary != nil {
		if _, err := normalizeSummary(c.RunID, c.Summary); err != nil {
			return Head{}, err
		}
	}
	kept := map[string][]byte{}
	for _, k := range c.Kept {
		kept[k.Name] = k.Data
	}
	head := Head{Hash: genesisHash(c.RunID)}
	for i, line := range c.Lines {
		bad := func(format string, args ...any) error {
			return fmt.Errorf("run %s: %w: copied event %d: %s", c.RunID, ErrInvalidInput, i+1, fmt.Sprintf(format, args...))
		}
		ev, err := decodeEvent(line)
		switch {
		case err != nil:
			return Head{}, bad("%v", err)
		case ev.Seq != head.Seq+1:
			return Head{}, bad("holds seq %d", ev.Seq)
		case ev.PrevHash != head.Hash:
			return Head{}, bad("prevHash %s is not the previous event's hash %s", ev.PrevHash, head.Hash)
		}
		if ev.Type == EventRepair {
			if _, err := CheckRepairData(ev, func(name string) ([]byte, bool, error) {
				d, ok := kept[name]
				return d, ok, nil
			}); err != nil {
				return Head{}, bad("%v", err)
			}
		}
		head = Head{Seq: ev.Seq, Hash: ev.Hash}
	}
	return head, nil
}
