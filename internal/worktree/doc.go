// Package worktree holds the git mechanics of fanout items with worktree
// isolation (docs/engine.md, "Worktree isolation of engine fanouts"), in
// one place: create a
// detached worktree of the workspace repository's HEAD in a fresh
// temporary directory (after tearing down what an earlier process left
// behind), capture the item's changes as a binary patch, remove the
// worktree, run pre_merge commands, and apply a patch to the workspace
// with `git apply --index --3way` without ever leaving it half applied.
// It also takes snapshots of a workspace repository (HEAD and the tree of
// its working files, through a temporary index: the user's index and
// files are never touched) and compares two of them (a diff stat and a
// bounded patch), so that the driver can record what one attempt of a do
// step changed (docs/agents.md, "What a step changed").
//
// Every child process goes through internal/proc (time limits, the whole
// process group stopped on expiry or cancellation).
//
// git does not support concurrent `git worktree add` on one repository (one
// can read another's half-written administrative files): callers serialise
// Create, Remove and RemoveLeftovers per repository. Capture works inside
// one worktree and may run concurrently with others.
//
// worktree imports only internal/proc of the module. The driver calls it:
// its engine.Workspaces executor for engine fanouts (driver/effects.go) and
// its consumer fanouts (driver/consumer.go). The engine itself only decides
// and never imports it (its tests do, to inspect repositories).
package worktree
