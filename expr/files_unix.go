//go:build unix

package expr

import (
	"errors"
	"os"
	"syscall"
)

// openFlags open a file for file_contains. O_NONBLOCK keeps a FIFO from
// blocking the open (its type is then checked through the opened handle);
// it changes nothing for a regular file.
const openFlags = os.O_RDONLY | syscall.O_NONBLOCK

func isSymlinkLoop(err error) bool {
	return errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.EMLINK)
}
