// Package evidence parses and evaluates trusted guard predicates
// (docs/guard.md, "Trusted builtins"): a statement is exactly one call of an
// allow-listed builtin with string or string-list arguments, read by a small
// hand-written parser (never eval), and evaluated by the server itself
// against real files, a real git repository, a real command's exit code or
// the resource's own ledger.
//
// File, git and command evidence is confined to the registered workspace
// root: paths are joined onto the root's real path, symlinks are resolved
// and anything that ends up outside is refused; the file is then reached
// through an *os.Root of the workspace (openat with O_NOFOLLOW at every
// component), so a directory swapped for a symlink in between cannot lead
// the access outside.
//
// evidence imports only internal/proc of the module.
package evidence
