//go:build !unix

package expr

import (
	"errors"
	"os"
	"syscall"
)

// openFlags open a file for file_contains. Platforms without O_NONBLOCK
// have no FIFOs in the file system that an open could block on.
const openFlags = os.O_RDONLY

func isSymlinkLoop(err error) bool { return errors.Is(err, syscall.ELOOP) }
