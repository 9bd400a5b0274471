package store

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
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
// the directory, so after a power loss the latest state may be in the
// file called .state.json.tmp. It is taken from there in two cases:
//   - there is data after state.json's head, and the temp holds the write
//     that follows state.json's: one rev further, the data after the head
//     its events up to its own head (nextState);
//   - state.json is no state the run can stand on (torn, or whole but
//     ahead of what the log or the head record rec holds), and the temp
//     holds the write before it, its head in the log, and the head record
//     names that write or the one before (recordVouches): a state.json
//     edited by hand is still reported, since a current record names a
//     later write than the temp's.
//
// The usual read is one read of state.json, as before. A reader without
// the lock that would take the temp returns errUnderLock instead: a writer
// may be between its fsyncs and its exchange. Under the lock the temp is
// a leftover, of a power loss or of a writer killed after writing it,
// whose write then stands (a writer that fails empties it, see commit).
func (s *FileStore) latestState(id string, rf runFS, write bool, rec *headRecord) (stateChoice, error) {
	env, err := s.readState(id, rf)
	if err != nil && !s.stateFileUnreadable(id, rf, err) {
		return stateChoice{}, err
	}
	if err == nil {
		c, perr := s.primaryState(id, rf, write, env)
		if perr == nil && c.size > env.LogSize {
			next, off, ok, nerr := s.nextState(id, rf, env, c.log, c.size)
			if nerr != nil || (ok && rf.lockFree) {
				closeLog(c.log)
				return stateChoice{}, cmp.Or(nerr, errUnderLock)
			}
			if ok {
				c.env, c.headOffset, c.adopted = next, off, true
				return c, nil
			}
		}
		if perr == nil && rec != nil {
			if _, ce := judgeRecord(id, env, *rec, true); ce != nil {
				closeLog(c.log)
				perr = s.located(id, ce)
			}
		}
		if perr == nil {
			return c, nil
		}
		var ce *CorruptError
		if !errors.As(perr, &ce) {
			return stateChoice{}, perr
		}
		err = perr
	}
	// state.json is not a state the run can stand on: torn, or whole but
	// ahead of what the log or the head record holds (a write over it
	// that a power loss cut short, once an undone exchange had put the
	// name back on it). The temp may hold the latest acknowledged state.
	prev, ok, terr := s.readTempState(id, rf)
	if terr != nil {
		return stateChoice{}, terr
	}
	if !ok || (env.RunID == id && prev.Rev != env.Rev-1) || !s.recordVouches(id, prev, rec) {
		return stateChoice{}, err
	}
	if rf.lockFree {
		return stateChoice{}, errUnderLock
	}
	log, size, lerr := s.openLog(id, prev, write, rf)
	if lerr != nil {
		return stateChoice{}, err
	}
	off, herr := s.checkHead(id, prev, log)
	if herr != nil {
		closeLog(log)
		return stateChoice{}, err
	}
	return stateChoice{env: prev, log: log, size: size, headOffset: off, adopted: true, setAside: true}, nil
}

// stateChoice is the state latestState chose, with the log opened for it.
type stateChoice struct {
	env        envelope
	log        *smallFile
	size       int64 // the log's size
	headOffset int64 // where the head's line starts (-1 without events)
	// adopted: the state is the temporary file's; setAside: state.json
	// failed (restoreState keeps its bytes aside before a write reuses it).
	adopted, setAside bool
}

// primaryState opens the log for state.json's state env and checks that
// the log holds its head.
func (s *FileStore) primaryState(id string, rf runFS, write bool, env envelope) (stateChoice, error) {
	log, size, err := s.openLog(id, env, write, rf)
	if err != nil {
		return stateChoice{}, err
	}
	off := int64(-1)
	if log != nil {
		if off, err = s.checkHead(id, env, log); err != nil {
			log.Close()
			return stateChoice{}, err
		}
	}
	return stateChoice{env: env, log: log, size: size, headOffset: off}, nil
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

// recordVouches reports whether the run's head record (rec, or the one on
// disk when rec is nil) names the write of env or the one before it.
func (s *FileStore) recordVouches(id string, env envelope, rec *headRecord) bool {
	if rec == nil {
		r, have, f, err := s.openHeadRecord(id, false)
		if f != nil {
			f.Close()
		}
		if err != nil || !have {
			return false
		}
		rec = &r
	}
	state, ce := judgeRecord(id, env, *rec, true)
	return ce == nil && (state == HeadRecordMatch || state == HeadRecordBehind)
}

// readTempState reads the temporary state file: ok when it holds a whole
// state of this run; an error only when it could not be read. A temp cut
// shorter under a read without the lock is a writer's, rewriting it in
// place, and no state; under the lock no writer runs, and a file that
// shrinks is an error.
func (s *FileStore) readTempState(id string, rf runFS) (envelope, bool, error) {
	data, err := readWhole(rf, stateTemp)
	if errors.Is(err, fs.ErrNotExist) || (rf.lockFree && errors.Is(err, io.EOF)) {
		return envelope{}, false, nil
	}
	if err != nil {
		return envelope{}, false, fmt.Errorf("run %s: read the temporary state: %w", id, err)
	}
	env, err := decodeEnvelope(data)
	if err != nil || env.RunID != id || env.Seq < 1 {
		return envelope{}, false, nil
	}
	return env, true, nil
}

// nextState returns the temporary file's state, and where its head's
// line starts, when it is the write that follows cur: whole, of the same
// run, one write further (rev), and the data after cur's head in the log
// is its events (chained from cur's head, whole lines) up to its own
// head, which checkHead confirms.
func (s *FileStore) nextState(id string, rf runFS, cur envelope, log *smallFile, size int64) (envelope, int64, bool, error) {
	next, ok, err := s.readTempState(id, rf)
	if err != nil || !ok || next.Rev != cur.Rev+1 || next.LogSize <= cur.LogSize || next.LogSize > size || next.LogSize-cur.LogSize > maxTailRead {
		return envelope{}, 0, false, err
	}
	between := make([]byte, next.LogSize-cur.LogSize)
	if _, err := log.ReadAt(between, cur.LogSize); err != nil {
		return envelope{}, 0, false, fmt.Errorf("run %s: read the log after the head: %w", id, err)
	}
	t := classifyTail(between, Head{Seq: cur.Seq, Hash: cur.Head})
	if !t.Chained || tailTorn(between) || int64(t.Events) != next.Seq-cur.Seq {
		return envelope{}, 0, false, nil
	}
	off, err := s.checkHead(id, next, log)
	if err != nil {
		return envelope{}, 0, false, nil
	}
	return next, off, true, nil
}

// restoreState puts the state latestState took from the temporary file
// back under the name state.json (and the file it replaced under the
// temporary name, where the names can be exchanged) and flushes the
// directory: the one write after such a crash that pays a directory
// flush. The taken state and the log are flushed first: a writer killed
// after writing them, before its own flushes, left them whole in the page
// cache only. When state.json failed (c.setAside), its bytes are kept in
// state.json.set-aside-<seq> (seq: the taken state's head), and the file
// is emptied once it is the temp: whatever it held stays for a person to
// look at, and no later look takes it for a state.
func (s *FileStore) restoreState(id string, rf runFS, c stateChoice) error {
	fail := func(err error) error { return fmt.Errorf("run %s: put the latest state back in place: %w", id, err) }
	tmp, err := rf.open(stateTemp, os.O_RDONLY, 0)
	if err != nil {
		return fail(err)
	}
	err = tmp.Sync()
	tmp.Close()
	if err == nil && c.log != nil {
		err = c.log.Sync()
	}
	if err == nil && c.setAside {
		err = s.setAsideState(id, rf, c.env.Seq)
	}
	if err != nil {
		return fail(err)
	}
	err = rf.exchange(stateTemp, stateFile)
	if err == nil && c.setAside {
		// The state set aside is now the temp: emptied, so that no later
		// look takes it (its bytes are in the set-aside file).
		err = emptyFile(rf, stateTemp)
	}
	if errors.Is(err, errNoExchange) {
		err = os.Rename(filepath.Join(rf.path, stateTemp), filepath.Join(rf.path, stateFile))
	}
	if err == nil {
		err = rf.sync()
	}
	if err != nil {
		return fail(err)
	}
	return nil
}

// emptyFile cuts the run's file name to nothing and flushes it.
func emptyFile(rf runFS, name string) error {
	f, err := rf.open(name, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	return errors.Join(emptySynced(f), f.Close())
}

// emptySynced cuts an open file to nothing and flushes it.
func emptySynced(f *smallFile) error { return errors.Join(f.Truncate(0), f.Sync()) }

// setAsideState copies state.json to the first free name
// state.json.set-aside-<seq>[.n], fsynced (the caller flushes the
// directory).
func (s *FileStore) setAsideState(id string, rf runFS, seq int64) error {
	data, err := readWhole(rf, stateFile)
	if err != nil {
		return err
	}
	name := filepath.Join(rf.path, fmt.Sprintf("%s.set-aside-%d", stateFile, seq))
	for n := 2; ; n++ {
		// writeSynced creates the file exclusively: an earlier set-aside
		// at this head keeps its name.
		if err := writeSynced(name, data); !errors.Is(err, fs.ErrExist) {
			return err
		}
		name = filepath.Join(rf.path, fmt.Sprintf("%s.set-aside-%d.%d", stateFile, seq, n))
	}
}
