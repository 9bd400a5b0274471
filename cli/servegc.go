package cli

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// serverHeapRoom is the least room a serving process's collector leaves
// above what is live before it collects again.
const serverHeapRoom = 16 << 20

// floorGC keeps the garbage collector of a serving process (stratum mcp,
// stratum serve) from collecting before the heap has grown by
// serverHeapRoom, or by the usual 100% of what is live when that is more,
// and returns what restores the setting. A server's live heap is small
// (about 1 MiB with one run), so the default goal is the runtime's
// minimum of 4 MiB, and the 130 KiB a step_done allocates (half of it the
// SDK's decoding) brought a collection every 13 calls, some 3 ms of CPU
// each: a sixth of the server's CPU per call (docs/decisions/0213). The
// percent is set again after every collection, from the heap it found
// live (with the stacks and globals the collector scanned), so a server
// holding a large plan keeps the default proportion, and a small one
// collects at serverHeapRoom above what is live. GOGC or GOMEMLIMIT
// in the environment are the user's choice and left alone.
func floorGC() (restore func()) {
	if userTunesGC() {
		return func() {}
	}
	floors.mu.Lock()
	defer floors.mu.Unlock()
	if floors.users == 0 {
		sample := []metrics.Sample{{Name: "/gc/gogc:percent"}}
		metrics.Read(sample)
		base := int(sample[0].Value.Uint64()) // -1 (off) wraps back
		if base < 0 {
			// Collection is off (a listing's relaxGC in the same
			// process): that setting's owner restores it.
			return func() {}
		}
		t := &gcFloor{base: base, percent: base}
		t.mu.Lock()
		t.adjust() // from the last collection, if there was one
		t.mu.Unlock()
		t.arm()
		floors.active = t
	}
	floors.users++
	return sync.OnceFunc(func() {
		floors.mu.Lock()
		defer floors.mu.Unlock()
		if floors.users--; floors.users == 0 {
			floors.active.stop()
			floors.active = nil
		}
	})
}

// floors is the one gcFloor of the process, shared by the servers that
// run in it at once (tests run several in process): the first starts it,
// the last restores the percent it found.
var floors struct {
	mu     sync.Mutex
	users  int
	active *gcFloor
}

// gcFloor re-reads the live heap after each collection (through a
// sentinel whose finalizer runs once per cycle) and sets the percent.
type gcFloor struct {
	base int // the percent before floorGC, restored by stop

	mu      sync.Mutex
	stopped bool
	percent int
}

// gcSentinel is allocated to become garbage at once; its finalizer runs
// after the collection that found it. It holds a pointer and is larger
// than the tiny allocator's 16 bytes, so it is never batched with other
// objects whose lifetime would delay it.
type gcSentinel struct {
	_ *int
	_ [32]byte
}

func (t *gcFloor) arm() {
	runtime.SetFinalizer(&gcSentinel{}, func(*gcSentinel) {
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.stopped {
			return
		}
		t.adjust()
		t.arm()
	})
}

// adjust sets the percent for the heap the last collection found live
// (under t.mu).
func (t *gcFloor) adjust() {
	samples := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/scan/stack:bytes"}, {Name: "/gc/scan/globals:bytes"}}
	metrics.Read(samples)
	var v [3]uint64
	for i, s := range samples {
		if s.Value.Kind() != metrics.KindUint64 {
			return
		}
		v[i] = s.Value.Uint64()
	}
	if v[0] == 0 {
		return // no collection yet
	}
	t.set(heapFloorPercent(v[0], v[1]+v[2], serverHeapRoom, t.base))
}

// set applies percent unless it is within a tenth of the one in force
// (setting it takes the heap lock; a small drift is not worth it).
func (t *gcFloor) set(percent int) {
	if d := percent - t.percent; d*10 > -t.percent && d*10 < t.percent {
		return
	}
	t.percent = percent
	debug.SetGCPercent(percent)
}

func (t *gcFloor) stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stopped = true
	debug.SetGCPercent(t.base)
}

// runtimeHeapMinimum is the runtime's least heap goal at GOGC=100; it
// scales with the percent (runtime/mgcpacer.go, defaultHeapMinimum; 512
// KiB only in a build with GOEXPERIMENT=heapminimum512kib, which
// Stratum's are not).
const runtimeHeapMinimum = 4 << 20

// heapFloorPercent is the GC percent that puts the heap goal room bytes
// above live, never below base. The runtime's goal is the larger of
// live + (live+scan)*percent/100, where scan is the stacks and globals
// the last cycle scanned, and its minimum, runtimeHeapMinimum*percent/100
// (runtime/mgcpacer.go): both grow with the percent, so the goal is
// live+room at the smaller of the percents at which either reaches it.
// For a small heap that is the minimum's (a percent of room*100/live
// would raise the minimum far above the room).
func heapFloorPercent(live, scan, room uint64, base int) int {
	if base < 0 {
		return base // collection is off: the user's choice
	}
	byGrowth := uint64(math.MaxInt32)
	if live+scan > 0 {
		byGrowth = room * 100 / (live + scan)
	}
	byMinimum := (live + room) * 100 / runtimeHeapMinimum
	return max(base, int(min(byGrowth, byMinimum, math.MaxInt32)))
}
