package store

import (
	"maps"
	"sync"
	"sync/atomic"
)

// A run's events have a handful of distinct types, read again for every
// event: the types read are interned, so that reading an event does not
// allocate its type. The table is the process's, bounded (a log with
// more distinct types only costs an allocation per event beyond the
// bound) and never changed in place: readers load it without a lock.

// maxInternedTypes bounds the table of interned event types.
const maxInternedTypes = 256

var (
	internedTypes = newTypeTable(map[string]string{EventRepair: EventRepair})
	internMu      sync.Mutex // serializes additions
)

func newTypeTable(m map[string]string) *atomic.Pointer[map[string]string] {
	var p atomic.Pointer[map[string]string]
	p.Store(&m)
	return &p
}

// eventType returns b as a string, the same string for the same bytes
// while the table has room.
func eventType(b []byte) string {
	if s, ok := (*internedTypes.Load())[string(b)]; ok {
		return s
	}
	s := string(b)
	internMu.Lock()
	defer internMu.Unlock()
	old := *internedTypes.Load()
	if t, ok := old[s]; ok {
		return t
	}
	if len(old) >= maxInternedTypes {
		return s
	}
	next := maps.Clone(old)
	next[s] = s
	internedTypes.Store(&next)
	return s
}
