//go:build !linux

package store

// exchange is not available here: the state is replaced by a rename.
func (r runFS) exchange(a, b string) error { return errNoExchange }

// named is true here: without exchange a file the state's name is given
// to is never written again (and replaceState, on errNoExchange, renames
// without asking).
func (r runFS) named(f *smallFile, name string) (bool, error) { return true, nil }
