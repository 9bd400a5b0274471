package store

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Verify implements Store. It holds the run's lock shared, so it sees no
// Update in progress, and reads the whole log from the first event.
func (s *FileStore) Verify(ctx context.Context, runID string, opts VerifyOptions) (*VerifyReport, error) {
	if err := ValidateRunID(runID); err != nil {
		return nil, err
	}
	if err := checkAnchor(runID, opts.Head); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	lk, err := acquire(ctx, runID, s.runPath(runID, lockFile), false, s.lockTimeout)
	if errors.Is(err, errNoRunDir) {
		err = s.missingRun(runID)
		if errors.Is(err, ErrRunNotFound) && opts.Head != "" {
			err = s.located(runID, anchoredMissing(runID, opts.Head))
		}
		return nil, err
	}
	if err != nil {
		return nil, err
	}
	defer lk.release()

	v, err := s.inspect(runID, false, true, s.files(runID))
	if err != nil {
		return nil, err
	}
	defer v.close()
	rep := &VerifyReport{RunID: runID, StateBytes: len(v.env.State), HeadRecord: v.recState, Tail: v.tail, StateFromTemp: v.choice.adopted}
	for _, k := range v.pending {
		rep.Pending = append(rep.Pending, k.KeptTail)
	}
	if err := s.walkLog(ctx, runID, v, opts.Head, rep); err != nil {
		return nil, err
	}
	if opts.Head != "" && rep.Anchor == nil {
		return nil, s.located(runID, anchorMissing(runID, opts.Head, rep.Head))
	}
	rep.Checks = verifyChecks(v.env, rep, opts.Head)
	return rep, nil
}

// walkLog reads the acknowledged log from the first event, checking every
// line and link from the genesis hash to the state's head, and fills in
// the report: the head, the events and writes counted, the repairs (each
// kept file checked), where the anchor is.
func (s *FileStore) walkLog(ctx context.Context, runID string, v *runView, anchor string, rep *VerifyReport) error {
	genesis := genesisHash(runID)
	if anchor == genesis {
		rep.Anchor = &Head{Seq: 0, Hash: genesis}
	}
	prev, seq, off := genesis, int64(0), int64(0)
	if v.log != nil {
		r := bufio.NewReaderSize(io.NewSectionReader(v.log, 0, v.env.LogSize), 64<<10)
		for off < v.env.LogSize {
			if seq%1024 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			line, err := r.ReadBytes('\n')
			if err != nil {
				return s.corrupt(runID, eventsFile, seq+1, off, "the acknowledged part of the log ends inside a line")
			}
			ev, derr := decodeEvent(line[:len(line)-1])
			switch {
			case derr != nil:
				return s.corrupt(runID, eventsFile, seq+1, off, derr.Error())
			case ev.Seq != seq+1:
				return s.corrupt(runID, eventsFile, seq+1, off, fmt.Sprintf("line holds seq %d", ev.Seq))
			case ev.PrevHash != prev:
				return s.corrupt(runID, eventsFile, seq+1, off, fmt.Sprintf("prevHash %s is not the previous event's hash %s: the chain is broken", ev.PrevHash, prev))
			}
			if ev.Begin {
				rep.Writes++
			}
			if ev.Type == EventRepair {
				rp, err := s.checkRepair(runID, ev)
				if err != nil {
					return s.corrupt(runID, eventsFile, ev.Seq, off, err.Error())
				}
				rep.Repairs = append(rep.Repairs, rp)
			}
			if anchor != "" && ev.Hash == anchor {
				rep.Anchor = &Head{Seq: ev.Seq, Hash: ev.Hash}
			}
			prev, seq, off = ev.Hash, ev.Seq, off+int64(len(line))
		}
	}
	if seq != v.env.Seq || prev != v.env.Head {
		return s.corrupt(runID, eventsFile, seq, off, fmt.Sprintf(
			"the log's acknowledged part ends at seq %d with hash %s, which is not the head (seq %d, hash %s) recorded in the state", seq, prev, v.env.Seq, v.env.Head))
	}
	rep.Head, rep.Events = Head{Seq: seq, Hash: prev}, seq
	return nil
}

// checkRepair checks that the data a repair event records as kept aside
// is still there, byte for byte.
func (s *FileStore) checkRepair(runID string, ev Event) (Repair, error) {
	rp, err := parseRepair(ev)
	if err != nil {
		return Repair{}, err
	}
	for _, k := range rp.Kept {
		if k.Name != filepath.Base(k.Name) || !strings.HasPrefix(k.Name, "tail-after-") {
			return Repair{}, fmt.Errorf("the repair names kept data %q, not a file beside the log", k.Name)
		}
		data, err := os.ReadFile(s.runPath(runID, k.Name))
		if err != nil {
			return Repair{}, fmt.Errorf("the data the repair kept aside (%s) cannot be read: %v", k.Name, err)
		}
		sum := sha256.Sum256(data)
		if got := hex.EncodeToString(sum[:]); int64(len(data)) != k.Bytes || got != k.SHA256 {
			return Repair{}, fmt.Errorf("the data the repair kept aside (%s) changed: %d bytes with SHA-256 %s, the repair recorded %d bytes with %s",
				k.Name, len(data), got, k.Bytes, k.SHA256)
		}
	}
	return rp, nil
}
