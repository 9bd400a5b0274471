package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// Create implements Store. It builds the whole run in a staging directory
// and renames it into place, so a run directory either is complete or does
// not exist, and two concurrent Creates of one id cannot both succeed. The
// head record is written once the run is in place; if that fails the run
// is still durable and complete, so Create succeeds and the next write
// records the head (docs/storage.md, "Create").
func (s *FileStore) Create(ctx context.Context, runID string, c Change) (Head, error) {
	if err := ValidateRunID(runID); err != nil {
		return Head{}, err
	}
	if err := ctx.Err(); err != nil {
		return Head{}, err
	}
	if c.State == nil {
		return Head{}, fmt.Errorf("run %s: %w: Create needs a state document", runID, ErrInvalidInput)
	}
	p, err := prepareChange(runID, &c)
	if err != nil {
		return Head{}, err
	}
	w, err := encodeWrite(runID, Head{Hash: genesisHash(runID)}, nil, p.events)
	if err != nil {
		return Head{}, err
	}
	dst := s.runDir(runID)
	if _, err := os.Lstat(dst); err == nil {
		return Head{}, fmt.Errorf("run %s: %w", runID, ErrRunExists)
	}
	if _, have, err := s.readHeadRecord(runID); err != nil || have {
		if err == nil {
			err = fmt.Errorf("run %s: %w: its data was removed but its head record remains (%s)", runID, ErrRunExists, s.headPath(runID))
		}
		return Head{}, err
	}
	staging, err := s.prepareStaging(ctx)
	if err != nil {
		return Head{}, err
	}
	tmp, err := os.MkdirTemp(staging, runID+"-")
	if err != nil {
		return Head{}, fmt.Errorf("run %s: create: %w", runID, err)
	}
	// The creator holds the staging directory's lock until the run is in
	// place: the sweeper of crashed Creates skips locked directories.
	lk, err := acquire(ctx, runID, filepath.Join(tmp, lockFile), true, s.lockTimeout)
	if err != nil {
		os.RemoveAll(tmp)
		return Head{}, err
	}
	placed := false
	defer func() {
		lk.release()
		if !placed {
			os.RemoveAll(tmp)
		}
	}()
	env := envelope{RunID: runID, Seq: w.head.Seq, Head: w.head.Hash, LogSize: int64(len(w.lines)), Rev: 1,
		Summary: p.summary, SavedAt: time.Now().UTC(), State: p.state}
	if err := writeSynced(filepath.Join(tmp, eventsFile), w.lines); err != nil {
		return Head{}, fmt.Errorf("run %s: create: %w", runID, err)
	}
	if err := writeSynced(filepath.Join(tmp, stateFile), sealEnvelope(&env)); err != nil {
		return Head{}, fmt.Errorf("run %s: create: %w", runID, err)
	}
	if len(w.at) > 0 { // derived: not fsynced (see fileindex.go)
		idx := make([]byte, 0, len(w.at)*indexEntrySize)
		for _, o := range w.at {
			idx = binary.LittleEndian.AppendUint64(idx, uint64(o))
		}
		os.WriteFile(filepath.Join(tmp, indexFile), idx, filePerm)
	}
	if err := syncDir(tmp); err != nil {
		return Head{}, fmt.Errorf("run %s: create: %w", runID, err)
	}
	// rename(2) refuses a non-empty target (ENOTEMPTY/EEXIST, both
	// fs.ErrExist in Go): the atomic "create if absent".
	if err := os.Rename(tmp, dst); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return Head{}, fmt.Errorf("run %s: %w", runID, ErrRunExists)
		}
		return Head{}, fmt.Errorf("run %s: create: %w", runID, err)
	}
	placed = true
	if err := syncDir(s.root); err != nil {
		return Head{}, fmt.Errorf("run %s: create: %w", runID, err)
	}
	s.writeHeadRecord(recordOf(env), nil, true) // see the doc comment
	return w.head, nil
}

// prepareStaging makes sure the root and its staging directory exist and
// removes what crashed Creates left there.
func (s *FileStore) prepareStaging(ctx context.Context) (string, error) {
	staging := filepath.Join(s.root, stagingDir)
	if _, err := os.Stat(staging); err != nil {
		if err := s.ensureDir(staging); err != nil {
			return "", err
		}
		return staging, nil
	}
	s.sweepStaging(ctx, staging)
	return staging, nil
}

// sweepStaging removes staging directories whose creator is gone: older
// than stagingStaleAfter and not locked. Errors are ignored: a leftover
// directory costs only disk space and the next sweep retries.
func (s *FileStore) sweepStaging(ctx context.Context, staging string) {
	entries, err := os.ReadDir(staging)
	if err != nil {
		return
	}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil || !e.IsDir() || time.Since(info.ModTime()) < stagingStaleAfter {
			continue
		}
		dir := filepath.Join(staging, e.Name())
		lk, err := acquire(ctx, "staging", filepath.Join(dir, lockFile), true, time.Millisecond)
		if err != nil {
			continue
		}
		os.RemoveAll(dir)
		lk.release()
	}
}

// writeSynced writes a new file and fsyncs it.
func writeSynced(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, filePerm)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
