//go:build unix

package proctest

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"syscall"
)

// Running reports whether process pid still runs: it exists and, where
// /proc tells, is not a zombie waiting for whoever adopted it to reap it.
func Running(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	// The state follows the command's name, which is in parentheses and
	// may hold anything.
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || !bytes.HasPrefix(stat[i+1:], []byte(" Z"))
}

// Mkfifo makes a named pipe at path.
func Mkfifo(path string) error {
	return syscall.Mkfifo(path, 0o644)
}
