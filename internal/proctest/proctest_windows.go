//go:build windows

package proctest

import (
	"errors"
	"fmt"
	"syscall"
)

// stillActive is the exit code GetExitCodeProcess gives a running process.
const stillActive = 259

// Running reports whether process pid still runs.
func Running(pid int) bool {
	const queryLimitedInformation = 0x1000
	h, err := syscall.OpenProcess(queryLimitedInformation, false, uint32(pid))
	if err != nil {
		return false // no such process (or none this user may see)
	}
	defer syscall.CloseHandle(h)
	var code uint32
	if err := syscall.GetExitCodeProcess(h, &code); err != nil {
		return true
	}
	return code == stillActive
}

// Mkfifo reports that Windows has no named pipes in the file system.
func Mkfifo(path string) error {
	return fmt.Errorf("mkfifo %s: %w", path, errors.ErrUnsupported)
}
