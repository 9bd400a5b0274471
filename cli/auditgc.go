package cli

import (
	"os"
	"runtime/debug"
)

// auditGCPercent is the collector's headroom while an audit is written.
const auditGCPercent = 50

// tightenGC has the garbage collector keep an audit's heap within 50% of
// what is live instead of 100%, and returns what restores the setting.
// An audit of a long run holds the records kept between its two passes
// and the pages read ahead, and the default headroom doubled that: a
// 10,000-step audit peaks at about 36 MiB with the default, 32 MiB with
// this, for some 25 ms more of collection, a margin for a busy machine
// where the marking falls behind (docs/cli.md, "stratum audit"). A
// proportional headroom, not a memory limit, so that the audit of a run
// too large for any fixed limit does not collect without pause. GOGC or
// GOMEMLIMIT in the environment are the user's choice and left alone.
func tightenGC() (restore func()) {
	if userTunesGC() {
		return func() {}
	}
	percent := debug.SetGCPercent(auditGCPercent)
	return func() { debug.SetGCPercent(percent) }
}

// userTunesGC reports whether GOGC or GOMEMLIMIT is set: the collector's
// settings are then the user's, and no command changes them.
func userTunesGC() bool {
	return os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != ""
}
