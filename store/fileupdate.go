package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// Update implements Store. Order of writes (docs/storage.md, "Writing"):
// the new events are appended and fsynced (with the new state's temp file
// and the previous head record), then the state (which records the new
// head and log size) is renamed into place, then the head record is
// overwritten in place, its flush started then and answered by the next
// write at the latest (docs/storage.md, "The head record's early flush").
// A crash after the
// append leaves one write's events after the acknowledged size, which the
// next write keeps aside with an EventRepair event; a crash after the
// state replace (or a power loss before the record is flushed) leaves the
// head record one write behind, which the next Load or write completes.
func (s *FileStore) Update(ctx context.Context, runID string, fn func(cur *Snapshot) (*Change, error)) (Head, error) {
	if err := ValidateRunID(runID); err != nil {
		return Head{}, err
	}
	if err := ctx.Err(); err != nil {
		return Head{}, err
	}
	rf, err := s.openFiles(runID)
	if err == nil {
		defer rf.close()
		var lk *runLock
		lk, err = acquire(ctx, runID, s.runPath(runID, lockFile), true, s.lockTimeout)
		if err == nil {
			defer lk.release()
		}
	}
	if errors.Is(err, errNoRunDir) {
		return Head{}, s.missingRun(runID)
	}
	if err != nil {
		return Head{}, err
	}

	v, err := s.inspect(runID, true, true, rf)
	if err != nil {
		return Head{}, err
	}
	defer v.close()
	if v.choice.adopted {
		if err := s.restoreState(runID, rf, v.choice); err != nil {
			return Head{}, err
		}
	}
	if v.recState == HeadRecordBehind {
		// Flushed with this write's own fsyncs (see commit): the record
		// read is not one this store flushed (recordFlushes.settle).
		if err := s.writeHeadRecord(recordOf(v.env), v.recFile, false); err != nil {
			return Head{}, err
		}
		v.recState = HeadRecordMatch
	}
	cur := v.head()
	rp, err := planRepair(runID, v)
	if err != nil {
		return Head{}, err
	}
	snap := &Snapshot{RunID: runID, State: slices.Clone(v.env.State), Summary: slices.Clone(v.env.Summary), Head: rp.head, Lease: s.currentLease(rf)}
	change, err := fn(snap)
	if err != nil {
		return Head{}, err
	}
	if change.empty() {
		return cur, nil
	}
	p, err := prepareChange(runID, change)
	if err != nil {
		return Head{}, err
	}
	w, err := encodeWrite(runID, cur, rp.pre, p.events)
	if err != nil {
		return Head{}, err
	}
	if err := s.commit(runID, rf, v, rp.kept, w, p); err != nil {
		return Head{}, err
	}
	if s.onRepair != nil {
		for _, k := range rp.kept {
			s.onRepair(runID, Tail{Bytes: k.Bytes, Events: k.Events, Chained: true, KeptAs: k.Name})
		}
	}
	return w.head, nil
}

// repairPlan is what a write does about data after the head: keep it
// aside (kept) and begin with the event recording that (pre); head is the
// head the Update function sees, after that event.
type repairPlan struct {
	kept []keptFile
	pre  []NewEvent
	head Head
}

// planRepair prepares the repair of what an interrupted write (or an
// interrupted repair: v.pending) left after the head.
func planRepair(runID string, v *runView) (repairPlan, error) {
	cur := v.head()
	if v.tail.Bytes == 0 && len(v.pending) == 0 {
		return repairPlan{head: cur}, nil
	}
	kept := v.pending
	if v.tail.Bytes > 0 && !alreadyKept(kept, v.tailData) {
		kept = append(kept, keptFile{KeptTail: keptTail(keptName(cur.Seq, len(kept)+1), v.tailData, v.tail), data: v.tailData})
	}
	infos := make([]KeptTail, len(kept))
	for i, k := range kept {
		infos[i] = k.KeptTail
	}
	pre := []NewEvent{repairEvent(runID, cur.Seq+1, infos, time.Now())}
	_, hash, err := encodeEvent(cur.Seq+1, cur.Hash, pre[0], true)
	if err != nil {
		return repairPlan{}, fmt.Errorf("run %s: repair event: %w", runID, err)
	}
	return repairPlan{kept: kept, pre: pre, head: Head{Seq: cur.Seq + 1, Hash: hash}}, nil
}

// commit makes a write durable, in the order docs/storage.md gives: kept
// data aside and the log cut back; the events appended and the new state
// written to its temp file; the log, the temp file and the head file
// (holding the previous write's record) flushed concurrently: neither new
// file is visible before the rename, and syncs issued together share a
// journal commit where the file system allows; the state renamed into
// place and the directory fsynced; this write's head record overwritten in
// place, its flush started in the background for the next write to wait
// for (docs/decisions/0010, 0214); then the index (derived, not fsynced).
func (s *FileStore) commit(runID string, rf runFS, v *runView, kept []keptFile, w encodedWrite, p prepared) error {
	if err := s.keep(runID, v, kept); err != nil {
		return err
	}
	next := v.env
	next.Version, next.Rev, next.SavedAt = 2, v.env.Rev+1, time.Now().UTC()
	next.Seq, next.Head, next.LogSize = w.head.Seq, w.head.Hash, v.env.LogSize+int64(len(w.lines))
	if p.state != nil {
		next.State = p.state
	}
	if p.summary != nil {
		next.Summary = p.summary
	}
	if len(w.lines) > 0 {
		// One write of whole lines: after a crash the log holds the
		// acknowledged prefix plus at most a prefix of this write.
		if _, err := v.log.Write(w.lines); err != nil {
			return fmt.Errorf("run %s: append events: %w", runID, err)
		}
	}
	tmp, created, err := writeTemp(rf, stateTemp, sealEnvelope(&next))
	if err != nil {
		return fmt.Errorf("run %s: replace state: %w", runID, err)
	}
	var logErr, recErr error
	var wg sync.WaitGroup
	if len(w.lines) > 0 {
		wg.Go(func() { logErr = v.log.Sync() })
	}
	if v.recFile != nil {
		// The record of the write before, in place: flushed now, or by
		// this store right after that write (recordFlushes).
		fl, rec := s.flushes.take(runID), v.rec
		wg.Go(func() { recErr = s.flushes.settle(fl, v.recFile, rec) })
	}
	err = tmp.Sync()
	wg.Wait()
	if err == nil && logErr == nil && recErr == nil && afterCommitSyncs != nil {
		err = afterCommitSyncs()
	}
	// aside: tmp is known still to be the temp (replaceState says so on
	// failure; before it is called, it is).
	exchanged, aside := false, true
	if err == nil && logErr == nil && recErr == nil {
		exchanged, aside, err = replaceState(rf, tmp)
	}
	if aside && (err != nil || logErr != nil || recErr != nil) {
		// The temp may hold a whole state that the log supports, which
		// the next reader under the lock would take for a write a crash
		// interrupted after its flushes (latestState): empty it, so that
		// a write that failed stays undone. A temp this write created is
		// removed instead: its name may not be on disk, and the next
		// write, creating it again, flushes the directory.
		if terr := undoTemp(rf, tmp, created); terr != nil {
			err = errors.Join(err, fmt.Errorf("empty the temp state: %w", terr))
		}
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if logErr != nil {
		return fmt.Errorf("run %s: append events: fsync: %w", runID, errors.Join(logErr, err))
	}
	if recErr != nil {
		return fmt.Errorf("run %s: flush head record: %w", runID, errors.Join(recErr, err))
	}
	if err != nil {
		return fmt.Errorf("run %s: replace state: %w", runID, err)
	}
	// The directory is flushed only where a crash could otherwise lose
	// the write: after an exchange of two files that were both there
	// before it, with events appended, a crash that undoes the exchange
	// leaves the new state whole in the temp file and its events after
	// the old state's head, and latestState takes it from there. A
	// rename (the old state's file gone), a temp file this write created
	// (a name not yet durable) and a write without events (nothing in the
	// log to show it happened) keep the directory flush.
	if !exchanged || created || len(w.lines) == 0 {
		if err := rf.sync(); err != nil {
			return fmt.Errorf("run %s: replace state: %w", runID, err)
		}
	}
	rec := recordOf(next)
	if err := s.writeHeadRecord(rec, v.recFile, v.recFile == nil); err != nil {
		return err
	}
	if earlyRecordFlush && v.recFile != nil {
		// Flushed from now on, for the next write (recordFlushes), which
		// takes the file over.
		s.flushes.start(runID, v.recFile, rec)
		v.recFile = nil
	}
	s.appendIndex(runID, rf, v.env, v.headOffset, w, v.env.LogSize)
	return nil
}

// undoTemp leaves no state in the temp file of a write that failed:
// removed when the write created it, else emptied and flushed.
func undoTemp(rf runFS, tmp *smallFile, created bool) error {
	if created && os.Remove(filepath.Join(rf.path, stateTemp)) == nil {
		return nil
	}
	return emptySynced(tmp)
}

// afterCommitSyncs, when set (by tests), runs after a write's flushes and
// before its exchange; an error it returns fails the write there.
var afterCommitSyncs func() error

// keep writes tails that are not yet kept aside into their files, then
// cuts the log back to its acknowledged size. Each file is written under
// a temp name, fsynced and renamed, and the directory fsynced, before the
// log loses the bytes: the data is always somewhere. If the write then
// fails to complete, the files are found again by name at the same head
// (pendingKept) and the next write records them.
func (s *FileStore) keep(runID string, v *runView, kept []keptFile) error {
	if len(kept) == 0 {
		return nil
	}
	dir := s.runDir(runID)
	wrote := false
	for _, k := range kept {
		path := filepath.Join(dir, k.Name)
		if _, err := os.Stat(path); err == nil {
			continue
		}
		tmp := filepath.Join(dir, "."+k.Name+".tmp")
		if err := writeSyncedReplace(tmp, k.data); err != nil {
			return fmt.Errorf("run %s: keep the data after the head: %w", runID, err)
		}
		if err := os.Rename(tmp, path); err != nil {
			return fmt.Errorf("run %s: keep the data after the head: %w", runID, err)
		}
		wrote = true
	}
	if wrote {
		if err := syncDir(dir); err != nil {
			return fmt.Errorf("run %s: keep the data after the head: %w", runID, err)
		}
	}
	if v.size > v.env.LogSize {
		if err := v.log.Truncate(v.env.LogSize); err != nil {
			return fmt.Errorf("run %s: cut the log back to its head: %w", runID, err)
		}
	}
	return nil
}

// writeSyncedReplace writes a file (replacing any) and fsyncs it.
func writeSyncedReplace(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, filePerm)
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

// writeTemp writes data to dir/temp, the one temp name of a state
// replace: only the run's lock holder writes it, so a crash's leftover is
// simply overwritten (no sweep). The caller fsyncs, closes and renames it.
// It writes over the file in place and then cuts it to the new length: the
// temp is the previous state's file after an exchange (replaceState), and
// rewriting its blocks costs the file system less than truncating it to
// nothing and allocating them again.
//
// created reports that the file did not exist: its name is then new in
// the directory, and the write must flush the directory (see commit).
func writeTemp(rf runFS, temp string, data []byte) (f *smallFile, created bool, err error) {
	f, err = rf.open(temp, os.O_WRONLY, filePerm)
	if errors.Is(err, fs.ErrNotExist) {
		created = true
		f, err = rf.open(temp, os.O_WRONLY|os.O_CREATE, filePerm)
	}
	if err != nil {
		return nil, false, err
	}
	err = f.Chmod(filePerm) // a leftover temp file keeps its mode
	if err == nil {
		_, err = f.WriteAt(data, 0)
	}
	if err == nil {
		err = f.Truncate(int64(len(data)))
	}
	if err != nil {
		// What was written must not pass for a whole state (latestState).
		if uerr := undoTemp(rf, f, created); uerr != nil {
			err = errors.Join(err, uerr)
		}
		f.Close()
		return nil, false, err
	}
	return f, created, nil
}

// replaceState puts the state written to stateTemp (and synced), open as
// tmp, in place of stateFile. Where it can, it exchanges the two names in
// one atomic step (Linux's renameat2), so that the previous state's file
// becomes the next update's temp: no file is created or deleted per
// update. Ext4 without a journal, on creating a file, passes over every
// inode of the group freed in the last 30 seconds, so a new file per
// update cost more CPU the more updates a second the store made
// (docs/storage.md, "Replacing the state"). Where the exchange is not
// available it renames, as before. An exchange that reports another error
// may still have happened (a network or FUSE file system): the state's
// name is looked at, and only if it does not name tmp is the temp renamed
// over it; exchanging again could swap the states back.
//
// exchanged reports that the names were exchanged: the previous state's
// file is still there, under the temp's name.
//
// On failure, aside reports that tmp is known to be still the temp, not in
// place (false when that cannot be told).
func replaceState(rf runFS, tmp *smallFile) (exchanged, aside bool, err error) {
	err = rf.exchange(stateTemp, stateFile)
	if err == nil {
		return true, false, nil
	}
	if !errors.Is(err, errNoExchange) {
		if done, nerr := rf.named(tmp, stateFile); nerr != nil {
			return false, false, fmt.Errorf("%w (and then: %v)", err, nerr)
		} else if done {
			return true, false, nil
		}
	}
	// A rename that fails leaves both names as they were.
	if err := os.Rename(filepath.Join(rf.path, stateTemp), filepath.Join(rf.path, stateFile)); err != nil {
		return false, true, err
	}
	return false, false, nil
}

// errNoExchange: the kernel or file system cannot exchange two names.
var errNoExchange = errors.New("exchanging two names is not supported here")
