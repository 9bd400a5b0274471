// Package atomicfile writes files so that a crash leaves either the old
// contents or the new, never a mixture, and so that a write that returned
// is on stable storage: temp file in the same directory, fsync, rename,
// fsync of the directory. It also appends durable lines to logs.
//
// It is shared by store (run state), guard and guard/internal/ledger
// (registries and ledgers) and cli (the spec `stratum speckit compile
// --out` writes), and imports nothing of the module.
package atomicfile
