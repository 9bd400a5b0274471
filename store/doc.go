// Package store persists runs so that a crash never loses an acknowledged
// step and never yields a half-written run (DESIGN decision 5).
//
// To the store a run is an opaque current-state document (JSON that the
// engine writes and reads) plus an append-only list of events, each
// carrying a store-assigned seq, the previous event's hash and its own
// hash: a SHA-256 chain that makes edits of the history evident. The
// [Store] interface is all the engine sees; it has no file-system notions,
// so a SQL backend can implement it later without touching the engine.
//
// [FileStore] is the default backend: under a root (see [DefaultRoot]),
// one directory per run holding state.json (replaced atomically: temp
// file, fsync, rename, fsync directory), events.jsonl (appended with one
// write and fsync per change) and run.lock (a permanent flock lock file
// taken for every read-modify-write). Events are appended before the state
// is replaced, and the state records the head seq, head hash and log size
// it is consistent with, so loading checks only the head line (cost
// independent of history) and anything after the acknowledged size is an
// interrupted write that readers ignore and the next Update removes.
// docs/storage.md documents the formats, the canonical JSON that is hashed
// and every recovery rule.
//
// The package imports nothing of the module except internal/atomicfile; in
// particular it must not import engine, ir or expr.
package store
