//go:build unix

package mcp

import (
	"os"
	"syscall"
	"testing"
)

// socketPair is a connected pair of Unix stream sockets (close-on-exec:
// a child given one end must not inherit the other, or it never reads
// the end of its input).
func socketPair(tb testing.TB) [2]*os.File {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		tb.Fatal(err)
	}
	syscall.CloseOnExec(fds[0])
	syscall.CloseOnExec(fds[1])
	return [2]*os.File{os.NewFile(uintptr(fds[0]), "host"), os.NewFile(uintptr(fds[1]), "server")}
}
