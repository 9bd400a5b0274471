// Package postgres is a [store.Store] over PostgreSQL, for runs shared by
// a team: several machines, servers and people working on the runs of one
// database (docs/storage.md, "PostgreSQL").
//
// A run is kept as records with the file store's meaning: a row of
// stratum_runs (the state document, its check, its head, its summary,
// its write count), one row of stratum_events per event holding the
// event's canonical line, exactly the file store's line (the same seq,
// prevHash, hash and write mark), a row of stratum_heads (the independent
// head record, written in the same transaction as the state), a row of
// stratum_leases, and rows of stratum_kept for data a repair kept aside.
// The rules of what these say together are package store's own (the
// functions of store/records.go), so Verify, anchors and the tamper
// guarantees mean the same thing here and in files.
//
// Update is one transaction that takes the run's row lock (SELECT ... FOR
// UPDATE) with a lock_timeout, answering *store.LockedError as the file
// store does; Create is one transaction; Load, Events, Event and List are
// single statements (one snapshot each); Verify reads in a repeatable-read
// transaction. Leases are judged on the database's clock. [Store.Watch]
// follows a run with LISTEN/NOTIFY; [Store.ScanRuns] hands out List's
// rows as they come off the connection. The schema is created and migrated by
// [Open] (versioned, idempotent, under an advisory lock, so processes
// starting together are safe).
package postgres
