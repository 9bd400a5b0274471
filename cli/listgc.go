package cli

import (
	"runtime/debug"
	"runtime/metrics"
)

// listingHeapRoom is how much a listing may add to the process's memory
// before the garbage collector runs.
const listingHeapRoom = 256 << 20

// relaxGC turns the garbage collector off for a listing until the
// process's memory has grown by listingHeapRoom (then it collects as the
// memory limit makes it), and returns what restores the settings. A
// listing of 10,000 runs allocates about 30 MiB in a process that ends
// after printing it, and most of what it allocates lives to the end:
// collecting on the way is wasted work (docs/storage.md, "Costs on
// PostgreSQL"). The room is counted from the memory in use now, so that a
// process that already holds much (a test binary running the command in
// process) is not made to collect without pause. GOGC or GOMEMLIMIT in
// the environment are the user's choice and left alone.
func relaxGC() (restore func()) {
	if userTunesGC() {
		return func() {}
	}
	sample := []metrics.Sample{{Name: "/memory/classes/total:bytes"}}
	metrics.Read(sample)
	inUse := int64(sample[0].Value.Uint64())
	limit := debug.SetMemoryLimit(-1)
	percent := debug.SetGCPercent(-1)
	debug.SetMemoryLimit(min(limit, inUse+listingHeapRoom))
	return func() {
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(limit)
	}
}
