package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// errUnderLock is what a reader without the run's lock gets when the
// run's latest state may be in the temporary file rather than in
// state.json: only a reader under the lock, where no writer is part way
// through a write, decides (see latestState). Load, Events and Event then
// read again under the lock held shared.
var errUnderLock = errors.New("the state may be in the temporary file: read under the lock")

// latestState reads the run's state and opens its log (for appending
// with write), choosing between the run's two state files
// (docs/storage.md, "Replacing the state"). An update writes its state
// over the file that holds the state before the last acknowledged one,
// fsyncs it with the log, and exchanges the two names without flushing
// the directory; so after a power loss the names may be as they were
// before the last exchanges, and the latest state may be in the file
// called .state.json.tmp. That file holds the latest state when it is
// whole, follows the state in place by exactly one write, and the log
// holds its events: the events after the state in place are then its
// write's, up to its head. When state.json itself is not whole (a write
// over it cut short by a power loss, once the names were swapped back),
// the temp holds the latest state when it is whole, the log holds its
// head, and the head record names it or the write before it (the record
// is at most one write behind): a state.json edited by hand, with the
// state before it in the temp, is still reported as it was, since the
// record names a later write than the temp's.
//
// The temporary file is looked at only in those two cases (data after
// the head, or a state.json that fails its check), so the usual read is
// one read of state.json, as before. A reader without the lock that finds
// such a temp returns errUnderLock rather than take it: a writer may be
// between its fsyncs and its exchange. Under the lock the temp is a
// leftover: of a power loss, or of a writer killed after its fsyncs and
// before its exchange, whose write then stands (a writer that fails
// empties the temp, see commit).
func (s *FileStore) latestState(id string, rf runFS, write bool) (env envelope, log *smallFile, size int64, adopted bool, err error) {
	env, err = s.readState(id, rf)
	if err != nil {
		if !s.stateFileUnreadable(id, rf, err) {
			return envelope{}, nil, 0, false, err
		}
		other, ok := s.readTempState(id, rf)
		if !ok || !s.recordVouches(id, other) {
			return envelope{}, nil, 0, false, err
		}
		if rf.lockFree {
			return envelope{}, nil, 0, false, errUnderLock
		}
		log, size, lerr := s.openLog(id, other, write, rf)
		if lerr != nil {
			return envelope{}, nil, 0, false, err
		}
		if _, herr := s.checkHead(id, other, log); herr != nil {
			closeLog(log)
			return envelope{}, nil, 0, false, err
		}
		return other, log, size, true, nil
	}
	if log, size, err = s.openLog(id, env, write, rf); err != nil {
		return envelope{}, nil, 0, false, err
	}
	if size > env.LogSize {
		if other, ok := s.nextState(id, rf, env, log, size); ok {
			if rf.lockFree {
				closeLog(log)
				return envelope{}, nil, 0, false, errUnderLock
			}
			return other, log, size, true, nil
		}
	}
	return env, log, size, false, nil
}

func closeLog(f *smallFile) {
	if f != nil {
		f.Close()
	}
}

// stateFileUnreadable reports whether err, from readState, says that
// state.json is there but not a whole state of this run (as opposed to
// missing, or a read that failed).
func (s *FileStore) stateFileUnreadable(id string, rf runFS, err error) bool {
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.Part != PartState {
		return false
	}
	_, serr := os.Stat(filepath.Join(rf.path, stateFile))
	return serr == nil
}

// recordVouches reports whether the run's head record names the write of
// env or the one before it.
func (s *FileStore) recordVouches(id string, env envelope) bool {
	rec, have, f, err := s.openHeadRecord(id, false)
	if f != nil {
		f.Close()
	}
	if err != nil || !have {
		return false
	}
	state, ce := judgeRecord(id, env, rec, have)
	return ce == nil && (state == HeadRecordMatch || state == HeadRecordBehind)
}

// readTempState reads the temporary state file, if it holds a whole state
// of this run.
func (s *FileStore) readTempState(id string, rf runFS) (envelope, bool) {
	data, err := readWhole(rf, stateTemp)
	if err != nil {
		return envelope{}, false
	}
	env, err := decodeEnvelope(data)
	if err != nil || env.RunID != id || env.Seq < 1 {
		return envelope{}, false
	}
	return env, true
}

// nextState returns the temporary file's state when it is the write that
// follows cur: whole, of the same run, one write further (rev), and the
// data after cur's head in the log is its events (chained from cur's
// head, whole lines) up to its own head, which checkHead confirms.
func (s *FileStore) nextState(id string, rf runFS, cur envelope, log *smallFile, size int64) (envelope, bool) {
	next, ok := s.readTempState(id, rf)
	if !ok || next.Rev != cur.Rev+1 || next.LogSize <= cur.LogSize || next.LogSize > size || next.LogSize-cur.LogSize > maxTailRead {
		return envelope{}, false
	}
	between := make([]byte, next.LogSize-cur.LogSize)
	if _, err := log.ReadAt(between, cur.LogSize); err != nil {
		return envelope{}, false
	}
	t := classifyTail(between, Head{Seq: cur.Seq, Hash: cur.Head})
	if !t.Chained || tailTorn(between) || int64(t.Events) != next.Seq-cur.Seq {
		return envelope{}, false
	}
	if _, err := s.checkHead(id, next, log); err != nil {
		return envelope{}, false
	}
	return next, true
}

// restoreState puts the state latestState took from the temporary file
// back under the name state.json (and the state it replaced under the
// temporary name, where the names can be exchanged), and flushes the
// directory: the one write after such a crash that pays a directory
// flush.
func restoreState(id string, rf runFS) error {
	err := rf.exchange(stateTemp, stateFile)
	if errors.Is(err, errNoExchange) {
		err = os.Rename(filepath.Join(rf.path, stateTemp), filepath.Join(rf.path, stateFile))
	}
	if err == nil {
		err = rf.sync()
	}
	if err != nil {
		return fmt.Errorf("run %s: put the latest state back in place: %w", id, err)
	}
	return nil
}
