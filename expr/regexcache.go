package expr

import "sync"

// patternCacheSize and patternCacheStates bound the cache of patterns that
// are not literals: at most this many patterns, of at most this many
// states in total (a 4,096-state pattern compiles to about half a
// megabyte).
const (
	patternCacheSize   = 64
	patternCacheStates = 1 << 16
)

// dynamicPatterns keeps the compiled form of patterns computed at
// evaluation time (matches(x, input.pattern)): compiling a large pattern
// takes milliseconds, and the ensures of a step, a retried attempt or the
// items of a fanout evaluate the same ones again and again. Literal
// patterns are compiled once in the syntax tree and never enter it.
var dynamicPatterns = &patternLRU{entries: map[string]*lruEntry{}}

type patternLRU struct {
	mu         sync.Mutex
	entries    map[string]*lruEntry
	head, tail *lruEntry // most recently used first
	states     int       // summed over the entries
}

type lruEntry struct {
	pc         *patternCache
	states     int
	prev, next *lruEntry
}

// lookup returns the compiled pattern, or nil when it is not cached.
func (c *patternLRU) lookup(pattern string) *patternCache {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[pattern]
	if !ok {
		return nil
	}
	c.unlink(e)
	c.pushFront(e)
	return e.pc
}

// add keeps pc, already compiled (or refused), evicting the least recently
// used entries beyond the bounds.
func (c *patternLRU) add(pc *patternCache) {
	states := 1
	if pc.re != nil {
		states = max(pc.re.States, 1)
	}
	if states > patternCacheStates {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[pc.pattern]; ok {
		return // another evaluation compiled it at the same time
	}
	e := &lruEntry{pc: pc, states: states}
	c.entries[pc.pattern] = e
	c.pushFront(e)
	c.states += states
	for len(c.entries) > patternCacheSize || c.states > patternCacheStates {
		old := c.tail
		c.unlink(old)
		delete(c.entries, old.pc.pattern)
		c.states -= old.states
	}
}

func (c *patternLRU) pushFront(e *lruEntry) {
	e.prev, e.next = nil, c.head
	if c.head != nil {
		c.head.prev = e
	}
	c.head = e
	if c.tail == nil {
		c.tail = e
	}
}

func (c *patternLRU) unlink(e *lruEntry) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		c.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		c.tail = e.prev
	}
	e.prev, e.next = nil, nil
}
