package cli

import (
	"math"
	"runtime/debug"
	"testing"
)

// gcSettings reads the collector's percent and memory limit without
// changing them.
func gcSettings() (percent int, limit int64) {
	percent = debug.SetGCPercent(100)
	debug.SetGCPercent(percent)
	return percent, debug.SetMemoryLimit(-1)
}

// relaxGC turns the collector off under a finite limit for the listing,
// puts both settings back afterwards, and leaves them alone when the
// environment sets GOGC or GOMEMLIMIT.
func TestRelaxGC(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	percent, limit := gcSettings()
	restore := relaxGC()
	p, l := gcSettings()
	if p != -1 || l >= math.MaxInt64 || l < listingHeapRoom {
		t.Errorf("during a listing: GC percent %d, memory limit %d; want -1 and a finite limit of at least %d", p, l, listingHeapRoom)
	}
	restore()
	if p, l := gcSettings(); p != percent || l != limit {
		t.Errorf("after: GC percent %d, memory limit %d; want %d, %d back", p, l, percent, limit)
	}
	for _, env := range []string{"GOGC", "GOMEMLIMIT"} {
		t.Run(env, func(t *testing.T) {
			t.Setenv(env, "200")
			restore := relaxGC()
			defer restore()
			if p, l := gcSettings(); p != percent || l != limit {
				t.Errorf("with %s set: GC percent %d, memory limit %d; want them untouched (%d, %d)", env, p, l, percent, limit)
			}
		})
	}
}
