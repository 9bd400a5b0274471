//go:build !unix

package pgtest

import "errors"

// private is refused outside Unix: the private server is started as
// another user (syscall.Credential), which only Unix has.
func private() (*server, error) {
	return nil, errors.New("a private PostgreSQL server needs Unix; name a server in " + EnvDSN)
}
