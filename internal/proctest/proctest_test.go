package proctest

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestRunningFollowsAChild starts a real child (this test binary, asked to
// sleep), sees it run, kills it and sees it gone: first as a zombie not yet
// reaped, then reaped.
func TestRunningFollowsAChild(t *testing.T) {
	if os.Getenv("PROCTEST_SLEEP") == "1" {
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestRunningFollowsAChild$")
	cmd.Env = append(os.Environ(), "PROCTEST_SLEEP=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if !Running(pid) {
		t.Fatalf("child %d: not running just after its start", pid)
	}
	Kill(pid)
	if !WaitGone(pid, 10*time.Second) {
		t.Fatalf("child %d: still running after Kill (unreaped)", pid)
	}
	_ = cmd.Wait()
	if Running(pid) {
		t.Fatalf("child %d: running after it was reaped", pid)
	}
	if !Running(os.Getpid()) {
		t.Fatal("this process does not run")
	}
}

// TestMkfifo makes a named pipe where the platform has them, and says
// plainly where it does not.
func TestMkfifo(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p")
	err := Mkfifo(path)
	if errors.Is(err, errors.ErrUnsupported) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("%s: mode %v, want a named pipe", path, fi.Mode())
	}
}
