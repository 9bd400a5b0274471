package cputime

import (
	"crypto/sha256"
	"testing"
	"time"
)

// TestSelfCountsWork burns CPU in user space and checks that Self saw it:
// at least most of the wall time spent spinning, and never time running
// backwards.
func TestSelfCountsWork(t *testing.T) {
	before, err := Self()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	sum := sha256.Sum256(nil)
	for time.Since(start) < 200*time.Millisecond {
		for i := 0; i < 1000; i++ {
			sum = sha256.Sum256(sum[:])
		}
	}
	spun := time.Since(start)
	after, err := Self()
	if err != nil {
		t.Fatal(err)
	}
	used := after.Sub(before)
	if used.User < 0 || used.System < 0 {
		t.Fatalf("CPU time ran backwards: %+v then %+v", before, after)
	}
	// A busy machine may take the CPU away from the spinning goroutine for
	// part of the time; a reading of under a quarter means Self reads
	// something else than this process's time.
	if used.User < spun/4 {
		t.Errorf("spun %v in user space, Self counted %v user, %v system", spun, used.User, used.System)
	}
	if got := used.Total(); got != used.User+used.System {
		t.Errorf("Total %v, want %v", got, used.User+used.System)
	}
}
