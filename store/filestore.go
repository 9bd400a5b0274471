package store

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/stratum-go/stratum/internal/atomicfile"
)

// Names inside a run directory and the root.
const (
	stateFile  = "state.json"
	eventsFile = "events.jsonl"
	lockFile   = "run.lock"
	stagingDir = ".staging" // under the root; not a valid run id
)

// DefaultLockTimeout is how long Update and Verify wait for a run's lock
// when Options.LockTimeout is zero.
const DefaultLockTimeout = 5 * time.Second

// stagingStaleAfter is the age after which an unlocked staging directory
// is taken to be the leftover of a Create that crashed.
const stagingStaleAfter = time.Minute

const (
	dirPerm  = 0o700 // run state may hold inputs and results: private
	filePerm = 0o600
)

// Options configure a FileStore. The zero value (or nil) gives defaults.
type Options struct {
	// LockTimeout bounds the wait for a run's lock; 0 means
	// DefaultLockTimeout. Negative is an error.
	LockTimeout time.Duration
	// OnRepair, when set, is called (under the run's lock, before the
	// Update proceeds) each time an Update removes unacknowledged data
	// after a run's head, with a description of what was removed: the
	// place to log it.
	OnRepair func(runID string, removed Tail)
}

// FileStore is the file-system Store: one directory per run under a root.
// See docs/storage.md for the layout and the recovery rules.
type FileStore struct {
	root        string
	lockTimeout time.Duration
	onRepair    func(string, Tail)
}

var _ Store = (*FileStore)(nil)

// NewFileStore returns a store rooted at root. It touches nothing on disk:
// the root is created by the first Create, and a missing root lists as
// empty.
func NewFileStore(root string, opts *Options) (*FileStore, error) {
	if root == "" {
		return nil, fmt.Errorf("%w: empty state root", ErrInvalidInput)
	}
	s := &FileStore{root: filepath.Clean(root), lockTimeout: DefaultLockTimeout}
	if opts != nil {
		if opts.LockTimeout < 0 {
			return nil, fmt.Errorf("%w: negative lock timeout %s", ErrInvalidInput, opts.LockTimeout)
		}
		if opts.LockTimeout > 0 {
			s.lockTimeout = opts.LockTimeout
		}
		s.onRepair = opts.OnRepair
	}
	return s, nil
}

// Root returns the directory holding the runs.
func (s *FileStore) Root() string { return s.root }

func (s *FileStore) runDir(id string) string { return filepath.Join(s.root, id) }

func (s *FileStore) corrupt(id, file string, seq, off int64, reason string) *CorruptError {
	return &CorruptError{RunID: id, Part: partOf(file), Path: filepath.Join(s.runDir(id), file), Seq: seq, Offset: off, Reason: reason}
}

func partOf(file string) string {
	if file == stateFile {
		return PartState
	}
	return PartEvents
}

// notFound wraps ErrRunNotFound with the id.
func notFound(id string) error { return fmt.Errorf("run %s: %w", id, ErrRunNotFound) }

// Create implements Store. It builds the whole run in a staging directory
// and renames it into place, so a run directory either is complete or does
// not exist, and two concurrent Creates of one id cannot both succeed.
func (s *FileStore) Create(ctx context.Context, runID string, state []byte, events []NewEvent) (Head, error) {
	if err := ValidateRunID(runID); err != nil {
		return Head{}, err
	}
	if err := ctx.Err(); err != nil {
		return Head{}, err
	}
	if !json.Valid(state) {
		return Head{}, fmt.Errorf("run %s: %w: state is not valid JSON", runID, ErrInvalidInput)
	}
	head := Head{Hash: genesisHash(runID)}
	batch, head, err := encodeBatch(runID, head, events)
	if err != nil {
		return Head{}, err
	}
	dst := s.runDir(runID)
	if _, err := os.Lstat(dst); err == nil {
		return Head{}, fmt.Errorf("run %s: %w", runID, ErrRunExists)
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
	env := envelope{RunID: runID, Seq: head.Seq, Head: head.Hash, LogSize: int64(len(batch)), State: state}
	if err := writeSynced(filepath.Join(tmp, eventsFile), batch); err != nil {
		return Head{}, fmt.Errorf("run %s: create: %w", runID, err)
	}
	if err := writeSynced(filepath.Join(tmp, stateFile), encodeEnvelope(env)); err != nil {
		return Head{}, fmt.Errorf("run %s: create: %w", runID, err)
	}
	if err := atomicfile.SyncDir(tmp); err != nil {
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
	if err := atomicfile.SyncDir(s.root); err != nil {
		return Head{}, fmt.Errorf("run %s: create: %w", runID, err)
	}
	return head, nil
}

// prepareStaging makes sure the root and its staging directory exist and
// removes what crashed Creates left there.
func (s *FileStore) prepareStaging(ctx context.Context) (string, error) {
	staging := filepath.Join(s.root, stagingDir)
	if _, err := os.Stat(staging); err != nil {
		// Remember which directories are new: their entries must be
		// fsynced in their parents, or a crash could lose the whole root.
		var created []string
		for d := staging; ; d = filepath.Dir(d) {
			if _, err := os.Stat(d); err == nil || filepath.Dir(d) == d {
				break
			}
			created = append(created, d)
		}
		if err := os.MkdirAll(staging, dirPerm); err != nil {
			return "", fmt.Errorf("state root: %w", err)
		}
		for _, d := range created {
			if err := atomicfile.SyncDir(filepath.Dir(d)); err != nil {
				return "", fmt.Errorf("state root: %w", err)
			}
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

// encodeBatch encodes events after head into one buffer of lines, returning
// the new head.
func encodeBatch(runID string, head Head, events []NewEvent) ([]byte, Head, error) {
	var batch []byte
	for i, e := range events {
		line, hash, err := encodeEvent(head.Seq+1, head.Hash, e)
		if err != nil {
			return nil, Head{}, fmt.Errorf("run %s: event %d: %w", runID, i, err)
		}
		batch = append(append(batch, line...), '\n')
		head = Head{Seq: head.Seq + 1, Hash: hash}
	}
	return batch, head, nil
}

// readState reads and checks a run's state file.
func (s *FileStore) readState(id string) (envelope, error) {
	path := filepath.Join(s.runDir(id), stateFile)
	data, err := os.ReadFile(path)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			return envelope{}, fmt.Errorf("run %s: read state: %w", id, err)
		}
		if _, dirErr := os.Stat(s.runDir(id)); errors.Is(dirErr, fs.ErrNotExist) {
			return envelope{}, notFound(id)
		}
		return envelope{}, s.corrupt(id, stateFile, 0, -1,
			"the state file is missing but the run directory exists; the store cannot rebuild the engine's state from events: restore state.json from a backup or remove the run directory")
	}
	env, err := decodeEnvelope(data)
	if err != nil {
		return envelope{}, s.corrupt(id, stateFile, 0, -1, err.Error())
	}
	if env.RunID != id {
		return envelope{}, s.corrupt(id, stateFile, 0, -1, fmt.Sprintf("the state belongs to run %q", env.RunID))
	}
	if env.Seq == 0 && (env.LogSize != 0 || env.Head != genesisHash(id)) {
		return envelope{}, s.corrupt(id, stateFile, 0, -1, "a run without events must have an empty log and the genesis head")
	}
	return env, nil
}

// openLog opens a run's event log for reading or, with write, for
// appending, and returns its size. A missing log is an empty one only while
// the state acknowledges no bytes of it.
func (s *FileStore) openLog(id string, env envelope, write bool) (*os.File, int64, error) {
	path := filepath.Join(s.runDir(id), eventsFile)
	flag := os.O_RDONLY
	if write {
		flag = os.O_RDWR | os.O_APPEND
	}
	f, err := os.OpenFile(path, flag, filePerm)
	if errors.Is(err, fs.ErrNotExist) && env.LogSize == 0 {
		if !write {
			return nil, 0, nil
		}
		f, err = os.OpenFile(path, flag|os.O_CREATE, filePerm)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, s.corrupt(id, eventsFile, 0, -1, fmt.Sprintf("the event log is missing; the state acknowledges %d events", env.Seq))
	}
	if err != nil {
		return nil, 0, fmt.Errorf("run %s: open event log: %w", id, err)
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("run %s: event log: %w", id, err)
	}
	if info.Size() < env.LogSize {
		f.Close()
		return nil, 0, s.corrupt(id, eventsFile, 0, info.Size(), fmt.Sprintf(
			"the event log holds %d bytes but the state acknowledges %d bytes (%d events): acknowledged events are missing",
			info.Size(), env.LogSize, env.Seq))
	}
	return f, info.Size(), nil
}

// checkHead verifies that the line ending at the acknowledged size is the
// head the state records. This, not a scan of the log, is what makes a
// load cost independent of the run's history.
func (s *FileStore) checkHead(id string, env envelope, f *os.File) error {
	if env.Seq == 0 {
		return nil
	}
	lines, err := lastLines(f, env.LogSize, 1)
	if err != nil {
		return s.corrupt(id, eventsFile, env.Seq, env.LogSize, err.Error())
	}
	if _, cerr := checkChainBack(id, lines, env.Seq, env.Head); cerr != nil {
		cerr.Path = filepath.Join(s.runDir(id), eventsFile)
		return cerr
	}
	return nil
}

// Load implements Store. It takes no lock: state files are replaced
// atomically and the log is only ever cut back to the acknowledged size,
// so a lock-free reader always sees a whole, consistent acknowledged run.
func (s *FileStore) Load(ctx context.Context, runID string) (*Snapshot, error) {
	if err := ValidateRunID(runID); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	env, err := s.readState(runID)
	if err != nil {
		return nil, err
	}
	f, _, err := s.openLog(runID, env, false)
	if err != nil {
		return nil, err
	}
	if f != nil {
		defer f.Close()
		if err := s.checkHead(runID, env, f); err != nil {
			return nil, err
		}
	}
	return &Snapshot{RunID: runID, State: env.State, Head: Head{Seq: env.Seq, Hash: env.Head}}, nil
}

// Update implements Store. Order of writes: the new events are appended
// and fsynced first, then the state (which records the new head and log
// size) is replaced atomically. A crash between the two leaves events
// after the acknowledged size, which readers ignore and the next Update
// removes.
func (s *FileStore) Update(ctx context.Context, runID string, fn func(cur *Snapshot) (*Change, error)) (Head, error) {
	if err := ValidateRunID(runID); err != nil {
		return Head{}, err
	}
	if err := ctx.Err(); err != nil {
		return Head{}, err
	}
	dir := s.runDir(runID)
	lk, err := acquire(ctx, runID, filepath.Join(dir, lockFile), true, s.lockTimeout)
	if errors.Is(err, errNoRunDir) {
		return Head{}, notFound(runID)
	}
	if err != nil {
		return Head{}, err
	}
	defer lk.release()

	env, err := s.readState(runID)
	if err != nil {
		return Head{}, err
	}
	f, size, err := s.openLog(runID, env, true)
	if err != nil {
		return Head{}, err
	}
	defer f.Close()
	if err := s.checkHead(runID, env, f); err != nil {
		return Head{}, err
	}
	cur := Head{Seq: env.Seq, Hash: env.Head}

	change, err := fn(&Snapshot{RunID: runID, State: slices.Clone(env.State), Head: cur})
	if err != nil {
		return Head{}, err
	}
	if change == nil || (change.State == nil && len(change.Events) == 0) {
		return cur, nil
	}
	state := env.State
	if change.State != nil {
		if !json.Valid(change.State) {
			return Head{}, fmt.Errorf("run %s: %w: state is not valid JSON", runID, ErrInvalidInput)
		}
		state = change.State
	}
	batch, head, err := encodeBatch(runID, cur, change.Events)
	if err != nil {
		return Head{}, err
	}

	if size > env.LogSize {
		if err := s.removeTail(runID, f, env, cur, size); err != nil {
			return Head{}, err
		}
	}
	if len(batch) > 0 {
		// One write of whole lines, then fsync: after a crash the log holds
		// the acknowledged prefix plus at most a prefix of this batch.
		if _, err := f.Write(batch); err != nil {
			return Head{}, fmt.Errorf("run %s: append events: %w", runID, err)
		}
		if err := f.Sync(); err != nil {
			return Head{}, fmt.Errorf("run %s: append events: fsync: %w", runID, err)
		}
	}
	// Temp files of an earlier crashed replace; only the lock holder
	// writes them, so none can be in use.
	if _, err := atomicfile.Sweep(dir); err != nil {
		return Head{}, fmt.Errorf("run %s: %w", runID, err)
	}
	next := envelope{RunID: runID, Seq: head.Seq, Head: head.Hash, LogSize: env.LogSize + int64(len(batch)), State: state}
	if err := atomicfile.WriteFile(filepath.Join(dir, stateFile), encodeEnvelope(next), filePerm); err != nil {
		return Head{}, fmt.Errorf("run %s: replace state: %w", runID, err)
	}
	return head, nil
}

// removeTail cuts the log back to its acknowledged size. What it removes
// was never acknowledged, so removing it loses nothing a caller was told
// is stored. It need not be fsynced on its own: readers ignore the tail
// anyway, and the append that follows is fsynced.
func (s *FileStore) removeTail(id string, f *os.File, env envelope, head Head, size int64) error {
	if s.onRepair != nil {
		tail, err := readTail(f, env.LogSize, size, head)
		if err != nil {
			return fmt.Errorf("run %s: read unacknowledged tail: %w", id, err)
		}
		s.onRepair(id, tail)
	}
	if err := f.Truncate(env.LogSize); err != nil {
		return fmt.Errorf("run %s: remove unacknowledged tail: %w", id, err)
	}
	return nil
}

// Events implements Store. Like Load it takes no lock. It reads backwards
// from the head, so polling for recent events costs in proportion to the
// events returned, not to the run's history.
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
	env, err := s.readState(runID)
	if err != nil {
		return nil, err
	}
	if afterSeq < 0 || afterSeq > env.Seq {
		return nil, fmt.Errorf("run %s: %w: after seq %d, head is %d", runID, ErrSeqOutOfRange, afterSeq, env.Seq)
	}
	f, _, err := s.openLog(runID, env, false)
	if err != nil || f == nil {
		return nil, err
	}
	defer f.Close()
	want := env.Seq - afterSeq
	lines, err := lastLines(f, env.LogSize, want)
	if err != nil {
		return nil, s.corrupt(runID, eventsFile, env.Seq, env.LogSize, err.Error())
	}
	if int64(len(lines)) < want {
		return nil, s.corrupt(runID, eventsFile, 0, 0, fmt.Sprintf("the log holds %d lines before the head, the head is seq %d", len(lines), env.Seq))
	}
	events, cerr := checkChainBack(runID, lines, env.Seq, env.Head)
	if cerr != nil {
		cerr.Path = filepath.Join(s.runDir(runID), eventsFile)
		return nil, cerr
	}
	if limit > 0 && len(events) > limit {
		events = events[:limit]
	}
	return events, nil
}

// List implements Store. Entries of the root that are not run directories
// (the staging directory, stray files) are not runs and are skipped.
func (s *FileStore) List(ctx context.Context) ([]RunInfo, error) {
	entries, err := os.ReadDir(s.root)
	if errors.Is(err, fs.ErrNotExist) {
		return []RunInfo{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	runs := make([]RunInfo, 0, len(entries))
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if !e.IsDir() || ValidateRunID(e.Name()) != nil {
			continue
		}
		info := RunInfo{ID: e.Name()}
		// A run whose state file is missing is still listed (Load reports
		// it as corrupt) with a zero UpdatedAt.
		if st, err := os.Stat(filepath.Join(s.root, e.Name(), stateFile)); err == nil {
			info.UpdatedAt = st.ModTime()
		}
		runs = append(runs, info)
	}
	return runs, nil // os.ReadDir sorts by name
}

// Verify implements Store. It holds the run's lock shared, so it sees no
// Update in progress, and reads the whole log from the first event.
func (s *FileStore) Verify(ctx context.Context, runID string) (*VerifyReport, error) {
	if err := ValidateRunID(runID); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	lk, err := acquire(ctx, runID, filepath.Join(s.runDir(runID), lockFile), false, s.lockTimeout)
	if errors.Is(err, errNoRunDir) {
		return nil, notFound(runID)
	}
	if err != nil {
		return nil, err
	}
	defer lk.release()

	env, err := s.readState(runID)
	if err != nil {
		return nil, err
	}
	rep := &VerifyReport{RunID: runID, StateBytes: len(env.State)}
	f, size, err := s.openLog(runID, env, false)
	if err != nil {
		return nil, err
	}
	if f == nil {
		rep.Head, rep.Tail.Chained = Head{Seq: env.Seq, Hash: env.Head}, true
		return rep, nil
	}
	defer f.Close()

	r := bufio.NewReaderSize(io.NewSectionReader(f, 0, env.LogSize), 64<<10)
	prev, seq, off := genesisHash(runID), int64(0), int64(0)
	for off < env.LogSize {
		if seq%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		line, err := r.ReadBytes('\n')
		if err != nil {
			return nil, s.corrupt(runID, eventsFile, seq+1, off, "the acknowledged part of the log ends inside a line")
		}
		ev, derr := decodeEvent(line[:len(line)-1])
		switch {
		case derr != nil:
			return nil, s.corrupt(runID, eventsFile, seq+1, off, derr.Error())
		case ev.Seq != seq+1:
			return nil, s.corrupt(runID, eventsFile, seq+1, off, fmt.Sprintf("line holds seq %d", ev.Seq))
		case ev.PrevHash != prev:
			return nil, s.corrupt(runID, eventsFile, seq+1, off, fmt.Sprintf("prevHash %s is not the previous event's hash %s: the chain is broken", ev.PrevHash, prev))
		}
		prev, seq, off = ev.Hash, ev.Seq, off+int64(len(line))
	}
	if seq != env.Seq || prev != env.Head {
		return nil, s.corrupt(runID, eventsFile, seq, off, fmt.Sprintf(
			"the log's acknowledged part ends at seq %d with hash %s, which is not the head (seq %d, hash %s) recorded in the state", seq, prev, env.Seq, env.Head))
	}
	rep.Head, rep.Events = Head{Seq: seq, Hash: prev}, seq
	if rep.Tail, err = readTail(f, env.LogSize, size, rep.Head); err != nil {
		return nil, fmt.Errorf("run %s: read log tail: %w", runID, err)
	}
	return rep, nil
}
