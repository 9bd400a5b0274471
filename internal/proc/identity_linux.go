package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// procStat is what Stratum reads of /proc/PID/stat.
type procStat struct {
	state     byte
	pgrp      int
	startTime uint64
}

// readStat parses /proc/PID/stat. Fields are counted after the command
// name, which is in parentheses and may itself contain spaces and
// parentheses, so the text after the last ')' is split.
func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("proc: malformed /proc/%d/stat", pid)
	}
	// After ")": state(3) ppid(4) pgrp(5) ... starttime(22).
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 || len(f[0]) != 1 {
		return procStat{}, fmt.Errorf("proc: malformed /proc/%d/stat", pid)
	}
	pgrp, err1 := strconv.Atoi(f[2])
	start, err2 := strconv.ParseUint(f[19], 10, 64)
	if err1 != nil || err2 != nil {
		return procStat{}, fmt.Errorf("proc: malformed /proc/%d/stat", pid)
	}
	return procStat{state: f[0][0], pgrp: pgrp, startTime: start}, nil
}

func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// identify reads the identity of a child that has started and is not yet
// reaped (so its /proc entry exists, as a zombie at worst).
func identify(pid int) Identity {
	id := Identity{Pid: pid, BootID: bootID()}
	if st, err := readStat(pid); err == nil {
		id.StartTime = st.startTime
	}
	return id
}

// running reports whether id's process still exists and has not exited:
// same boot, same start time, still leading its own group, not a zombie.
// A zombie has exited; its owner is about to reap it and clean its group.
func running(id Identity) bool {
	if id.Pid <= 0 || id.StartTime == 0 || (id.BootID != "" && id.BootID != bootID()) {
		return false
	}
	st, err := readStat(id.Pid)
	if err != nil {
		return false
	}
	return st.startTime == id.StartTime && st.pgrp == id.Pid && st.state != 'Z' && st.state != 'X'
}

func killGroup(ctx context.Context, id Identity, grace time.Duration) (KillOutcome, error) {
	if id.Pid <= 0 || id.StartTime == 0 {
		return "", fmt.Errorf("proc: kill group: incomplete identity %+v", id)
	}
	if !running(id) {
		return KillGone, nil
	}
	if err := syscall.Kill(-id.Pid, syscall.SIGTERM); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return KillGone, nil
		}
		return "", fmt.Errorf("proc: signal group %d: %w", id.Pid, err)
	}
	if ended, err := awaitEnd(ctx, id, grace); ended || err != nil {
		return KillTerminated, err
	}
	// Checked again: between the wait and this signal the process may have
	// ended and its pid been reused.
	if !running(id) {
		return KillTerminated, nil
	}
	if err := syscall.Kill(-id.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return "", fmt.Errorf("proc: kill group %d: %w", id.Pid, err)
	}
	if _, err := awaitEnd(ctx, id, 0); err != nil {
		return KillKilled, err
	}
	return KillKilled, nil
}

// awaitEnd polls until id's process has ended, limit has passed (zero:
// no limit but ctx) or ctx ends.
func awaitEnd(ctx context.Context, id Identity, limit time.Duration) (bool, error) {
	var deadline <-chan time.Time
	if limit > 0 {
		t := time.NewTimer(limit)
		defer t.Stop()
		deadline = t.C
	}
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for running(id) {
		select {
		case <-ctx.Done():
			return false, fmt.Errorf("proc: wait for process %d to end: %w", id.Pid, context.Cause(ctx))
		case <-deadline:
			return false, nil
		case <-tick.C:
		}
	}
	return true, nil
}
