package cli

import (
	"runtime"
	"runtime/metrics"
	"testing"
	"time"
)

func TestHeapFloorPercent(t *testing.T) {
	const room = 16 << 20
	for _, c := range []struct {
		name       string
		live, scan uint64
		base       int
		want       int
	}{
		// Small heaps: the runtime's minimum goal (4 MiB at 100%) sets it.
		{"nothing live", 0, 0, 100, 400},
		{"1 MiB live", 1 << 20, 0, 100, 425},
		{"4 MiB live", 4 << 20, 0, 100, 400},
		// Larger heaps: growth sets it (live + (live+scan)*p/100 = live+room).
		{"8 MiB live", 8 << 20, 0, 100, 200},
		{"8 MiB live and 8 MiB of stacks and globals", 8 << 20, 8 << 20, 100, 100},
		{"6 MiB live and 2 MiB scanned", 6 << 20, 2 << 20, 100, 200},
		{"a heap of the room", 16 << 20, 0, 100, 100},
		{"a heap the room is less than: the base", 64 << 20, 0, 100, 100},
		{"a larger base stands", 1 << 30, 0, 400, 400},
		{"collection off stays off", 1 << 20, 0, -1, -1},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := heapFloorPercent(c.live, c.scan, room, c.base); got != c.want {
				t.Errorf("heapFloorPercent(%d, %d, %d, %d) = %d, want %d", c.live, c.scan, room, c.base, got, c.want)
			}
		})
	}
}

// gcPercent is the percent in force, as the runtime reports it.
func gcPercent() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64())
}

// TestFloorGCFollowsTheLiveHeap: after a collection the percent gives
// the heap serverHeapRoom above what it found live (this test binary's
// heap is far below the room), and restore puts the percent back and
// stops following.
func TestFloorGCFollowsTheLiveHeap(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	before := gcPercent()
	restore := floorGC()
	collectUntil(t, func() bool { return gcPercent() != before })
	// Another collection, under the percent set from the last one: its
	// goal is the room above what it found live. What is live moves a
	// little between collections, so a few tries are allowed.
	var got, want int
	var liveBytes, goalBytes uint64
	for range 10 {
		runtime.GC()
		time.Sleep(2 * time.Millisecond) // the finalizer's adjustment
		m := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/scan/stack:bytes"}, {Name: "/gc/scan/globals:bytes"}, {Name: "/gc/heap/goal:bytes"}}
		metrics.Read(m)
		got, liveBytes, goalBytes = gcPercent(), m[0].Value.Uint64(), m[3].Value.Uint64()
		want = heapFloorPercent(liveBytes, m[1].Value.Uint64()+m[2].Value.Uint64(), serverHeapRoom, before)
		// set leaves a percent within a tenth of the wanted one.
		percentOK := abs(want-got)*10 <= got
		goalOK := goalBytes >= liveBytes+serverHeapRoom*8/10 && goalBytes <= liveBytes+serverHeapRoom*12/10
		if percentOK && goalOK {
			break
		}
	}
	if abs(want-got)*10 > got {
		t.Errorf("after collections the percent is %d, want about %d (live %d bytes, base %d)", got, want, liveBytes, before)
	}
	if goalBytes < liveBytes+serverHeapRoom*8/10 || goalBytes > liveBytes+serverHeapRoom*12/10 {
		t.Errorf("the heap goal is %d bytes with %d live, want about %d above", goalBytes, liveBytes, serverHeapRoom)
	}
	restore()
	if got := gcPercent(); got != before {
		t.Errorf("restore left the percent at %d, want %d", got, before)
	}
	for range 3 {
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	if got := gcPercent(); got != before {
		t.Errorf("after restore a collection set the percent to %d, want it left at %d", got, before)
	}
}

// TestFloorGCLeavesTheUsersSetting: GOGC or GOMEMLIMIT in the
// environment are left to rule.
func TestFloorGCLeavesTheUsersSetting(t *testing.T) {
	for _, env := range []string{"GOGC", "GOMEMLIMIT"} {
		t.Run(env, func(t *testing.T) {
			t.Setenv("GOGC", "")
			t.Setenv("GOMEMLIMIT", "")
			t.Setenv(env, map[string]string{"GOGC": "100", "GOMEMLIMIT": "1GiB"}[env])
			before := gcPercent()
			restore := floorGC()
			defer restore()
			for range 3 {
				runtime.GC()
				time.Sleep(time.Millisecond)
			}
			if got := gcPercent(); got != before {
				t.Errorf("with %s set the percent became %d, want %d left alone", env, got, before)
			}
		})
	}
}

// TestFloorGCSharedByServers: two servers in one process share the
// floor; it stays until the last one restores, which puts back the
// percent found by the first.
func TestFloorGCSharedByServers(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	before := gcPercent()
	first, second := floorGC(), floorGC()
	collectUntil(t, func() bool { return gcPercent() != before })
	first()
	first() // restoring twice counts once
	for range 3 {
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	if gcPercent() == before {
		t.Error("the floor ended while a second server still ran")
	}
	second()
	if got := gcPercent(); got != before {
		t.Errorf("after both restored the percent is %d, want %d", got, before)
	}
}

// TestFloorGCLeavesCollectionOff: started while a listing has turned
// collection off in the same process, the floor does nothing, so the
// listing's restore is the one that counts.
func TestFloorGCLeavesCollectionOff(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	before := gcPercent()
	restoreList := relaxGC()
	restoreServe := floorGC()
	runtime.GC()
	time.Sleep(time.Millisecond)
	restoreList() // the listing ends first
	restoreServe()
	if got := gcPercent(); got != before {
		t.Errorf("after both restored the percent is %d, want %d", got, before)
	}
}

// collectUntil collects until cond holds (the floor's finalizer runs on
// the finalizer goroutine after a collection), failing after a while.
func collectUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("the floor never set the percent")
		}
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
}

func abs(n int) int { return max(n, -n) }
