package store

import (
	"errors"
	"sync"
	"sync/atomic"
)

// errEarlierFlush is what a write learns when a group flush that
// returned after the write began reported an error: that flush may have
// been the one to write the write's data back and lose it (an error is
// reported once), so the write cannot be acknowledged even though its own
// flush succeeded.
var errEarlierFlush = errors.New("a file-system flush that may have covered this write failed")

// groupSyncer shares one flush of a whole file system (syncfs(2) on
// Linux, groupsync_linux.go) between the writes that are ready at the
// same time: group commit (docs/storage.md, "Group commit"). At most one
// flush is in flight. A write that asks while one runs joins the next,
// which starts only once the running one has returned; so every write is
// covered by a flush that started after it asked, that is after its data
// was written. A flush's error fails every write of its batch, and every
// write that began (see begin) before the flush returned.
type groupSyncer struct {
	flush func() error

	mu      sync.Mutex
	running bool
	next    *syncBatch // the batch writes join now; it has not started
	failed  uint64     // flushes that returned an error so far

	flushes atomic.Int64 // flushes issued, and
	covered atomic.Int64 // the waits they answered (for benchmarks and tests)
}

// syncBatch is one flush and the writes it covers.
type syncBatch struct {
	done    chan struct{}
	err     error
	waiters int // the waits that joined it
}

// syncTicket is a write's place in its file system's group commit,
// taken before the write changes anything.
type syncTicket struct {
	g      *groupSyncer
	failed uint64
}

// begin is called before a write changes any file; wait then reports
// whether everything the write did in between is durable.
func (g *groupSyncer) begin() syncTicket {
	g.mu.Lock()
	defer g.mu.Unlock()
	return syncTicket{g: g, failed: g.failed}
}

// wait returns once a flush that started after the call has returned:
// nil if that flush succeeded and no flush has failed since t was taken.
func (t syncTicket) wait() error {
	g := t.g
	g.mu.Lock()
	if g.next == nil {
		g.next = &syncBatch{done: make(chan struct{})}
	}
	b := g.next
	b.waiters++
	if !g.running {
		g.running = true
		go g.run()
	}
	g.mu.Unlock()
	<-b.done
	if b.err != nil {
		return b.err
	}
	g.mu.Lock()
	failed := g.failed
	g.mu.Unlock()
	if failed != t.failed {
		return errEarlierFlush
	}
	return nil
}

// run flushes batch after batch until no write waits. A batch is taken
// out of next before its flush starts, so a write that joins later is in
// the following batch.
func (g *groupSyncer) run() {
	for {
		g.mu.Lock()
		b := g.next
		g.next = nil
		if b == nil {
			g.running = false
			g.mu.Unlock()
			return
		}
		g.mu.Unlock()
		g.flushes.Add(1)
		g.covered.Add(int64(b.waiters)) // no wait joins b once it left next
		err := g.flush()
		g.mu.Lock()
		if err != nil {
			g.failed++
		}
		b.err = err
		g.mu.Unlock()
		close(b.done)
	}
}
