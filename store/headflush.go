package store

import "sync"

// recordFlushes are the head records this store flushed as soon as it
// wrote them (docs/storage.md, "The head record's early flush"). A write
// must know the previous write's record is durable before it replaces the
// state, which it learns by flushing the record file with its own fsyncs.
// When that record was written by this store, its flush was started right
// after the write that wrote it, in the background, and the next write
// only waits for its answer: in the time between two steps it has long
// finished, and the next write's flushes are one fewer. When anything else
// touched the run or its record since (another process wrote, the record
// file was replaced), or the flush is forgotten, the next write flushes
// the file itself, as it always did.
type recordFlushes struct {
	mu    sync.Mutex
	m     map[string]*recordFlush
	limit int // at most this many remembered (maxRecordFlushes when 0)
	// sync flushes a record file and wait is called when a write is
	// about to wait for a flush: nil outside tests, which count the
	// flushes, make them fail or hold them.
	sync func(*smallFile) error
	wait func()
}

// maxRecordFlushes bounds the flushes remembered: forgetting one only
// makes the run's next write flush its record file itself.
const maxRecordFlushes = 4096

// recordFlush is the flush of one write's head record.
type recordFlush struct {
	rec  headRecord // the record flushed, as written
	done chan struct{}
	// Set before done is closed:
	file fileID // the file flushed (zero when unknown)
	err  error  // the flush's answer
}

// datasync flushes f (through the test hook when set).
func (r *recordFlushes) datasync(f *smallFile) error {
	if r.sync != nil {
		return r.sync(f)
	}
	return f.Datasync()
}

// start takes f, which holds rec just written, and flushes it in the
// background, then closes it. A failed flush writes the
// record's bytes again before the file is closed: the kernel reports a
// failed write-back once and may then take the pages for clean, and
// written again they are dirty, so whoever flushes the file next (this
// store's next write, which also fails with this error, or another
// process) writes them or hears of the failure.
func (r *recordFlushes) start(runID string, f *smallFile, rec headRecord) {
	fl := &recordFlush{rec: rec, done: make(chan struct{})}
	r.mu.Lock()
	if r.m == nil {
		r.m = map[string]*recordFlush{}
	}
	limit := r.limit
	if limit == 0 {
		limit = maxRecordFlushes
	}
	if _, ok := r.m[runID]; !ok && len(r.m) >= limit {
		for id, old := range r.m {
			select {
			case <-old.done:
				delete(r.m, id)
			default:
			}
		}
	}
	if _, ok := r.m[runID]; ok || len(r.m) < limit {
		r.m[runID] = fl
	}
	r.mu.Unlock()
	go func() {
		defer f.Close()
		defer close(fl.done)
		if fl.err = r.datasync(f); fl.err != nil {
			writeSlot(f, rec.Rev%2, encodeHeadRecord(rec)) // best effort: see above
			return
		}
		fl.file, _ = f.id() // zero on error: the next write flushes itself
	}()
}

// take removes and returns the flush remembered for runID (nil if none).
func (r *recordFlushes) take(runID string) *recordFlush {
	r.mu.Lock()
	defer r.mu.Unlock()
	fl := r.m[runID]
	delete(r.m, runID)
	return fl
}

// settle makes the head record in f durable, rec as read from it: by
// waiting for fl when fl flushed that very record in that very file, else
// by flushing f. A failed flush fails the write that depends on it, as its
// own flush would have.
func (r *recordFlushes) settle(fl *recordFlush, f *smallFile, rec headRecord) error {
	if fl == nil || !sameRecord(fl.rec, rec) {
		return r.datasync(f)
	}
	if r.wait != nil {
		r.wait()
	}
	<-fl.done
	if fl.err != nil {
		return fl.err
	}
	if id, err := f.id(); err != nil || id != fl.file || id == (fileID{}) {
		return r.datasync(f)
	}
	return nil
}

// sameRecord reports whether two head records are of the same write: the
// same revision, head and state, saved at the same instant (nanoseconds),
// which no other write of the run shares.
func sameRecord(a, b headRecord) bool {
	return a.RunID == b.RunID && a.Rev == b.Rev && a.Seq == b.Seq && a.Hash == b.Hash &&
		a.SavedAt.Equal(b.SavedAt) && a.State == b.State
}
