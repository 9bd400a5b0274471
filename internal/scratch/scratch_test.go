package scratch

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// deadPid is the pid of a process that has exited.
func deadPid(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// Sweep removes what dead processes left and nothing else: not this
// process's names, not a live process's, not names of another shape.
func TestSweep(t *testing.T) {
	dir := t.TempDir()
	dead := deadPid(t)
	mk := func(name string, isDir bool) string {
		p := filepath.Join(dir, name)
		var err error
		if isDir {
			err = os.MkdirAll(filepath.Join(p, "sub"), 0o700)
		} else {
			err = os.WriteFile(p, []byte("x"), 0o600)
		}
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	gone := []string{
		mk(fmt.Sprintf("stratum-snapshot-%d-123", dead), true),
		mk(fmt.Sprintf("stratum-index-%d-456", dead), false),
	}
	kept := []string{
		mk(fmt.Sprintf("stratum-snapshot-%d-1", os.Getpid()), true),
		mk(fmt.Sprintf("stratum-index-%d-2", os.Getppid()), false),
		mk("stratum-snapshot-abc", true),
		mk(fmt.Sprintf("other-%d-1", dead), false),
	}
	n, err := Sweep(dir)
	if err != nil || n != len(gone) {
		t.Fatalf("Sweep = %d, %v; want %d", n, err, len(gone))
	}
	for _, p := range gone {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s survived its process", filepath.Base(p))
		}
	}
	for _, p := range kept {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s was removed: %v", filepath.Base(p), err)
		}
	}
}

// Dir and File name what they make after this process, private to its
// user.
func TestNames(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	d, err := Dir("snapshot")
	if err != nil {
		t.Fatal(err)
	}
	f, err := File("index")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	for _, p := range []string{d, f.Name()} {
		m := namePattern.FindStringSubmatch(filepath.Base(p))
		if m == nil || m[2] != fmt.Sprint(os.Getpid()) {
			t.Errorf("%s: not named after this process", p)
		}
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s: mode %v, %v", p, fi.Mode(), err)
		}
	}
}
