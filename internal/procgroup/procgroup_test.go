package procgroup

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCancelKillsGroup: a shell that started a background sleeper is
// killed together with the sleeper when the context ends.
func TestCancelKillsGroup(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	cmd := Command(ctx, "/bin/sh", "-c", "sleep 60 & echo $! > child.pid; wait")
	cmd.Dir = dir
	if err := cmd.Run(); err == nil {
		t.Fatal("a killed command reported success")
	}
	data, err := os.ReadFile(filepath.Join(dir, "child.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	deadline := time.Now().Add(10 * time.Second)
	for {
		stat, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		i := strings.LastIndexByte(string(stat), ')')
		if syscall.Kill(pid, 0) == syscall.ESRCH || (i > 0 && strings.HasPrefix(string(stat[i+1:]), " Z")) {
			return
		}
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("grandchild %d survived", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestNormalExit(t *testing.T) {
	if err := Command(context.Background(), "/bin/sh", "-c", "exit 0").Run(); err != nil {
		t.Fatal(err)
	}
}
