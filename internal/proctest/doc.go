// Package proctest holds the process helpers the tests of several packages
// share, on every platform the project builds for: whether a process still
// runs (a test that kills a process group checks that none of it is left),
// and a named pipe where the platform has them (a file that would block a
// reader forever, which the code under test must refuse).
package proctest
