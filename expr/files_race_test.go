//go:build unix

package expr

import (
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
)

// raceIterations is how many lookups TestFileJailSwapRace makes while a
// directory of the workspace is swapped, back and forth, for a symlink to
// a directory outside it (the check resolves a path and then opens it: a
// jail that opens the resolved path by name reads outside in about one
// lookup in a hundred).
const raceIterations = 5000

func TestFileJailSwapRace(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "ws")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(root, "d"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(path, content string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The same name inside and outside, and a name that exists only
	// outside: a leak shows as the outside text, or as the outside-only
	// file existing.
	write(filepath.Join(root, "d", "f.txt"), "inside")
	write(filepath.Join(outside, "f.txt"), "OUTSIDE")
	write(filepath.Join(outside, "only-outside.txt"), "OUTSIDE")
	// Staged links, one relative and one absolute, renamed over "d" in
	// turn (a rename is atomic; the directory itself waits at "d.real").
	links := []string{filepath.Join(root, "link.rel"), filepath.Join(root, "link.abs")}
	if err := os.Symlink(filepath.Join("..", "outside"), links[0]); err != nil {
		t.Skipf("symlinks unavailable: %v", err)
	}
	if err := os.Symlink(outside, links[1]); err != nil {
		t.Fatal(err)
	}

	d, real := filepath.Join(root, "d"), filepath.Join(root, "d.real")
	var stop atomic.Bool
	var swaps atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; !stop.Load(); i++ {
			link := links[i%2]
			if os.Rename(d, real) != nil || os.Rename(link, d) != nil {
				t.Error("swap in failed")
				return
			}
			if os.Rename(d, link) != nil || os.Rename(real, d) != nil {
				t.Error("swap back failed")
				return
			}
			swaps.Add(1)
		}
	})

	var leaks, inside, refused, absent int
	for range raceIterations {
		if ok, err := FileContains(root, "d/f.txt", "OUTSIDE"); ok {
			leaks++
		} else if err != nil {
			refused++
		}
		if ok, err := FileContains(root, "d/f.txt", "inside"); ok {
			inside++
		} else if err == nil {
			absent++
		}
		if ok, _ := FileExists(root, "d/only-outside.txt"); ok {
			leaks++
		}
		if ok, _ := FileContains(root, "d/only-outside.txt", ""); ok {
			leaks++
		}
	}
	stop.Store(true)
	wg.Wait()
	t.Logf("%d lookups, %d swaps: %d read the inside file, %d found nothing, %d refused, %d leaks",
		4*raceIterations, swaps.Load(), inside, absent, refused, leaks)
	if leaks != 0 {
		t.Errorf("%d lookups out of %d read or saw a file outside the workspace", leaks, 4*raceIterations)
	}
}
