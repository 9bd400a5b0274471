package proc

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// The watchdog is a small process, started once per process that runs
// children (on its first Run), that outlives a SIGKILL of its parent: it
// reads a pipe whose write end only the parent holds, so the kernel closes
// it however the parent dies. Run tells it, over the pipe, which process
// groups are running and which temporary paths they use; at end of file it
// kills those groups (so the children of a child, which a parent-death
// signal does not reach, die too) and removes those paths. It is the same
// executable, re-run with a marker that this package's init recognises
// before any other work, so there is nothing extra to install.
const (
	watchdogEnv  = "STRATUM_INTERNAL_PROC_WATCHDOG"
	watchdogArg0 = "stratum-proc-watchdog"
	// watchdogDrain bounds how long the watchdog waits for killed groups to
	// empty before it removes their paths.
	watchdogDrain = 2 * time.Second
)

func init() {
	if os.Getenv(watchdogEnv) == "1" && len(os.Args) == 1 && os.Args[0] == watchdogArg0 {
		os.Exit(watchdogMain(os.Stdin))
	}
}

// watchdog is the parent's end of the pipe. Process-wide by nature, like
// the spawner: it guards every child of this process.
type watchdog struct {
	mu  sync.Mutex
	w   *os.File // nil once the watchdog is gone or never started
	pid int
	err error // why it is not running
}

var (
	watchdogOnce sync.Once
	theWatchdog  *watchdog
)

func getWatchdog() *watchdog {
	watchdogOnce.Do(func() { theWatchdog = startWatchdog() })
	return theWatchdog
}

func startWatchdog() *watchdog {
	wd := &watchdog{}
	r, w, err := os.Pipe()
	if err != nil {
		wd.err = fmt.Errorf("proc: watchdog pipe: %w", err)
		return wd
	}
	cmd := &exec.Cmd{
		Path:  "/proc/self/exe",
		Args:  []string{watchdogArg0},
		Env:   []string{watchdogEnv + "=1"},
		Stdin: r,
		// Its own group: a signal sent to the parent's group (a terminal's
		// Ctrl-C) is for the parent, which stops its children itself; and no
		// parent-death signal, since it must outlive the parent.
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	err = cmd.Start()
	r.Close()
	if err != nil {
		w.Close()
		wd.err = fmt.Errorf("proc: start watchdog: %w", err)
		return wd
	}
	wd.w, wd.pid = w, cmd.Process.Pid
	go func() {
		err := cmd.Wait() // reap it should it die first
		wd.mu.Lock()
		defer wd.mu.Unlock()
		if wd.w != nil {
			wd.w.Close()
			wd.w = nil
		}
		wd.err = fmt.Errorf("proc: watchdog exited: %v", err)
	}()
	return wd
}

// send writes one message; a watchdog that is gone is not an error for
// Run (the parent-death signal still covers each child itself).
func (wd *watchdog) send(msg string) {
	wd.mu.Lock()
	defer wd.mu.Unlock()
	if wd.w == nil {
		return
	}
	if _, err := io.WriteString(wd.w, msg); err != nil {
		wd.w.Close()
		wd.w = nil
		wd.err = fmt.Errorf("proc: watchdog unreachable: %w", err)
	}
}

// guard is one child's registration with the watchdog.
type guard struct {
	wd    *watchdog
	pgid  int
	paths []string
}

func watch(paths []string) *guard {
	g := &guard{wd: getWatchdog()}
	for _, p := range paths {
		// Absolute: the watchdog's directory is this process's at the time
		// it started, which this process may have left since.
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
		g.paths = append(g.paths, p)
		g.wd.send("p " + strconv.Quote(p) + "\n")
	}
	return g
}

func (g *guard) group(pgid int) {
	g.pgid = pgid
	g.wd.send("g " + strconv.Itoa(pgid) + "\n")
}

// release ends the registration once Run has torn the group down itself.
func (g *guard) release() {
	if g.pgid != 0 {
		g.wd.send("G " + strconv.Itoa(g.pgid) + "\n")
		g.pgid = 0
	}
	for _, p := range g.paths {
		g.wd.send("P " + strconv.Quote(p) + "\n")
	}
	g.paths = nil
}

// watchdogMain is the watchdog process: it keeps the registrations it
// reads, and when its input ends (the parent is gone) kills every group
// still registered, waits briefly for them to empty, and removes every
// path still registered.
func watchdogMain(in io.Reader) int {
	signal.Ignore(syscall.SIGINT, syscall.SIGHUP)
	groups := map[int]int{}
	paths := map[string]int{}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if len(line) < 3 || line[1] != ' ' {
			continue
		}
		arg := line[2:]
		switch line[0] {
		case 'g', 'G':
			pgid, err := strconv.Atoi(arg)
			if err != nil || pgid <= 1 {
				continue
			}
			count(groups, pgid, line[0] == 'g')
		case 'p', 'P':
			p, err := strconv.Unquote(arg)
			if err != nil || p == "" {
				continue
			}
			count(paths, p, line[0] == 'p')
		}
	}
	for pgid := range groups {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
	deadline := time.Now().Add(watchdogDrain)
	for len(groups) > 0 && time.Now().Before(deadline) {
		live := liveGroups()
		for pgid := range groups {
			if !live[pgid] {
				delete(groups, pgid)
			}
		}
		if len(groups) > 0 {
			time.Sleep(pollInterval)
		}
	}
	for p := range paths {
		_ = os.RemoveAll(p)
	}
	return 0
}

// liveGroups returns the process groups that have a member which has not
// exited. Zombies do not count: they can do nothing, and whether they are
// reaped soon depends on whoever inherited them.
func liveGroups() map[int]bool {
	live := map[int]bool{}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return live
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, err := readStat(pid); err == nil && st.state != 'Z' && st.state != 'X' {
			live[st.pgrp] = true
		}
	}
	return live
}

// count adds or removes one registration of k.
func count[K comparable](m map[K]int, k K, add bool) {
	if add {
		m[k]++
		return
	}
	if m[k] <= 1 {
		delete(m, k)
		return
	}
	m[k]--
}

// watchdogStatus reports the watchdog's pid, or why it is not running.
func watchdogStatus() (int, error) {
	wd := getWatchdog()
	wd.mu.Lock()
	defer wd.mu.Unlock()
	if wd.w == nil {
		if wd.err == nil {
			return 0, errors.New("proc: watchdog not running")
		}
		return 0, wd.err
	}
	return wd.pid, nil
}
