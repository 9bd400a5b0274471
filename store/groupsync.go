package store

import (
	"sync"
)

// groupSyncer shares one file-system-wide flush (syncfs(2), see
// groupsync_linux.go) between the updates that are ready at the same time
// (docs/storage.md, "Group commit"). At most one flush is in flight; a
// caller that arrives while one is running joins the next, which starts
// only after the running one has returned. So every caller is covered by
// a flush that started after its data was written, and learns that
// flush's own result: an error fails every caller of the batch.
type groupSyncer struct {
	flush func() error

	mu      sync.Mutex
	running bool
	next    *syncBatch // the batch callers join now; it has not started
}

// syncBatch is one flush and the callers it covers.
type syncBatch struct {
	done chan struct{}
	err  error
}

// Sync returns once a flush that started after the call began has
// returned, with that flush's error.
func (g *groupSyncer) Sync() error {
	g.mu.Lock()
	if g.next == nil {
		g.next = &syncBatch{done: make(chan struct{})}
	}
	b := g.next
	if !g.running {
		g.running = true
		go g.run()
	}
	g.mu.Unlock()
	<-b.done
	return b.err
}

// run flushes batch after batch until no caller waits.
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
		b.err = g.flush()
		close(b.done)
	}
}
