package cli

import (
	"os"
	"runtime/debug"
)

// listingHeapLimit is the heap up to which a listing runs without the
// garbage collector.
const listingHeapLimit = 256 << 20

// relaxGC turns the garbage collector off for a listing, up to a heap of
// listingHeapLimit (then it collects as the memory limit makes it), and
// returns what restores the settings. A listing of 10,000 runs allocates
// about 30 MiB in a process that ends after printing it, and most of what
// it allocates lives to the end: collecting on the way is wasted work
// (docs/storage.md, "Costs on PostgreSQL"). GOGC or GOMEMLIMIT in the environment are
// the user's choice and left alone.
func relaxGC() (restore func()) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	limit := debug.SetMemoryLimit(-1)
	percent := debug.SetGCPercent(-1)
	debug.SetMemoryLimit(min(limit, listingHeapLimit))
	return func() {
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(limit)
	}
}
