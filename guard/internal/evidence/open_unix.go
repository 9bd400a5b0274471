//go:build unix

package evidence

import "syscall"

// openFlags are added to O_RDONLY when server_file_contains opens the
// resolved path. O_NOFOLLOW: the last component was just resolved; refuse
// it if it was swapped for a symlink in between. O_NONBLOCK: opening a
// FIFO (which an agent can put in the workspace) must not wait forever for
// a writer; the regular-file check after the open then refuses it.
const openFlags = syscall.O_NOFOLLOW | syscall.O_NONBLOCK
