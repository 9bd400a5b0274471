//go:build !unix

package evidence

// openFlags: systems without O_NONBLOCK rely on the regular-file check
// after the open (see open_unix.go).
const openFlags = 0
