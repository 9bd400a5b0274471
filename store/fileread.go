package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// Load implements Store. It takes no lock on the usual path: state files
// are replaced atomically, the head record is read first (writers write it
// last) and the log is only ever cut back to the acknowledged size, so a
// lock-free reader sees a whole acknowledged run. What looks wrong without
// the lock (a tail being written, a record a write or two behind) is
// checked again under the lock before Load complains. A head record one
// write behind is completed here when the lock is free: that is the one
// write Load makes.
func (s *FileStore) Load(ctx context.Context, runID string) (*Snapshot, error) {
	if err := ValidateRunID(runID); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rf, err := s.openFiles(runID)
	if errors.Is(err, errNoRunDir) {
		return nil, s.missingRun(runID)
	}
	if err != nil {
		return nil, err
	}
	defer rf.close()
	free := rf
	free.lockFree = true
	v, err := s.inspect(runID, false, false, free)
	var ce *CorruptError
	switch {
	case errors.As(err, &ce) && ce.Part != PartRun, errors.Is(err, errUnderLock):
		v, err = s.inspectShared(ctx, runID, rf)
	case err == nil && v.recState == HeadRecordMissing:
		// Without a head record nothing else would show a state that a
		// write killed before it was in place left in a file read as it
		// was exchanged away and back (see readState): read it again
		// under the lock. Such runs predate head records, or their
		// Create was interrupted.
		v.close()
		v, err = s.inspectShared(ctx, runID, rf)
	}
	if err != nil {
		return nil, err
	}
	defer v.close()
	if v.recState == HeadRecordBehind || v.choice.adopted {
		s.completeRecord(ctx, runID, rf)
	}
	return &Snapshot{RunID: runID, State: v.env.State, Summary: v.env.Summary, Head: v.head(), Lease: s.currentLease(rf)}, nil
}

// lockShared takes the run's lock shared, waiting as long as the store's
// lock timeout; a run without a directory is missing (or removed).
func (s *FileStore) lockShared(ctx context.Context, runID string) (*runLock, error) {
	lk, err := acquire(ctx, runID, s.runPath(runID, lockFile), false, s.lockTimeout)
	if errors.Is(err, errNoRunDir) {
		return nil, s.missingRun(runID)
	}
	return lk, err
}

// inspectShared inspects a run under its lock held shared.
func (s *FileStore) inspectShared(ctx context.Context, runID string, rf runFS) (*runView, error) {
	lk, err := s.lockShared(ctx, runID)
	if err != nil {
		return nil, err
	}
	defer lk.release()
	return s.inspect(runID, false, false, rf)
}

// underLockIfCorrupt runs read without a lock and, when it reports the
// run corrupt (except a missing run directory), again under the run's lock
// held shared: a writer between its steps, or one that exchanged the
// state file under the reader (see readState), is no corruption, and
// under the lock no writer runs.
func underLockIfCorrupt[T any](s *FileStore, ctx context.Context, runID string, read func(rf runFS) (T, error)) (T, error) {
	got, err := read(s.unlockedFiles(runID))
	var ce *CorruptError
	if (!errors.As(err, &ce) || ce.Part == PartRun) && !errors.Is(err, errUnderLock) {
		return got, err
	}
	lk, err := s.lockShared(ctx, runID)
	if err != nil {
		var zero T
		return zero, err
	}
	defer lk.release()
	return read(s.files(runID))
}

// completeRecord completes what a crash left between a write's state and
// its head record, if the run's lock is free at once (a holder does it
// itself): it puts a state read from the temporary file back in place
// (latestState), and writes a head record left one write behind.
func (s *FileStore) completeRecord(ctx context.Context, runID string, rf runFS) {
	lk, err := acquire(ctx, runID, s.runPath(runID, lockFile), true, 0)
	if err != nil {
		return
	}
	defer lk.release()
	v, err := s.inspect(runID, true, false, rf)
	if err != nil {
		return
	}
	defer v.close()
	if v.choice.adopted && s.restoreState(runID, rf, v.choice) != nil {
		return
	}
	if v.recState == HeadRecordBehind {
		s.writeHeadRecord(recordOf(v.env), v.recFile, true)
	}
}

// Events implements Store. Like Load it takes no lock. It reads backwards
// from the head, so polling for recent events costs in proportion to the
// events returned, not to the run's history; a page that stops before the
// head is read forwards from its first line, found through the index
// ([FileStore.eventsWindow]).
func (s *FileStore) Events(ctx context.Context, runID string, afterSeq int64, limit int) ([]Event, error) {
	if err := ValidateRunID(runID); err != nil {
		return nil, err
	}
	if limit < 0 {
		return nil, fmt.Errorf("run %s: %w: negative limit %d", runID, ErrInvalidInput, limit)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return underLockIfCorrupt(s, ctx, runID, func(rf runFS) ([]Event, error) { return s.events(runID, afterSeq, limit, rf) })
}

// events is Events through rf.
func (s *FileStore) events(runID string, afterSeq int64, limit int, rf runFS) ([]Event, error) {
	c, err := s.latestState(runID, rf, false, nil)
	if err != nil {
		return nil, err
	}
	env, f := c.env, c.log
	defer closeLog(f)
	if afterSeq < 0 || afterSeq > env.Seq {
		return nil, fmt.Errorf("run %s: %w: after seq %d, head is %d", runID, ErrSeqOutOfRange, afterSeq, env.Seq)
	}
	if f == nil {
		return nil, nil
	}
	want := env.Seq - afterSeq
	if limit > 0 && int64(limit) < want {
		return s.eventsWindow(runID, env, f, afterSeq, limit)
	}
	lines, buf, err := lastLines(f, env.LogSize, want)
	defer putReadBuffer(buf)
	if err != nil {
		return nil, s.corrupt(runID, eventsFile, env.Seq, env.LogSize, err.Error())
	}
	if int64(len(lines)) < want {
		return nil, s.corrupt(runID, eventsFile, 0, 0, fmt.Sprintf("the log holds %d lines before the head, the head is seq %d", len(lines), env.Seq))
	}
	events, cerr := checkChainBack(runID, lines, env.Seq, env.Head)
	if cerr != nil {
		cerr.Path = s.runPath(runID, eventsFile)
		return nil, cerr
	}
	if limit > 0 && len(events) > limit {
		events = events[:limit]
	}
	return events, nil
}

// Event implements Store: two small reads through events.idx (or, when
// the index is short or stale, a bisection of the log), then the line.
func (s *FileStore) Event(ctx context.Context, runID string, seq int64) (Event, error) {
	if err := ValidateRunID(runID); err != nil {
		return Event{}, err
	}
	if err := ctx.Err(); err != nil {
		return Event{}, err
	}
	return underLockIfCorrupt(s, ctx, runID, func(rf runFS) (Event, error) { return s.event(runID, seq, rf) })
}

// event is Event through rf.
func (s *FileStore) event(runID string, seq int64, rf runFS) (Event, error) {
	c, err := s.latestState(runID, rf, false, nil)
	if err != nil {
		return Event{}, err
	}
	env, f := c.env, c.log
	defer closeLog(f)
	if seq < 1 || seq > env.Seq {
		return Event{}, fmt.Errorf("run %s: %w: seq %d, head is %d", runID, ErrSeqOutOfRange, seq, env.Seq)
	}
	ev, err := s.eventAt(runID, env, f, seq)
	if err != nil {
		return Event{}, err
	}
	if seq == 1 && ev.PrevHash != genesisHash(runID) {
		return Event{}, s.corrupt(runID, eventsFile, 1, 0, "the first event's prevHash is not this run's genesis hash")
	}
	if seq == env.Seq && ev.Hash != env.Head {
		return Event{}, s.corrupt(runID, eventsFile, seq, -1, fmt.Sprintf("hash %s is not the head %s recorded in the state", ev.Hash, env.Head))
	}
	return ev, nil
}

// List implements Store from the head records in .heads alone (two small
// reads per run); runs without one (written before head records, or whose
// Create was interrupted before writing it) are listed from their
// directory with UpdatedAt from state.json's modification time, a stat
// and not a read. A head record whose run directory is gone is listed
// too: the run was removed, and Load says so.
func (s *FileStore) List(ctx context.Context) ([]RunInfo, error) {
	// The root is listed (for runs without a record) while the records
	// are read.
	var entries []fs.DirEntry
	var rootErr error
	listed := make(chan struct{})
	go func() {
		defer close(listed)
		entries, rootErr = readDirUnsorted(s.root)
	}()
	heads, err := readDirNames(filepath.Join(s.root, headsDir))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		<-listed
		return nil, fmt.Errorf("list runs: %w", err)
	}
	runs := make([]RunInfo, 0, len(heads))
	recorded := make(map[string]bool, len(heads))
	for _, id := range heads {
		if !strings.HasPrefix(id, ".") && ValidateRunID(id) == nil {
			recorded[id] = true
			runs = append(runs, RunInfo{ID: id})
		}
	}
	err = s.fillFromRecords(ctx, runs)
	<-listed
	if err != nil {
		return nil, err
	}
	if errors.Is(rootErr, fs.ErrNotExist) {
		return []RunInfo{}, nil
	}
	if rootErr != nil {
		return nil, fmt.Errorf("list runs: %w", rootErr)
	}
	for _, e := range entries {
		if !e.IsDir() || recorded[e.Name()] || ValidateRunID(e.Name()) != nil {
			continue
		}
		info := RunInfo{ID: e.Name()}
		if st, err := os.Stat(filepath.Join(s.root, e.Name(), stateFile)); err == nil {
			info.UpdatedAt = st.ModTime()
		}
		runs = append(runs, info)
	}
	slices.SortFunc(runs, func(a, b RunInfo) int { return strings.Compare(a.ID, b.ID) })
	return runs, nil
}

// readDirUnsorted lists a directory without sorting it (List sorts what
// it returns once).
func readDirUnsorted(dir string) ([]fs.DirEntry, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.ReadDir(-1)
}

// readDirNames lists the names in a directory, unsorted.
func readDirNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

// fillFromRecords reads the head records of runs into them, with a few
// goroutines: the reads are small and independent, and on a cold cache
// or a loaded machine each waits on its own system calls.
func (s *FileStore) fillFromRecords(ctx context.Context, runs []RunInfo) error {
	if len(runs) == 0 {
		return nil
	}
	dir, err := openSmall(filepath.Join(s.root, headsDir), os.O_RDONLY, 0)
	if err != nil {
		return fmt.Errorf("list runs: %w", err)
	}
	defer dir.Close()
	workers := min(4, max(1, len(runs)/256))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			scratch := make([]byte, 2*slotPrimary)
			for i := w; i < len(runs); i += workers {
				if i%256 == w && ctx.Err() != nil {
					return
				}
				if rec, ok := listRecord(dir, runs[i].ID, scratch); ok {
					runs[i].UpdatedAt, runs[i].Head, runs[i].Summary = rec.SavedAt, rec.head(), rec.Summary
				}
			}
		})
	}
	wg.Wait()
	return ctx.Err()
}

// listRecord reads a head record for List; a damaged one lists the run
// with what it is (its id) and leaves the complaint to Load and Verify.
func listRecord(dir *smallFile, id string, scratch []byte) (headRecord, bool) {
	f, err := openSmallAt(dir, id, os.O_RDONLY, 0)
	if err != nil {
		return headRecord{}, false
	}
	defer f.Close()
	slots, err := readSlots(onceReader{f}, scratch)
	if err != nil {
		return headRecord{}, false
	}
	rec, ok, err := newestRecord(slots)
	if ok {
		rec.Summary = slices.Clone(rec.Summary) // it aliases scratch
	}
	return rec, ok && err == nil
}

// onceReader reads a file with one pread per ReadAt, taking a short read
// for the end of the file: List's reads of head records, where a record
// seen short is taken for torn and the other slot listed, as Load would
// not: Load and Update read with ReadAt, which reads on to the end.
type onceReader struct{ f *smallFile }

func (r onceReader) ReadAt(b []byte, off int64) (int, error) {
	n, err := r.f.readAtOnce(b, off)
	if err == nil && n < len(b) {
		err = io.EOF
	}
	return n, err
}

// eventsWindow reads the limit events after afterSeq (which end before
// the head) forwards from the end of the line of afterSeq, found through
// the index or by bisection, and checks them as the Store contract says
// of a page: each line decodes and hashes, the seqs follow on, and the
// chain links them to the hash recorded by the event before the first (or
// to the genesis hash). Its cost is that of the page and a lookup,
// wherever in the log the page is.
func (s *FileStore) eventsWindow(runID string, env envelope, f io.ReaderAt, afterSeq int64, limit int) ([]Event, error) {
	off, prev := int64(0), genesisHash(runID)
	if afterSeq > 0 {
		line, end, err := s.lineOf(runID, env, f, afterSeq)
		if err != nil {
			return nil, err
		}
		if prev, err = lineHash(line); err != nil {
			return nil, s.corrupt(runID, eventsFile, afterSeq, end-int64(len(line))-1, err.Error())
		}
		off = end
	}
	lines, buf, err := firstLines(f, off, env.LogSize, int64(limit))
	defer putReadBuffer(buf)
	if err != nil {
		return nil, s.corrupt(runID, eventsFile, afterSeq+1, off, err.Error())
	}
	if len(lines) < limit {
		return nil, s.corrupt(runID, eventsFile, afterSeq+1, off, fmt.Sprintf("the log holds %d lines after seq %d before the head, want %d", len(lines), afterSeq, limit))
	}
	events, cerr := checkChainForward(runID, lines, afterSeq+1, prev)
	if cerr != nil {
		cerr.Path = s.runPath(runID, eventsFile)
		return nil, cerr
	}
	return events, nil
}

// lineOf returns the line of event seq (without its newline, undecoded)
// and the offset where the next line starts: through the index when it
// points at the start of a line holding seq, otherwise by bisection.
func (s *FileStore) lineOf(runID string, env envelope, f io.ReaderAt, seq int64) ([]byte, int64, error) {
	if off, end, ok := s.indexLookup(runID, env, seq); ok {
		if line, ok := indexedLine(f, off, end); ok {
			if got, err := lineSeq(line); err == nil && got == seq {
				return line, end, nil
			}
		}
	}
	off, end, err := bisectLog(f, env.LogSize, seq)
	if err != nil {
		return nil, 0, s.corrupt(runID, eventsFile, seq, -1, err.Error())
	}
	_, line, err := lineFrom(f, off, env.LogSize)
	if err != nil {
		return nil, 0, s.corrupt(runID, eventsFile, seq, off, err.Error())
	}
	return line, end, nil
}

// indexedLine reads the line the index says is at [off, end) with one read of
// it and the byte before: off must start a line (be 0 or follow a
// newline) and the line's only newline be the byte before end.
func indexedLine(f io.ReaderAt, off, end int64) ([]byte, bool) {
	from := max(off-1, 0)
	buf := make([]byte, end-from)
	if _, err := f.ReadAt(buf, from); err != nil {
		return nil, false
	}
	if off > 0 {
		if buf[0] != '\n' {
			return nil, false
		}
		buf = buf[1:]
	}
	line := buf[:len(buf)-1]
	if buf[len(buf)-1] != '\n' || bytes.IndexByte(line, '\n') >= 0 {
		return nil, false
	}
	return line, true
}
