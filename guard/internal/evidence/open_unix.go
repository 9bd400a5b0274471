//go:build unix

package evidence

import "syscall"

// openFlags are added to O_RDONLY when server_file_contains opens a file.
// O_NONBLOCK: opening a FIFO (which an agent can put in the workspace)
// must not wait forever for a writer; the regular-file check after the
// open then refuses it. (No O_NOFOLLOW here: the *os.Root walk already
// opens every component with it and follows only in-root links.)
const openFlags = syscall.O_NONBLOCK
