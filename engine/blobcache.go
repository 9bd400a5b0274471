package engine

import "sync"

// blobCache keeps the payloads of internal events (spec snapshots,
// finished steps' states, cold index chunks, patches) this process has
// read, bounded by bytes: they never change, so a cached payload is
// always right, and a process continuing a run reads each once.
type blobCache struct {
	mu    sync.Mutex
	limit int
	size  int
	byKey map[blobKey][]byte
	order []blobKey // insertion order, for eviction
	// parsed holds decoded forms of cached payloads that callers share
	// read-only (a fanout's array, its settled items); evicted with the
	// payload, and counted in size by decodedBytes.
	parsed map[blobKey]parsedBlob
}

// parsedBlob is a decoded form and the estimate of its heap.
type parsedBlob struct {
	v    any
	heap int
}

type blobKey struct {
	run string
	seq int64
	// result marks the detail.result of a result event a record refers
	// to (see record.go), not an internal event's payload.
	result bool
}

// defaultBlobCacheBytes bounds the blob cache; maxCachedBlob is the largest
// payload it keeps.
const (
	defaultBlobCacheBytes = 64 << 20
	maxCachedBlob         = 1 << 20
)

func (c *blobCache) get(run string, seq int64) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.byKey[blobKey{run: run, seq: seq}]
	return b, ok
}

func (c *blobCache) put(run string, seq int64, b []byte) {
	c.putKey(blobKey{run: run, seq: seq}, b)
}

func (c *blobCache) putKey(k blobKey, b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byKey == nil {
		c.byKey = map[blobKey][]byte{}
	}
	if c.limit == 0 {
		c.limit = defaultBlobCacheBytes
	}
	if _, ok := c.byKey[k]; ok || len(b) > min(c.limit/4, maxCachedBlob) {
		return // cached already, or too large to keep (a big patch is read once)
	}
	c.makeRoom(len(b))
	c.byKey[k] = b
	c.order = append(c.order, k)
	c.size += len(b)
}

// makeRoom evicts the oldest entries until n more bytes fit.
func (c *blobCache) makeRoom(n int) {
	for c.size+n > c.limit && len(c.order) > 0 {
		old := c.order[0]
		c.order = c.order[1:]
		c.size -= c.entrySize(old)
		delete(c.byKey, old)
		delete(c.parsed, old)
	}
}

// entrySize is what an entry counts: its payload, and its decoded form
// when it has one.
func (c *blobCache) entrySize(k blobKey) int {
	return len(c.byKey[k]) + c.parsed[k].heap
}

// getParsed returns the decoded form of a cached payload, and the
// estimate of its heap.
func (c *blobCache) getParsed(run string, seq int64) (any, int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.parsed[blobKey{run: run, seq: seq}]
	return p.v, p.heap, ok
}

// putParsed keeps the decoded form of a payload still in the cache.
func (c *blobCache) putParsed(run string, seq int64, v any, heap int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := blobKey{run: run, seq: seq}
	_, ok := c.byKey[k]
	if _, parsed := c.parsed[k]; !ok || parsed {
		return
	}
	if heap > c.limit/4 {
		return // the payload stays; its decoded form is the caller's alone
	}
	c.makeRoom(heap)
	if _, ok := c.byKey[k]; !ok {
		return // evicted to make the room: the oldest entry
	}
	if c.parsed == nil {
		c.parsed = map[blobKey]parsedBlob{}
	}
	c.parsed[k] = parsedBlob{v: v, heap: heap}
	c.size += heap
}

// getResult returns the cached detail.result of a result event.
func (c *blobCache) getResult(run string, seq int64) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.byKey[blobKey{run: run, seq: seq, result: true}]
	return b, ok
}

// putResult keeps the detail.result of a result event.
func (c *blobCache) putResult(run string, seq int64, b []byte) {
	c.putKey(blobKey{run: run, seq: seq, result: true}, b)
}
