package proc

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// helperEnv turns the test binary into the parent process of
// TestChildrenDieWithParent: TestHelperParent runs only when it is set.
const helperEnv = "STRATUM_PROC_TEST_PARENT_DIR"

// TestHelperParent is not a test: run by TestChildrenDieWithParent as a
// separate process, it starts a child that leaves a grandchild in its
// group, registers a scratch directory, writes the pids it knows, and waits
// to be killed.
func TestHelperParent(t *testing.T) {
	dir := os.Getenv(helperEnv)
	if dir == "" {
		t.Skip("helper process of TestChildrenDieWithParent")
	}
	if os.Getenv(helperEnv+"_NO_WATCHDOG") != "" {
		// As if the watchdog could not start: only the parent-death signal
		// is left.
		watchdogOnce.Do(func() { theWatchdog = &watchdog{err: errors.New("disabled by the test")} })
		writeAtomic(t, filepath.Join(dir, "watchdog.pid"), "0")
	}
	scratch := filepath.Join(dir, "scratch")
	if err := os.MkdirAll(filepath.Join(scratch, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	if wd, err := watchdogStatus(); err == nil {
		writeAtomic(t, filepath.Join(dir, "watchdog.pid"), strconv.Itoa(wd))
	} else if os.Getenv(helperEnv+"_NO_WATCHDOG") == "" {
		t.Fatal(err)
	}
	// Each pid file appears whole (written aside, then renamed).
	body := `sleep 300 &
echo $! > "$1/g.tmp" && mv "$1/g.tmp" "$1/grandchild.pid"
echo $$ > "$1/c.tmp" && mv "$1/c.tmp" "$1/child.pid"
wait
`
	_, err := Run(context.Background(), Spec{Argv: []string{"/bin/sh", "-c", body, "sh", dir}, TempPaths: []string{scratch}})
	t.Fatalf("the child ended while its parent lived: %v", err)
}

func writeAtomic(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path+".tmp", []byte(content+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
}

// waitPid waits (bounded) for a pid file to appear and reads it.
func waitPid(t *testing.T, path string, parent *exec.Cmd) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, err := os.ReadFile(path); err == nil {
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			return pid
		}
		if parent.ProcessState != nil || time.Now().After(deadline) {
			t.Fatalf("%s never appeared", path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// startParent starts TestHelperParent as a separate process.
func startParent(t *testing.T, dir string, env ...string) (*exec.Cmd, <-chan struct{}, *strings.Builder) {
	t.Helper()
	parent := exec.Command(os.Args[0], "-test.run=^TestHelperParent$")
	parent.Env = append(append(os.Environ(), helperEnv+"="+dir), env...)
	var out strings.Builder
	parent.Stdout, parent.Stderr = &out, &out
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { parent.Wait(); close(exited) }()
	t.Cleanup(func() { parent.Process.Kill(); <-exited })
	return parent, exited, &out
}

func TestChildrenDieWithParent(t *testing.T) {
	dir := t.TempDir()
	parent, exited, out := startParent(t, dir)
	child := waitPid(t, filepath.Join(dir, "child.pid"), parent)
	grandchild := waitPid(t, filepath.Join(dir, "grandchild.pid"), parent)
	watchdog := waitPid(t, filepath.Join(dir, "watchdog.pid"), parent)
	for name, pid := range map[string]int{"child": child, "grandchild": grandchild, "watchdog": watchdog} {
		if !alive(pid) {
			t.Fatalf("%s %d is not running before the kill; parent said:\n%s", name, pid, out.String())
		}
	}

	if err := parent.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited

	// The child goes by its parent-death signal, the grandchild (which that
	// signal does not reach) by the watchdog's group kill, then the watchdog
	// itself, having removed the scratch directory.
	for name, pid := range map[string]int{"child": child, "grandchild": grandchild, "watchdog": watchdog} {
		deadline := time.Now().Add(10 * time.Second)
		for alive(pid) {
			if time.Now().After(deadline) {
				syscall.Kill(pid, syscall.SIGKILL)
				t.Fatalf("%s %d outlived its SIGKILLed parent", name, pid)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "scratch")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the scratch directory survived its parent: %v", err)
	}
}

// Without the watchdog, the parent-death signal alone still ends the child
// itself; what the child started in its group lives on (this is what the
// watchdog is for, and what is left when it cannot run: docs/agents.md).
func TestParentDeathSignalAlone(t *testing.T) {
	dir := t.TempDir()
	parent, exited, out := startParent(t, dir, helperEnv+"_NO_WATCHDOG=1")
	child := waitPid(t, filepath.Join(dir, "child.pid"), parent)
	grandchild := waitPid(t, filepath.Join(dir, "grandchild.pid"), parent)
	defer syscall.Kill(grandchild, syscall.SIGKILL)
	if !alive(child) || !alive(grandchild) {
		t.Fatalf("not running before the kill; parent said:\n%s", out.String())
	}
	if err := parent.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited
	eventuallyDead(t, child)
	if !alive(grandchild) {
		t.Error("the grandchild died without the watchdog: this test no longer shows what the watchdog adds")
	}
	if _, err := os.Stat(filepath.Join(dir, "scratch")); err != nil {
		t.Errorf("without the watchdog the scratch directory is expected to survive: %v", err)
	}
}

// The parent-death signal fires when the thread that forked the child
// exits. A goroutine that locks its thread and returns without unlocking
// ends that thread; a child forked on it must not die with it.
func TestChildSurvivesItsStartingThread(t *testing.T) {
	dir := t.TempDir()
	goFile, reply := filepath.Join(dir, "go"), filepath.Join(dir, "reply")
	body := `while [ ! -e "$1" ]; do sleep 0.02; done
echo alive > "$2"
`
	// The main thread never exits (the runtime parks it instead), so it is
	// occupied first by a goroutine locked to it, should one land there.
	hold := make(chan struct{})
	defer close(hold)
	var tid int
	var id Identity
	for tid == 0 {
		tids := make(chan int, 1)
		started := make(chan Identity, 1)
		go func() {
			runtime.LockOSThread()
			if me := syscall.Gettid(); me == os.Getpid() {
				tids <- 0
				<-hold
				runtime.UnlockOSThread()
				return
			} else {
				tids <- me
			}
			// Never unlocked: the thread ends with this goroutine.
			Run(context.Background(), Spec{Argv: []string{"/bin/sh", "-c", body, "sh", goFile, reply},
				OnStart: func(id Identity) {
					started <- id
					runtime.Goexit() // end the goroutine, and so its thread, with the child running
				}})
		}()
		if tid = <-tids; tid != 0 {
			id = <-started
		}
	}
	defer syscall.Kill(-id.Pid, syscall.SIGKILL)

	task := "/proc/self/task/" + strconv.Itoa(tid)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(task); errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(task + "/stat")
			t.Fatalf("thread %d did not exit: %s", tid, b)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// The thread is gone; a signal it caused has been sent. The child
	// proves it is alive by answering.
	if err := os.WriteFile(goFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(10 * time.Second)
	for {
		if b, err := os.ReadFile(reply); err == nil && strings.TrimSpace(string(b)) == "alive" {
			return
		}
		if !alive(id.Pid) {
			t.Fatal("the child died with the thread that started it")
		}
		if time.Now().After(deadline) {
			t.Fatal("the child never answered")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestOnStartIdentity(t *testing.T) {
	var got Identity
	var errs strings.Builder
	res, err := Run(context.Background(), Spec{
		Argv:    []string{"/bin/sh", "-c", `echo $$; echo oops >&2`},
		OnStart: func(id Identity) { got = id },
		Stderr:  &errs,
	})
	if err != nil || !res.Success() {
		t.Fatal(err, res.ExitCode)
	}
	if strconv.Itoa(got.Pid) != strings.TrimSpace(string(res.Stdout)) || got.StartTime == 0 || got.BootID == "" {
		t.Errorf("identity %+v, child said pid %s", got, res.Stdout)
	}
	if errs.String() != "oops\n" || string(res.StderrTail) != "oops\n" {
		t.Errorf("stderr copy %q, tail %q", errs.String(), res.StderrTail)
	}
}

// startForKill runs body in the background and returns its identity and a
// channel closed when Run returns.
func startForKill(t *testing.T, body string, args ...string) (Identity, <-chan Result) {
	t.Helper()
	ids := make(chan Identity, 1)
	done := make(chan Result, 1)
	go func() {
		res, _ := Run(context.Background(), Spec{Argv: append([]string{"/bin/sh", "-c", body, "sh"}, args...),
			OnStart: func(id Identity) { ids <- id }})
		done <- res
	}()
	return <-ids, done
}

func TestKillGroup(t *testing.T) {
	ctx := context.Background()
	t.Run("terminated", func(t *testing.T) {
		pidFile := filepath.Join(t.TempDir(), "bg.pid")
		id, done := startForKill(t, `sleep 300 & echo $! > "$1.tmp" && mv "$1.tmp" "$1"; wait`, pidFile)
		grandchild := waitPid(t, pidFile, &exec.Cmd{})
		out, err := KillGroup(ctx, id, 5*time.Second)
		if err != nil || out != KillTerminated {
			t.Fatalf("KillGroup = %q, %v", out, err)
		}
		if res := <-done; res.Signal != "terminated" {
			t.Errorf("child ended with signal %q", res.Signal)
		}
		eventuallyDead(t, grandchild)
	})
	t.Run("killed after the grace period", func(t *testing.T) {
		ready := filepath.Join(t.TempDir(), "ready")
		id, done := startForKill(t, `trap '' TERM; touch "$1"; while :; do sleep 1; done`, ready)
		waitFile(t, ready)
		out, err := KillGroup(ctx, id, 100*time.Millisecond)
		if err != nil || out != KillKilled {
			t.Fatalf("KillGroup = %q, %v", out, err)
		}
		if res := <-done; res.Signal != "killed" {
			t.Errorf("child ended with signal %q", res.Signal)
		}
	})
	t.Run("another process under a recorded pid is left alone", func(t *testing.T) {
		id, done := startForKill(t, `sleep 300`)
		stale := id
		stale.StartTime-- // as if the recorded process had been replaced
		out, err := KillGroup(ctx, stale, time.Second)
		if err != nil || out != KillGone {
			t.Fatalf("KillGroup = %q, %v", out, err)
		}
		other := id
		other.BootID = "another-boot"
		if out, err := KillGroup(ctx, other, time.Second); err != nil || out != KillGone {
			t.Fatalf("KillGroup on another boot = %q, %v", out, err)
		}
		if !alive(id.Pid) {
			t.Fatal("a process with another identity was signalled")
		}
		syscall.Kill(-id.Pid, syscall.SIGKILL)
		<-done
		// Reaped: nothing is left to kill.
		if out, err := KillGroup(ctx, id, time.Second); err != nil || out != KillGone {
			t.Fatalf("KillGroup after exit = %q, %v", out, err)
		}
	})
	if _, err := KillGroup(ctx, Identity{Pid: 1}, time.Second); err == nil {
		t.Error("an identity without a start time was accepted")
	}
}

func waitFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never appeared", path)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestWatchdogMain(t *testing.T) {
	// The watchdog's own loop, fed directly: registrations counted, removed
	// ones forgotten, the rest acted on at end of input.
	dir := t.TempDir()
	keep, drop := filepath.Join(dir, "keep"), filepath.Join(dir, "drop")
	os.Mkdir(keep, 0o700)
	os.Mkdir(drop, 0o700)
	id, done := startForKill(t, `sleep 300`)
	in := "p " + strconv.Quote(drop) + "\np " + strconv.Quote(keep) + "\nP " + strconv.Quote(keep) + "\n" +
		"g " + strconv.Itoa(id.Pid) + "\ng 1\ng x\nnonsense\n"
	if code := watchdogMain(strings.NewReader(in)); code != 0 {
		t.Fatalf("exit %d", code)
	}
	select {
	case res := <-done:
		if res.Signal != "killed" {
			t.Errorf("registered group ended with %q", res.Signal)
		}
	case <-time.After(10 * time.Second):
		syscall.Kill(-id.Pid, syscall.SIGKILL)
		t.Fatal("the registered group was not killed")
	}
	if _, err := os.Stat(drop); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("registered path survived: %v", err)
	}
	if _, err := os.Stat(keep); err != nil {
		t.Errorf("released path was removed: %v", err)
	}
}
