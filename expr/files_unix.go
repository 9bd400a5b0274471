//go:build unix

package expr

import (
	"errors"
	"os"
	"syscall"
)

// openNoFollow opens path for reading without following a final symlink.
// O_NONBLOCK keeps a FIFO from blocking the open; it changes nothing for a
// regular file.
func openNoFollow(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
}

func isSymlinkLoop(err error) bool {
	return errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.EMLINK)
}
