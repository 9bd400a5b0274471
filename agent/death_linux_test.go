package agent

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

const parentEnv = "STRATUM_AGENT_TEST_PARENT_DIR"

// TestHelperAgentParent is not a test: run by TestAgentDiesWithItsParent
// as a separate process, it runs one codex attempt (the hanging fake) and
// writes the agent's process record, then waits to be killed.
func TestHelperAgentParent(t *testing.T) {
	dir := os.Getenv(parentEnv)
	if dir == "" {
		t.Skip("helper process of TestAgentDiesWithItsParent")
	}
	req := sampleRequest()
	req.Options.Started = func(rec ProcessRecord) {
		b, _ := json.Marshal(rec)
		os.WriteFile(filepath.Join(dir, "record.tmp"), b, 0o600)
		os.Rename(filepath.Join(dir, "record.tmp"), filepath.Join(dir, "record.json"))
	}
	res, err := (&Codex{}).Run(context.Background(), req)
	t.Fatalf("the attempt ended while its parent lived: %+v %v", res, err)
}

// A SIGKILLed driver leaves no agent behind: not the agent, not what it
// started in its group, not the temporary directory made for it.
func TestAgentDiesWithItsParent(t *testing.T) {
	f := installFake(t, "codex", "fake-codex.sh")
	t.Setenv("FAKE_MODE", "hang")
	dir := t.TempDir()
	parent := exec.Command(os.Args[0], "-test.run=^TestHelperAgentParent$")
	parent.Env = append(os.Environ(), parentEnv+"="+dir)
	var out strings.Builder
	parent.Stdout, parent.Stderr = &out, &out
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { parent.Wait(); close(exited) }()
	defer func() { parent.Process.Kill(); <-exited }()

	waitForFile(t, f.path("pid")) // the fake is at work, its sleep in the background
	var rec ProcessRecord
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile(filepath.Join(dir, "record.json"))
		if err == nil && json.Unmarshal(b, &rec) == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no process record; parent said:\n%s", out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	tmp := filepath.Dir(argAfter(f.args(t), "--output-last-message"))
	if _, err := os.Stat(tmp); err != nil {
		t.Fatalf("temporary directory: %v", err)
	}

	if err := parent.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited

	assertDead(t, f.path("pid")) // the fake's own child
	assertPidDead(t, rec.Pid)    // the agent (looked at, not signalled)
	deadline = time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(tmp); errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the temporary directory survived its SIGKILLed parent")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
