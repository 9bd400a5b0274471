package store

import "fmt"

// MaxRunIDLen is the longest run id accepted.
const MaxRunIDLen = 128

// ValidateRunID checks a run id against the pattern
//
//	^[A-Za-z0-9][A-Za-z0-9-]{0,127}$
//
// (ASCII letters, digits and '-', starting with a letter or digit, at most
// 128 bytes). UUIDs, the ids the engine mints, match it. The pattern admits
// no '/', '\\', '.', NUL or other separator, so an id can never name a
// path outside the store's root; every method checks it before building a
// path. The error wraps ErrInvalidRunID.
func ValidateRunID(id string) error {
	if id == "" {
		return fmt.Errorf("%w: empty", ErrInvalidRunID)
	}
	if len(id) > MaxRunIDLen {
		return fmt.Errorf("%w: %d bytes long, at most %d allowed", ErrInvalidRunID, len(id), MaxRunIDLen)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if alnum || (c == '-' && i > 0) {
			continue
		}
		return fmt.Errorf("%w: %q: byte %d is %q; use letters, digits and '-' (not first)", ErrInvalidRunID, id, i, c)
	}
	return nil
}
