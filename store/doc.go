// Package store persists runs so that a crash never loses an acknowledged
// step, never yields a half-written run, and nothing acknowledged can be
// rolled back or removed without a trace (docs/storage.md).
//
// To the store a run is an opaque current-state document (JSON that the
// engine writes and reads), a small summary the engine keeps current, and
// an append-only list of events, each carrying a store-assigned seq, the
// previous event's hash and its own hash: a SHA-256 chain that makes edits
// of the history evident. The first event of every write is marked, so
// the store can tell what one interrupted write leaves after a run's head
// from anything else. Every write also leaves an independent head record
// (write count, head, state check, summary) that a rolled-back state or
// log, or a removed run, no longer matches; [Store.List] reads only these.
// What no local check can catch, a consistent rewrite, is caught by
// [Store.Verify] against an anchor head kept elsewhere. Leases
// ([Store.AcquireLease]) say which process drives a run; they are judged
// on the store's clock and are not events.
//
// The [Store] interface is all the engine sees; it has no file-system
// notions, so a SQL backend can implement it without touching the engine.
// Package storetest is the contract every implementation passes.
//
// [FileStore] is the default backend: under a root (see [DefaultRoot]),
// one directory per run holding state.json (replaced atomically: temp
// file, fsync, rename, fsync directory), events.jsonl (appended with one
// write and fsync per change), events.idx (line offsets for [Store.Event],
// derived and never trusted), run.lock (a permanent flock lock file taken
// for every read-modify-write) and lease; and the run's head record in
// the root's .heads directory, overwritten in place and fdatasynced last.
// Loading checks the head record, the state and the head line only (cost
// independent of history); data after the head is what an interrupted
// write left, kept aside with a [EventRepair] event by the next write, or
// corruption. [Memory] has the same semantics in memory, for tests of the
// engine. docs/storage.md documents the formats, the canonical JSON that
// is hashed and every recovery rule.
//
// The package imports nothing of the module except internal/atomicfile
// (where plain system calls are not available, and in tests); in
// particular it must not import engine, ir or expr.
package store
