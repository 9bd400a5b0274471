package store

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// Names inside a run directory and the root.
const (
	stateFile  = "state.json"
	eventsFile = "events.jsonl"
	indexFile  = "events.idx"
	lockFile   = "run.lock"
	leaseFile  = "lease"
	stagingDir = ".staging" // under the root; not a valid run id
	headsDir   = ".heads"   // under the root: one head record per run
	// stateTemp is the one temp name of a state replace: only the lock
	// holder writes it, so a fixed name needs no sweep of leftovers.
	stateTemp = ".state.json.tmp"
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
	// LockTimeout bounds the wait for a run's lock (and for a lease
	// file's); 0 means DefaultLockTimeout. Negative is an error.
	LockTimeout time.Duration
	// OnRepair, when set, is called (under the run's lock, once the write
	// that records the repair is durable) for each piece of data found
	// after a run's head that an Update kept aside, with a description of
	// it (Tail.KeptAs names the file): the place to log it.
	OnRepair func(runID string, kept Tail)
}

// FileStore is the file-system Store: one directory per run under a root,
// and one head record per run in the root's .heads directory. See
// docs/storage.md for the layout and the recovery rules.
type FileStore struct {
	root        string
	lockTimeout time.Duration
	onRepair    func(string, Tail)
	flushes     recordFlushes // head records flushed ahead of the next write
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

func (s *FileStore) runPath(id, file string) string { return filepath.Join(s.root, id, file) }

func (s *FileStore) headPath(id string) string { return filepath.Join(s.root, headsDir, id) }

func (s *FileStore) corrupt(id, file string, seq, off int64, reason string) *CorruptError {
	return &CorruptError{RunID: id, Part: partOf(file), Path: s.runPath(id, file), Seq: seq, Offset: off, Reason: reason}
}

// located fills in the path of a backend-neutral CorruptError.
func (s *FileStore) located(id string, ce *CorruptError) *CorruptError {
	if ce.Path == "" {
		switch ce.Part {
		case PartState:
			ce.Path = s.runPath(id, stateFile)
		case PartEvents:
			ce.Path = s.runPath(id, eventsFile)
		case PartHead:
			ce.Path = s.headPath(id)
		case PartRun:
			ce.Path = s.runDir(id)
		}
	}
	return ce
}

func partOf(file string) string {
	if file == stateFile {
		return PartState
	}
	return PartEvents
}

// notFound wraps ErrRunNotFound with the id.
func notFound(id string) error { return fmt.Errorf("run %s: %w", id, ErrRunNotFound) }

// missingRun is the answer for a run whose directory does not exist: not
// found, unless its head record says it existed (then it was removed).
func (s *FileStore) missingRun(id string) error {
	rec, have, err := s.readHeadRecord(id)
	if err != nil {
		return err
	}
	if have {
		return s.located(id, removedRun(id, rec))
	}
	return notFound(id)
}

// runFS opens the files of one run: through an open handle on its
// directory when it has one (openat resolves only the name: an update
// opens half a dozen of them), else by path.
type runFS struct {
	path string
	dir  *smallFile
	// lockFree marks a reader that holds no lock: it must allow for a
	// writer exchanging the state file under it (see readState).
	lockFree bool
}

func (s *FileStore) files(id string) runFS { return runFS{path: s.runDir(id)} }

// unlockedFiles is files for a reader that takes no lock.
func (s *FileStore) unlockedFiles(id string) runFS { return runFS{path: s.runDir(id), lockFree: true} }

// openFiles opens a handle on the run's directory; errNoRunDir when it
// does not exist.
func (s *FileStore) openFiles(id string) (runFS, error) {
	dir, err := openSmall(s.runDir(id), os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return runFS{}, errNoRunDir
	}
	if err != nil {
		return runFS{}, fmt.Errorf("run %s: %w", id, err)
	}
	return runFS{path: s.runDir(id), dir: dir}, nil
}

func (r runFS) open(name string, flag int, perm fs.FileMode) (*smallFile, error) {
	if r.dir != nil {
		return openSmallAt(r.dir, name, flag, perm)
	}
	return openSmall(filepath.Join(r.path, name), flag, perm)
}

// sync fsyncs the run's directory.
func (r runFS) sync() error {
	if r.dir != nil {
		if err := r.dir.Sync(); err != nil {
			return fmt.Errorf("sync dir %s: %w", r.path, err)
		}
		return nil
	}
	return syncDir(r.path)
}

func (r runFS) close() {
	if r.dir != nil {
		r.dir.Close()
	}
}

// readState reads and checks a run's state file. Without the run's lock
// (rf.lockFree) a reader can open the state file just before a writer
// exchanges it for the new one, and read it while the next update writes
// it as its temp (replaceState): a torn state, or one not yet in place.
// Such a reader therefore reads again when, after the read, the state's
// name no longer names the file it read or its checksum fails, up to
// stateReads times; what is still wrong then is reported corrupt, and
// Load, Events and Event read once more under the lock held shared, where
// no writer runs. (A file exchanged away and back while it was read can
// pass the name check with a state a killed write left in it; what reads
// it then does not fit the log or the head record, and the read under the
// lock decides: see Load, Events and Event.) Under the lock the state file
// does not change, and it is read once.
func (s *FileStore) readState(id string, rf runFS) (envelope, error) {
	var env envelope
	var bad error
	for n := 1; ; n++ {
		data, current, err := readWholeNamed(rf, stateFile)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				return envelope{}, fmt.Errorf("run %s: read state: %w", id, err)
			}
			if _, dirErr := os.Stat(s.runDir(id)); errors.Is(dirErr, fs.ErrNotExist) {
				return envelope{}, s.missingRun(id)
			}
			return envelope{}, s.corrupt(id, stateFile, 0, -1,
				"the state file is missing but the run directory exists; the store cannot rebuild the engine's state from events: restore state.json from a backup or remove the run directory")
		}
		env, bad = decodeEnvelope(data)
		if bad == nil && !current {
			bad = errors.New("the state file was replaced while it was read")
		}
		if bad == nil || n == stateReads || !rf.lockFree {
			break
		}
	}
	if bad != nil {
		return envelope{}, s.corrupt(id, stateFile, 0, -1, bad.Error())
	}
	if env.RunID != id {
		return envelope{}, s.corrupt(id, stateFile, 0, -1, fmt.Sprintf("the state belongs to run %q", env.RunID))
	}
	if env.Seq == 0 && (env.LogSize != 0 || env.Head != genesisHash(id)) {
		return envelope{}, s.corrupt(id, stateFile, 0, -1, "a run without events must have an empty log and the genesis head")
	}
	return env, nil
}

// afterStateOpen and afterStateRead, when set (by tests), run between
// opening the state file and reading it, and between reading it and
// looking at its name.
var afterStateOpen, afterStateRead func()

// afterFileSized, when set (by tests), runs in readOpen between taking a
// file's size and reading it, with the file's path.
var afterFileSized func(path string)

// stateReads is how many times readState reads a state file that changes
// under it.
const stateReads = 3

// readWholeNamed is readWhole that also says whether the file read is
// still the one name names.
func readWholeNamed(rf runFS, name string) ([]byte, bool, error) {
	f, err := rf.open(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	if afterStateOpen != nil {
		afterStateOpen()
	}
	data, err := readOpen(f)
	if errors.Is(err, io.EOF) {
		return nil, false, nil // cut shorter under the read: a writer's temp now
	}
	if err != nil || !rf.lockFree {
		return data, err == nil, err
	}
	if afterStateRead != nil {
		afterStateRead()
	}
	current, err := rf.named(f, name)
	return data, current, err
}

// readWhole reads a file with one read when it fits the size fstat gives
// (os.ReadFile reads again to see EOF).
func readWhole(rf runFS, name string) ([]byte, error) {
	f, err := rf.open(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readOpen(f)
}

// readOpen reads an open file whole. A file cut shorter between its size
// and its read (a writer rewriting a temp in place: writeTemp writes, then
// truncates) ends in io.EOF.
func readOpen(f *smallFile) ([]byte, error) {
	size, err := f.Size()
	if err != nil {
		return nil, err
	}
	if afterFileSized != nil {
		afterFileSized(f.Name())
	}
	buf := make([]byte, size)
	n, err := f.ReadAt(buf, 0)
	if err != nil && n != len(buf) {
		return nil, err
	}
	return buf[:n], nil
}

// openLog opens a run's event log for reading or, with write, for
// appending, and returns its size. A missing log is an empty one only while
// the state acknowledges no bytes of it.
func (s *FileStore) openLog(id string, env envelope, write bool, rf runFS) (*smallFile, int64, error) {
	flag := os.O_RDONLY
	if write {
		flag = os.O_RDWR | os.O_APPEND
	}
	f, err := rf.open(eventsFile, flag, filePerm)
	if errors.Is(err, fs.ErrNotExist) && env.LogSize == 0 {
		if !write {
			return nil, 0, nil
		}
		f, err = rf.open(eventsFile, flag|os.O_CREATE, filePerm)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, s.corrupt(id, eventsFile, 0, -1, fmt.Sprintf("the event log is missing; the state acknowledges %d events", env.Seq))
	}
	if err != nil {
		return nil, 0, fmt.Errorf("run %s: open event log: %w", id, err)
	}
	size, err := f.Size()
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("run %s: event log: %w", id, err)
	}
	if size < env.LogSize {
		f.Close()
		return nil, 0, s.corrupt(id, eventsFile, 0, size, fmt.Sprintf(
			"the event log holds %d bytes but the state acknowledges %d bytes (%d events): acknowledged events are missing",
			size, env.LogSize, env.Seq))
	}
	return f, size, nil
}

// checkHead verifies that the line ending at the acknowledged size is the
// head the state records, and returns where that line starts (-1 for a
// run without events). This, not a scan of the log, is what makes a load
// cost independent of the run's history.
func (s *FileStore) checkHead(id string, env envelope, f io.ReaderAt) (int64, error) {
	if env.Seq == 0 {
		return -1, nil
	}
	lines, buf, err := lastLines(f, env.LogSize, 1)
	defer putReadBuffer(buf)
	if err != nil {
		return 0, s.corrupt(id, eventsFile, env.Seq, env.LogSize, err.Error())
	}
	if _, cerr := checkChainBack(id, lines, env.Seq, env.Head); cerr != nil {
		cerr.Path = s.runPath(id, eventsFile)
		return 0, cerr
	}
	return lines[0].offset, nil
}
