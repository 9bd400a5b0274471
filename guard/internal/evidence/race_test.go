package evidence

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
)

// TestSwapRaceLeaksNothing: while one goroutine swaps a workspace
// directory back and forth with a symlink to a directory outside the
// workspace, a fixed number of evaluations of server_file_contains and
// server_file_exists on a path through it must never see the outside
// file: zero leaks, not "few".
func TestSwapRaceLeaksNothing(t *testing.T) {
	const iterations = 2000
	tmp := t.TempDir()
	root := filepath.Join(tmp, "ws")
	outside := filepath.Join(tmp, "secret")
	write(t, filepath.Join(root, "d", "f.txt"), "inside")
	write(t, filepath.Join(outside, "f.txt"), "SECRET")
	write(t, filepath.Join(outside, "only-outside.txt"), "SECRET")
	d, parked := filepath.Join(root, "d"), filepath.Join(root, "d.parked")

	var stop atomic.Bool
	var wg sync.WaitGroup
	var swaps atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		// Absolute and relative links to the outside, in turn.
		targets := []string{outside, filepath.Join("..", "secret")}
		for i := 0; !stop.Load(); i++ {
			// Directory out, symlink to the outside in, and back.
			if os.Rename(d, parked) != nil {
				continue
			}
			if os.Symlink(targets[i%2], d) == nil {
				os.Remove(d)
			}
			os.Rename(parked, d)
			swaps.Add(1)
		}
	}()
	env := Env{WorkspaceRoot: root}
	contains := mustParse(t, `server_file_contains('d/f.txt', 'SECRET')`)
	exists := mustParse(t, `server_file_exists('d/only-outside.txt')`)
	leaks := 0
	for range iterations {
		if r := Evaluate(context.Background(), contains, env); r.Met {
			leaks++
		}
		if r := Evaluate(context.Background(), exists, env); r.Met {
			leaks++
		}
	}
	stop.Store(true)
	wg.Wait()
	t.Logf("%d evaluations, %d swaps", 2*iterations, swaps.Load())
	if leaks != 0 {
		t.Fatalf("%d of %d evaluations saw the file outside the workspace", leaks, 2*iterations)
	}
}
