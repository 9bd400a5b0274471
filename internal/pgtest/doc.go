// Package pgtest gives tests a real PostgreSQL: a fresh, empty schema per
// call of [DSN], in one database per test binary.
//
// Where the server comes from, in order:
//
//  1. STRATUM_TEST_POSTGRES, a DSN (postgres://user:pass@host/db): the
//     binary creates a database of its own there and drops it at the end.
//  2. A private server started once per test binary, on a unix socket in
//     a temporary directory, from the initdb and postgres programs on PATH
//     or under /usr/lib/postgresql/*/bin. PostgreSQL refuses to run as
//     root, so when the tests run as root the server runs as the
//     "postgres" user. The cluster made by initdb is cached in the
//     temporary directory and copied for each binary (initdb takes
//     seconds; a copy a fraction of one).
//  3. Otherwise tests that ask for a DSN are skipped with [SkipLine], or
//     fail when STRATUM_REQUIRE_POSTGRES=1 (as .ci/run sets it).
//
// A binary that uses DSN calls [Main] from its TestMain (or wraps its
// testing.M with [M] for testscript.Main), which stops the private server
// and removes its directory after the tests. The server also gets SIGQUIT
// if the test binary dies, so none outlives its tests.
package pgtest
