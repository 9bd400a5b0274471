// Package procgroup runs child programs in their own process group so that
// a timeout or cancellation kills the whole tree the child started, not
// just the direct child (a shell that forked a sleeper would otherwise
// keep the sleeper alive, holding pipes open).
//
// It is shared by guard/ (git and command evidence) and judge/ (the judge
// command) and imports nothing of the module.
package procgroup
