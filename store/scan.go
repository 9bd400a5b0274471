package store

import "context"

// Scanner is the optional capability of a store to hand out the runs of
// a listing as it reads them, so that the caller works on the first runs
// while the store reads the others: the PostgreSQL store gives each row
// as it comes off the connection (docs/storage.md, "Costs on
// PostgreSQL"). The engine's listings use it when the store has it.
type Scanner interface {
	// ScanRuns calls fn with each run List would return, in no
	// particular order, one call at a time, and returns what List would
	// have failed with. info.Summary is the store's own memory, valid
	// only until fn returns and not to be written: fn copies what it keeps
	// of it (the rest of info is fn's to keep). fn should not wait on the
	// store: the scan may hold the store's connection. An error from fn
	// stops the scan and is ScanRuns' answer.
	ScanRuns(ctx context.Context, fn func(info RunInfo) error) error
}
