// Package store persists runs so that a crash never loses an acknowledged
// step, never yields a half-written run, and nothing acknowledged can be
// rolled back or removed without a trace (docs/storage.md).
//
// To the store a run is an opaque current-state document (JSON that the
// engine writes and reads), a small summary the engine keeps current
// ([Change].Summary, at most [MaxSummaryBytes]), and an append-only list of
// events, each carrying a store-assigned seq, the
// previous event's hash and its own hash: a SHA-256 chain that makes edits
// of the history evident. The first event of every write is marked, so
// the store can tell what one interrupted write leaves after a run's head
// from anything else. Every write also leaves an independent head record
// (write count, head, state check, summary) that a rolled-back state or
// log, or a removed run, no longer matches; [Store.List] reads only these.
// What no local check can catch, a consistent rewrite, is caught by
// [Store.Verify] against an anchor head kept elsewhere. Leases
// ([Store.AcquireLease], [Store.RenewLease], [Store.ReleaseLease]) say
// which process drives a run (docs/storage.md, "Leases"); they are judged
// on the store's clock, carry a fencing epoch, are not events and never
// block [Store.Update].
//
// The [Store] interface is all the engine sees; it has no file-system
// notions. Package storetest is the contract every implementation passes;
// package store/postgres implements it over PostgreSQL with the building
// blocks records.go exports for stores that keep a run's parts as records
// (the same lines, checks and integrity rules). Optional capabilities:
// [Copier] (a run handed out and taken in whole, "stratum store copy"),
// [Notifier] (a follower told when a run is written) and [Scanner] (a
// listing handed out as it is read).
//
// [FileStore] is the default backend: under a root (see [DefaultRoot]),
// one directory per run holding state.json and .state.json.tmp (the
// latest two states: the new one written over the older, fsynced with
// the log, and the two names exchanged; a power loss that undoes the
// exchange loses nothing, the latest state being found by its content),
// events.jsonl (appended with one write and fsync per change), events.idx
// (line offsets for [Store.Event], derived and never trusted), run.lock
// (a permanent flock lock file taken for every read-modify-write) and
// lease; and the run's head record in the root's .heads directory,
// overwritten in place and flushed by the next write. Loading checks the
// head record, the state and the head line only (cost independent of
// history); data after the head is the latest write's when the temp file
// holds its state, else what an interrupted write left, kept aside with
// a [EventRepair] event by the next write, or corruption. [Memory] has the same semantics in memory, for tests of the
// engine. docs/storage.md documents the formats, the canonical JSON that
// is hashed and every recovery rule.
//
// The package imports nothing of the module except internal/atomicfile
// (where plain system calls are not available, and in tests); in
// particular it must not import engine, ir or expr.
package store
