package store

import "sync"

// recordFlushes are the head records this store flushed as soon as it
// wrote them (docs/storage.md, "Writing", step 9). A write must know the
// previous write's record is durable before it replaces the state, which
// it does by flushing the record file with its own fsyncs; when that
// record was written by this store, its flush was started right after the
// write that wrote it, in the background, and the next write only waits
// for its answer: in the time between two steps it has long finished, and
// the next write's flushes are one fewer. Any doubt (another process wrote
// since, the record file was replaced, the flush failed to start) and the
// next write flushes the file itself, as it always did, so this never
// makes less durable than before; it only flushes earlier.
type recordFlushes struct {
	mu    sync.Mutex
	m     map[string]*recordFlush
	limit int // at most this many remembered (maxRecordFlushes when 0)
}

// maxRecordFlushes bounds the flushes remembered: forgetting one only
// makes the run's next write flush its record file itself.
const maxRecordFlushes = 4096

// recordFlush is the flush of the record of one write (rev) of a run.
type recordFlush struct {
	rev  int64
	done chan struct{} // closed when the flush answered; then:
	file fileID        // the file flushed (zero when unknown)
	err  error         // the flush's answer
}

// start takes f (holding the record of write rev of runID, just written)
// and flushes it in the background, then closes it.
func (r *recordFlushes) start(runID string, f *smallFile, rev int64) {
	fl := &recordFlush{rev: rev, done: make(chan struct{})}
	r.mu.Lock()
	if r.m == nil {
		r.m = map[string]*recordFlush{}
	}
	limit := r.limit
	if limit == 0 {
		limit = maxRecordFlushes
	}
	if len(r.m) >= limit {
		for id, old := range r.m {
			select {
			case <-old.done:
				delete(r.m, id)
			default:
			}
		}
	}
	if len(r.m) < limit {
		r.m[runID] = fl
	}
	r.mu.Unlock()
	go func() {
		defer f.Close()
		defer close(fl.done)
		if fl.err = recordDatasync(f); fl.err == nil {
			fl.file, _ = f.id() // zero on error: the next write flushes itself
		}
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

// settle makes the record in f, of write rev, durable: by waiting for fl
// when it flushed that record in that very file, else by flushing f. A
// failed flush fails the write that depends on it, as its own flush
// would have.
func (fl *recordFlush) settle(f *smallFile, rev int64) error {
	if fl == nil || fl.rev != rev {
		return recordDatasync(f)
	}
	if recordFlushWait != nil {
		recordFlushWait()
	}
	<-fl.done
	if fl.err != nil {
		return fl.err
	}
	if id, err := f.id(); err != nil || id != fl.file || id == (fileID{}) {
		return recordDatasync(f)
	}
	return nil
}

// recordFlushWait, when set (by tests), is called when a write is about
// to wait for an earlier flush.
var recordFlushWait func()

// recordDatasync flushes a head record file (a variable for tests, which
// count the flushes or make them fail).
var recordDatasync = (*smallFile).Datasync
