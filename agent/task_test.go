//go:build unix

package agent

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestClaudeRunTask(t *testing.T) {
	f := installFake(t, "claude", "fake-claude.sh")
	t.Setenv("FAKE_RESPONSE", f.file(t, "response.json", claudeSuccess))
	var lines []string
	dir := t.TempDir()
	res, err := (&Claude{}).RunTask(context.Background(), Task{Prompt: "Review the diff in plain words.", Workdir: dir,
		Options: Options{Model: "sonnet", Progress: func(l string) { lines = append(lines, l) }}})
	if err != nil {
		t.Fatal(err)
	}
	// The prompt goes as it is; the final message comes back as text.
	if args := f.args(t); args[1] != "Review the diff in plain words." || argAfter(args, "--model") != "sonnet" {
		t.Errorf("args %q", args)
	}
	if res.Text != `{"summary": "ok", "confidence": 0.9}` || res.Failure != "" || res.ExitCode != 0 || res.Usage.Tokens != 3250 {
		t.Errorf("result %+v", res)
	}
	want := []string{
		"claude: session started (model claude-sonnet-4-5)",
		"claude: Read /work/README.md",
		`claude: {"summary": "ok", "confidence": 0.9}`,
		"claude: finished after 2 turns",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("progress\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}

	// A failed run is a result with its failure, exit code and stderr.
	t.Setenv("FAKE_RESPONSE", f.file(t, "response.json", `{"type":"result","subtype":"error_max_turns","is_error":true,"num_turns":3}`))
	t.Setenv("FAKE_EXIT", "1")
	t.Setenv("FAKE_STDERR", "giving up")
	res, err = (&Claude{}).RunTask(context.Background(), Task{Prompt: "p"})
	if err != nil || res.Failure != "claude reported an error (error_max_turns)" || res.ExitCode != 1 || res.Stderr != "giving up" {
		t.Errorf("result %+v, err %v", res, err)
	}
}

func TestCodexRunTask(t *testing.T) {
	f := installFake(t, "codex", "fake-codex.sh")
	t.Setenv("FAKE_EVENTS", f.file(t, "events.jsonl", codexEventsOK))
	t.Setenv("FAKE_STDERR", "codex log line")
	var lines []string
	res, err := (&Codex{}).RunTask(context.Background(), Task{Prompt: "Say hello.",
		Options: Options{Sandbox: SandboxWorkspaceWrite, Progress: func(l string) { lines = append(lines, l) }}})
	if err != nil {
		t.Fatal(err)
	}
	if args := f.args(t); args[len(args)-1] != "Say hello." || argAfter(args, "--sandbox") != SandboxWorkspaceWrite {
		t.Errorf("args %q", args)
	}
	if res.Text != `{"summary": "from the stream"}` || res.Failure != "" || res.Stderr != "codex log line" || res.Usage.Tokens != 24885 {
		t.Errorf("result %+v", res)
	}
	want := []string{
		"codex: session 0199a213-81c0-7800-8aa1-bbab2a035a53 started",
		"codex: turn started",
		"codex: thinking: **Reading README**",
		"codex: running bash -lc cat README.md",
		"codex: ran bash -lc cat README.md (exit 0)",
		`codex: {"summary": "from the stream"}`,
		"codex: turn completed (24763 input, 122 output tokens)",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("progress\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

// A detached task runs in the background; its record lets another
// process stop it, and only it.
func TestStartTaskAndKill(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("process records need /proc")
	}
	f := installFake(t, "codex", "fake-codex.sh")
	t.Setenv("FAKE_MODE", "hang")
	d, err := StartTask(context.Background(), &Codex{}, Task{Prompt: "Work for a long time."})
	if err != nil {
		t.Fatal(err)
	}
	rec := d.Record()
	waitForFile(t, f.path("pid")) // the fake is at work
	if rec.Pid <= 0 || rec.StartTime == 0 || rec.BootID == "" {
		t.Fatalf("record %+v", rec)
	}
	select {
	case <-d.Done():
		t.Fatal("the task ended on its own")
	default:
	}
	// A record whose process was replaced hits nothing.
	stale := rec
	stale.StartTime++
	if out, err := Kill(context.Background(), stale); err != nil || out != KillGone {
		t.Fatalf("Kill(stale) = %q, %v", out, err)
	}
	// The record travels as JSON to another process, which kills the group.
	killer := exec.Command(os.Args[0], "-test.run=^TestHelperKill$")
	killer.Env = append(os.Environ(), "STRATUM_AGENT_TEST_KILL="+strconv.Itoa(rec.Pid)+","+strconv.FormatUint(rec.StartTime, 10)+","+rec.BootID)
	if out, err := killer.CombinedOutput(); err != nil || !strings.Contains(string(out), "outcome terminated") {
		t.Fatalf("killer: %v\n%s", err, out)
	}
	res, err := d.Wait()
	if err != nil || !strings.HasPrefix(res.Failure, `codex was killed by signal "terminated"`) {
		t.Errorf("result %+v, err %v", res, err)
	}
	assertDead(t, f.path("pid"))
	if out, err := Kill(context.Background(), rec); err != nil || out != KillGone {
		t.Errorf("Kill after the end = %q, %v", out, err)
	}
}

// TestHelperKill is not a test: run by TestStartTaskAndKill as another
// process, it kills the agent named by its environment.
func TestHelperKill(t *testing.T) {
	spec := os.Getenv("STRATUM_AGENT_TEST_KILL")
	if spec == "" {
		t.Skip("helper process of TestStartTaskAndKill")
	}
	parts := strings.SplitN(spec, ",", 3)
	pid, _ := strconv.Atoi(parts[0])
	start, _ := strconv.ParseUint(parts[1], 10, 64)
	out, err := Kill(context.Background(), ProcessRecord{Pid: pid, StartTime: start, BootID: parts[2]})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("outcome %s", out)
	os.Stdout.WriteString("outcome " + string(out) + "\n")
}

func TestStartTaskCancelAndFailure(t *testing.T) {
	f := installFake(t, "claude", "fake-claude.sh")
	t.Setenv("FAKE_MODE", "hang")
	started := 0
	d, err := StartTask(context.Background(), &Claude{}, Task{Prompt: "p", Options: Options{Started: func(ProcessRecord) { started++ }}})
	if err != nil {
		t.Fatal(err)
	}
	waitForFile(t, f.path("pid"))
	d.Cancel()
	if _, err := d.Wait(); !errors.Is(err, ErrCancelled) {
		t.Errorf("err = %v, want ErrCancelled", err)
	}
	if started != 1 {
		t.Errorf("the caller's Started ran %d times", started)
	}
	assertDead(t, f.path("pid"))

	// An agent that cannot start is an error from StartTask itself.
	t.Setenv("PATH", t.TempDir())
	if d, err := StartTask(context.Background(), &Claude{}, Task{Prompt: "p"}); d != nil || !errors.Is(err, ErrUnavailable) {
		t.Errorf("StartTask = %v, %v", d, err)
	}
}

// waitForFile waits (bounded) until a file exists and is not empty.
func waitForFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if b, err := os.ReadFile(path); err == nil && strings.HasSuffix(string(b), "\n") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never appeared", path)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		agent string
		o     Options
		err   string // substring; "" means valid
	}{
		{"claude", Options{}, ""},
		{"claude", Options{Sandbox: SandboxDangerFullAccess, PermissionMode: "dontAsk", Effort: "max", AllowedTools: []string{"Bash(git *)"},
			Thinking: &Thinking{Type: "enabled", BudgetTokens: 1000, Display: "omitted"}, Timeout: time.Minute}, ""},
		{"claude", Options{Sandbox: "full"}, "unknown sandbox mode"},
		{"claude", Options{PermissionMode: "yolo"}, "unknown permission mode"},
		{"claude", Options{Effort: "minimal"}, "unknown effort"},
		{"claude", Options{AllowedTools: []string{"--dangerously-skip-permissions"}}, "invalid tool rule"},
		{"claude", Options{DisallowedTools: []string{" "}}, "invalid tool rule"},
		{"claude", Options{Thinking: &Thinking{Type: "on"}}, "unknown thinking type"},
		{"claude", Options{Thinking: &Thinking{Type: "adaptive", BudgetTokens: 10}}, "thinking budget"},
		{"claude", Options{Thinking: &Thinking{Type: "enabled", Display: "full"}}, "unknown thinking display"},
		{"claude", Options{Timeout: -time.Second}, "negative time limit"},
		{"codex", Options{Sandbox: SandboxWorkspaceWrite, Effort: "minimal", Model: "gpt-5"}, ""},
		{"codex", Options{Effort: "max"}, "unknown effort"},
		{"codex", Options{AllowedTools: []string{"Read"}, Thinking: &Thinking{Type: "disabled"}}, "allowed or disallowed tools and thinking apply to claude only"},
		{"codex", Options{PermissionMode: "plan"}, "a permission mode apply to claude only"},
		{"human", Options{Model: "opus", Timeout: time.Second}, ""},
		{"my-agent", Options{AllowedTools: []string{"Read"}}, "apply to claude only"},
	}
	for _, tt := range tests {
		err := tt.o.Validate(tt.agent)
		if (tt.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("%s %+v: err = %v, want %q", tt.agent, tt.o, err, tt.err)
		}
	}
}

func TestCodexTempDirRemoved(t *testing.T) {
	f := installFake(t, "codex", "fake-codex.sh")
	t.Setenv("FAKE_MODE", "hang")
	req := sampleRequest()
	req.Options.Timeout = 200 * time.Millisecond
	if _, err := (&Codex{}).Run(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	last := argAfter(f.args(t), "--output-last-message")
	if _, err := os.Stat(filepath.Dir(last)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the temporary directory of a timed-out attempt survived: %v", err)
	}
}
