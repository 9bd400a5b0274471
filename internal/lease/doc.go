// Package lease keeps a store lease (docs/storage.md, "Leases") for as
// long as its holder needs it: it acquires the lease, renews it by
// heartbeat at a third of its time to live, and reports when it is lost.
//
// The holder counts the lease's time to live on its own monotonic clock
// from the moment it sent the request that granted or renewed it, never
// comparing its clock with the store's: a Keeper reports the lease lost
// once that time has run out without a successful renewal, which is no
// later than the store expires it (whatever the offset between the two
// clocks; only their rate difference over one time to live matters).
//
// lease imports store only.
package lease
