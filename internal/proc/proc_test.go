//go:build unix

package proc

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// script writes an executable sh script into a fresh temp dir.
func script(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "child.sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRunExits(t *testing.T) {
	tests := []struct {
		name       string
		body       string
		stdin      []byte
		wantCode   int
		wantOut    string
		wantErrEnd string
	}{
		{name: "ok", body: "echo out; echo err >&2", wantOut: "out\n", wantErrEnd: "err\n"},
		{name: "non-zero", body: "echo partial; echo failing >&2; exit 3", wantCode: 3, wantOut: "partial\n", wantErrEnd: "failing\n"},
		{name: "stdin", body: "printf '['; cat; printf ']'", stdin: []byte("hello"), wantOut: "[hello]"},
		{name: "no stdin is empty", body: "cat; echo done", wantOut: "done\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Run(context.Background(), Spec{Argv: []string{script(t, tt.body)}, Stdin: tt.stdin})
			if err != nil {
				t.Fatal(err)
			}
			if res.ExitCode != tt.wantCode || res.Signal != "" || res.TimedOut {
				t.Errorf("exit %d signal %q timedOut %v, want exit %d", res.ExitCode, res.Signal, res.TimedOut, tt.wantCode)
			}
			if res.Success() != (tt.wantCode == 0) {
				t.Errorf("Success() = %v", res.Success())
			}
			// wc pads its count with spaces on some systems.
			if got := strings.ReplaceAll(string(res.Stdout), " ", ""); got != tt.wantOut {
				t.Errorf("stdout %q, want %q", got, tt.wantOut)
			}
			if !strings.HasSuffix(string(res.StderrTail), tt.wantErrEnd) {
				t.Errorf("stderr tail %q, want suffix %q", res.StderrTail, tt.wantErrEnd)
			}
			if res.Duration <= 0 {
				t.Errorf("duration %v", res.Duration)
			}
		})
	}
}

func TestRunDirAndEnv(t *testing.T) {
	dir := t.TempDir()
	res, err := Run(context.Background(), Spec{
		Argv: []string{"/bin/sh", "-c", `printf '%s|%s' "$PWD" "$ONLY"`},
		Dir:  dir,
		Env:  []string{"ONLY=yes"},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := dir + "|yes"
	if real, err := filepath.EvalSymlinks(dir); err == nil && string(res.Stdout) != want {
		want = real + "|yes"
	}
	if string(res.Stdout) != want {
		t.Errorf("stdout %q, want %q", res.Stdout, want)
	}
}

func TestRunStartErrors(t *testing.T) {
	if _, err := Run(context.Background(), Spec{}); !errors.Is(err, ErrNoCommand) {
		t.Errorf("empty argv: %v", err)
	}
	_, err := Run(context.Background(), Spec{Argv: []string{"stratum-no-such-program-xyz"}})
	if !errors.Is(err, exec.ErrNotFound) {
		t.Errorf("missing program: %v, want exec.ErrNotFound", err)
	}
	notExec := filepath.Join(t.TempDir(), "plain")
	os.WriteFile(notExec, []byte("x"), 0o644)
	if _, err := Run(context.Background(), Spec{Argv: []string{notExec}}); !errors.Is(err, os.ErrPermission) {
		t.Errorf("non-executable: %v, want permission error", err)
	}
	if _, err := Run(context.Background(), Spec{Argv: []string{"/bin/true"}, Timeout: -1}); err == nil {
		t.Error("negative timeout accepted")
	}
}

// alive reports whether pid names a live (non-zombie) process.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return err != nil && !os.IsNotExist(err)
	}
	// The state follows the parenthesised command name.
	s := string(stat)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

// eventuallyDead waits briefly for an orphan to be reaped by init: the
// kill itself happened before Run returned, but reparenting and reaping of
// a grandchild are asynchronous.
func eventuallyDead(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("process %d survived", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func readPid(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// The timeout tests below never compare durations. Their children never
// end by themselves, and where the grace period must not be waited for it
// is an hour, so a Run that waited for what it must not (a SIGKILL that
// never comes, the grace period after the child died, a straggler's pipe)
// would not return: the regression fails the test binary (go test
// -timeout), never as a slow run on a busy machine.

func TestRunTimeoutKillsGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "grandchild.pid")
	// The child ignores SIGTERM and never ends by itself, so only the
	// SIGKILL after the grace period ends it (Signal "killed" says it came);
	// the grandchild sits in the same group.
	body := `trap '' TERM
sleep 300 &
echo $! > "$1"
echo started
while :; do sleep 1; done
`
	res, err := Run(context.Background(), Spec{
		Argv:    []string{script(t, body), pidFile},
		Timeout: 300 * time.Millisecond,
		Grace:   200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !res.TimedOut || res.Success() {
		t.Errorf("TimedOut %v Success %v", res.TimedOut, res.Success())
	}
	if res.Signal != "killed" || res.ExitCode != -1 {
		t.Errorf("signal %q exit %d, want killed/-1", res.Signal, res.ExitCode)
	}
	if string(res.Stdout) != "started\n" {
		t.Errorf("stdout %q", res.Stdout)
	}
	eventuallyDead(t, readPid(t, pidFile))
}

func TestRunTimeoutTermSuffices(t *testing.T) {
	// The child dies of SIGTERM; Run must return then, not after the grace
	// period of an hour.
	res, err := Run(context.Background(), Spec{
		Argv:    []string{script(t, "exec sleep 2147483647")},
		Timeout: 100 * time.Millisecond,
		Grace:   time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !res.TimedOut || res.Signal != "terminated" {
		t.Errorf("TimedOut %v signal %q, want terminated", res.TimedOut, res.Signal)
	}
}

func TestRunContextCancel(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "grandchild.pid")
	ctx, cancel := context.WithCancel(context.Background())
	body := `sleep 300 &
echo $! > "$1"
echo ready >&2
wait
`
	go func() {
		// Wait for the whole pid line: the shell creates the file before
		// it writes to it, and a cancel in between would leave it empty.
		for {
			if b, err := os.ReadFile(pidFile); err == nil && strings.HasSuffix(string(b), "\n") {
				cancel()
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	res, err := Run(ctx, Spec{Argv: []string{script(t, body), pidFile}, Grace: 200 * time.Millisecond})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if res.TimedOut {
		t.Error("a cancel is not a timeout")
	}
	if res.Signal == "" {
		t.Errorf("child was not signalled: exit %d", res.ExitCode)
	}
	eventuallyDead(t, readPid(t, pidFile))

	// A context that is already done never starts the child.
	marker := filepath.Join(t.TempDir(), "ran")
	if _, err := Run(ctx, Spec{Argv: []string{"/bin/sh", "-c", "touch " + marker}}); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("child started under a cancelled context")
	}
}

func TestRunStragglersKilledAfterExit(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "bg.pid")
	// The child exits at once but leaves a background process, which never
	// ends by itself, holding stdout open; Run must not wait for it (the
	// grace period, which bounds the wait for pipes, is an hour) and must
	// not leave it running.
	body := `sleep 2147483647 &
echo $! > "$1"
echo bye
`
	res, err := Run(context.Background(), Spec{Argv: []string{script(t, body), pidFile}, Grace: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Success() || string(res.Stdout) != "bye\n" {
		t.Errorf("success %v stdout %q", res.Success(), res.Stdout)
	}
	eventuallyDead(t, readPid(t, pidFile))
}

func TestRunHugeOutputBounded(t *testing.T) {
	// 64 MiB on stdout and 8 MiB on stderr; only the limits are kept.
	body := `head -c 67108864 /dev/zero; head -c 8388608 /dev/zero | tr '\0' e >&2; echo END >&2`
	res, err := Run(context.Background(), Spec{Argv: []string{script(t, body)}, StdoutLimit: 1000, StderrTail: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Stdout) != 1000 || !res.StdoutTruncated || res.StdoutBytes != 64<<20 {
		t.Errorf("stdout kept %d of %d, truncated %v", len(res.Stdout), res.StdoutBytes, res.StdoutTruncated)
	}
	if len(res.StderrTail) != 100 || !bytes.HasSuffix(res.StderrTail, []byte("eeeEND\n")) || res.StderrBytes != 8<<20+4 {
		t.Errorf("stderr tail %d bytes (%q...), total %d", len(res.StderrTail), res.StderrTail[:10], res.StderrBytes)
	}
	if !res.Success() {
		t.Errorf("exit %d", res.ExitCode)
	}
}

func TestRunStdoutWriter(t *testing.T) {
	var got bytes.Buffer
	res, err := Run(context.Background(), Spec{Argv: []string{"/bin/sh", "-c", "echo one; echo two"}, Stdout: &got})
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != "one\ntwo\n" || res.Stdout != nil || res.StdoutBytes != 8 {
		t.Errorf("writer got %q, Result.Stdout %q, bytes %d", got.String(), res.Stdout, res.StdoutBytes)
	}
}

func TestTailBuffer(t *testing.T) {
	tests := []struct {
		writes []string
		want   string
	}{
		{[]string{"ab", "cd"}, "abcd"},
		{[]string{"abc", "def"}, "cdef"},
		{[]string{"abcdefgh"}, "efgh"},
		{[]string{"ab", "cdefghij", "k"}, "hijk"},
		{nil, ""},
	}
	for _, tt := range tests {
		b := &tailBuffer{limit: 4}
		for _, w := range tt.writes {
			b.Write([]byte(w))
		}
		if string(b.buf) != tt.want {
			t.Errorf("%q: tail %q, want %q", tt.writes, b.buf, tt.want)
		}
	}
}

func BenchmarkRunTrue(b *testing.B) {
	for b.Loop() {
		res, err := Run(context.Background(), Spec{Argv: []string{"/bin/true"}})
		if err != nil || !res.Success() {
			b.Fatal(err, res.ExitCode)
		}
	}
}
