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
// live, so a server holding a large plan keeps the default proportion and
// a memory at most serverHeapRoom above the default's. GOGC or GOMEMLIMIT
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
		base := int(sample[0].Value.Uint64())
		floors.active = &gcFloor{base: base, percent: base}
		floors.active.arm()
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
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindUint64 {
		return
	}
	t.set(heapFloorPercent(sample[0].Value.Uint64(), serverHeapRoom, t.base))
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
// scales with the percent (runtime/mgcpacer.go, defaultHeapMinimum).
const runtimeHeapMinimum = 4 << 20

// heapFloorPercent is the GC percent that puts the heap goal room bytes
// above live, never below base. The runtime's goal is the larger of
// live*(1+percent/100) and its minimum, runtimeHeapMinimum*percent/100:
// both grow with the percent, so the goal is live+room at the smaller of
// the percents at which either one reaches it. For a small heap that is
// the minimum's (a percent of room*100/live would raise the minimum
// far above the room).
func heapFloorPercent(live, room uint64, base int) int {
	if base < 0 {
		return base // collection is off: the user's choice
	}
	byGrowth := uint64(math.MaxInt32)
	if live > 0 {
		byGrowth = room * 100 / live
	}
	byMinimum := (live + room) * 100 / runtimeHeapMinimum
	return max(base, int(min(byGrowth, byMinimum, math.MaxInt32)))
}
