package store

import (
	"context"
	"encoding/json"
	"time"
)

// Store persists runs. A run is an opaque current-state document (JSON
// written by the engine), a small summary the engine keeps current, and an
// append-only, hash-chained list of events. The store never interprets the
// document, the summary or the events' data.
//
// Every method is safe for concurrent use by many goroutines and, for the
// file store, by many processes sharing one root. The package storetest
// holds the contract every implementation must pass.
type Store interface {
	// Create stores a new run: c.State (required), c.Summary and c.Events.
	// It fails with ErrRunExists if the id is taken (also by a run whose
	// data was removed while its head record remains). When it returns nil
	// the run is durable; when it fails no part of the run is visible.
	Create(ctx context.Context, runID string, c Change) (Head, error)

	// Update is the only way to change a run. It takes the run's exclusive
	// lock, loads the current snapshot, calls fn, and if fn returns a
	// non-empty Change, appends its events and replaces the state and
	// summary before releasing the lock. When fn returns an error nothing
	// is written and Update returns that same error value, unwrapped, so
	// the caller's own domain errors (a stale token, say) come back as they
	// were. A nil Change (or one with no state, no summary and no events)
	// writes nothing. When Update returns nil the change is durable
	// ("acknowledged").
	//
	// When the run holds what an interrupted write left after its head
	// (see docs/storage.md), the change that fn returns is written after a
	// store-owned [EventRepair] event that records where that data was
	// kept; the snapshot fn sees already counts that event in its Head, so
	// seqs fn derives from cur.Head stay right.
	Update(ctx context.Context, runID string, fn func(cur *Snapshot) (*Change, error)) (Head, error)

	// Load returns the run's current state, summary, head and lease. It
	// reflects exactly the last acknowledged Create or Update, never a
	// partial one, and refuses (ErrCorrupt) a run whose head record, state
	// and log disagree in a way no crash can explain.
	Load(ctx context.Context, runID string) (*Snapshot, error)

	// Events returns the events with seq > afterSeq, oldest first, at most
	// limit of them (limit 0 means all). afterSeq must be between 0 and the
	// head's seq; otherwise the error wraps ErrSeqOutOfRange. Every returned
	// event has had its hash recomputed and its seq and links checked; the
	// chain is checked up to the head when the events reach it, and
	// otherwise (a page that stops before the head) to the event before
	// the first, or the genesis hash. A reader paging from 0 to the head
	// so checks the whole chain, each page costing what it returns.
	Events(ctx context.Context, runID string, afterSeq int64, limit int) ([]Event, error)

	// Event returns the event with the given seq (1 to the head's seq, else
	// the error wraps ErrSeqOutOfRange) at a cost that does not depend on
	// the length of the run's history. It checks that event alone: its
	// stored form is canonical, its hash is the hash of its content, and its
	// seq is within the acknowledged head. It does not check that the event
	// is linked to its neighbours: an event replaced by another with a
	// correct hash of its own is caught only by Events (when the read
	// reaches past it) and Verify.
	Event(ctx context.Context, runID string, seq int64) (Event, error)

	// List returns every run, sorted by id, from the runs' summaries and
	// head records alone: it never reads a run's state document or event
	// log.
	List(ctx context.Context) ([]RunInfo, error)

	// Verify re-checks the whole run: the state's integrity, every event of
	// the chain from the first to the head, the head record, any data after
	// the head and, when opts.Head is set, that this anchor is on the chain.
	// A broken run yields an error wrapping ErrCorrupt; the report says what
	// was checked.
	Verify(ctx context.Context, runID string, opts VerifyOptions) (*VerifyReport, error)

	// AcquireLease grants the run's lease to owner for ttl, judged on the
	// store's own clock. It succeeds when no other owner holds an
	// unexpired lease; the same owner acquiring again renews its lease
	// (same epoch). Otherwise the error is a *LeaseHeldError (wrapping
	// ErrLeaseHeld). Each grant to an owner other than the last holder
	// gets a higher Epoch, a fencing token. Leases are not events and
	// never block Update.
	AcquireLease(ctx context.Context, runID, owner string, ttl time.Duration) (Lease, error)

	// RenewLease extends l for ttl from now on the store's clock. The error
	// wraps ErrLeaseLost when the run's lease is no longer l: expired,
	// released, or granted to someone else.
	RenewLease(ctx context.Context, runID string, l Lease, ttl time.Duration) (Lease, error)

	// ReleaseLease gives l up. The error wraps ErrLeaseLost when the run's
	// lease is no longer l (another owner's lease is never released).
	ReleaseLease(ctx context.Context, runID string, l Lease) error
}

// Head identifies the last acknowledged event of a run: its sequence
// number (1 for the first event, 0 for a run without events) and its hash
// (the run's genesis hash when there are no events).
type Head struct {
	Seq  int64  `json:"seq"`
	Hash string `json:"hash"`
}

// Snapshot is a run as of its last acknowledged change.
type Snapshot struct {
	RunID string
	// State is the engine's document, byte for byte as last written.
	State []byte
	// Summary is the run's summary as last written (compacted JSON), nil
	// when none was ever written.
	Summary json.RawMessage
	Head    Head
	// Lease is the run's lease when one is held and unexpired on the
	// store's clock at the time of reading, else nil.
	Lease *Lease
}

// MaxSummaryBytes bounds Change.Summary (after compaction).
const MaxSummaryBytes = 8 << 10

// Change is what an Update function (or a Create) asks the store to write.
type Change struct {
	// State is the new state document, a JSON object. Nil keeps the current
	// document (Create requires one). The store checks only that it starts
	// with '{' and ends with '}': a full validation would cost about 13 µs
	// per KiB on every update (see docs/storage.md).
	State []byte
	// Summary, when non-nil, replaces the run's summary: a JSON object of
	// at most MaxSummaryBytes once compacted, which List returns without
	// reading the state. The store treats its content as opaque.
	Summary json.RawMessage
	// Events are appended in order after the head; the store assigns their
	// seq, prevHash and hash. Types beginning with "store." are the
	// store's own and are refused.
	Events []NewEvent
}

// empty reports whether c writes nothing.
func (c *Change) empty() bool {
	return c == nil || (c.State == nil && c.Summary == nil && len(c.Events) == 0)
}

// NewEvent is an event as the caller supplies it.
type NewEvent struct {
	// Type names the kind of event: 1 to 64 bytes of ASCII letters, digits
	// and "_.:-", not beginning with "store.".
	Type string
	// At is when the event happened; it must not be the zero time. It is
	// stored in UTC with nanosecond precision.
	At time.Time
	// Data is the event's payload, any JSON value. Nil stores null. It is
	// stored in canonical form (see docs/storage.md), so the Data read back
	// may differ in key order and whitespace from what was given.
	Data json.RawMessage
}

// EventRepair is the type of the store's own event recording that data
// found after a run's head (what an interrupted write left) was kept aside
// instead of being deleted. Its data is
//
//	{"detail":{"kept":[{"name":…,"bytes":…,"sha256":…,"events":…,"torn":…}],"reason":…},"run":…,"seq":…}
//
// where seq is the event's own seq (where the kept data began) and each
// kept entry is a [KeptTail].
const EventRepair = "store.repair"

// storeTypePrefix marks event types only the store writes.
const storeTypePrefix = "store."

// Event is a stored event.
type Event struct {
	Seq      int64
	Type     string
	At       time.Time
	Data     json.RawMessage
	PrevHash string
	Hash     string
	// Begin is true on the first event of each Create or Update (each
	// write) and false on the others, and on every event written before
	// the log format marked writes. It is part of the hashed line
	// (docs/storage.md, "Write boundaries"): it is what lets the store tell
	// one interrupted write from several.
	Begin bool
}

// RunInfo describes one run in a List answer.
type RunInfo struct {
	ID string
	// UpdatedAt is when the run was last written, on the store's clock.
	UpdatedAt time.Time
	// Head is the run's head as its head record names it.
	Head Head
	// Summary is the run's summary as last written, nil when the run has
	// none (no summary was ever written, or the run predates summaries or
	// lacks a head record; see docs/storage.md).
	Summary json.RawMessage
}

// VerifyOptions adjust Verify.
type VerifyOptions struct {
	// Head, when set, is an anchor: a head hash obtained earlier (from a
	// Verify report, an Update, or `stratum audit`). It must be the hash of
	// an event on the run's chain at or before the current head (or the
	// run's genesis hash); otherwise Verify fails with ErrCorrupt. Only an
	// anchor kept outside the store catches a run rewritten consistently by
	// someone with full write access.
	Head string
}

// Head record states in VerifyReport.HeadRecord.
const (
	// HeadRecordMatch: the independent head record names the run's head.
	HeadRecordMatch = "match"
	// HeadRecordMissing: the run has no head record (it predates them, or
	// its Create was interrupted after the run was in place); the next
	// write records one. Rollback of such a run is caught only by the
	// tail rules and an anchor.
	HeadRecordMissing = "missing"
	// HeadRecordBehind: the head record is one write behind the state (a
	// write was interrupted after its state was durable); the next Load or
	// write completes it.
	HeadRecordBehind = "behind"
)

// VerifyReport is what Verify checked.
type VerifyReport struct {
	RunID string
	// Head is the verified head; Events is how many events were checked
	// (equal to Head.Seq) and Writes how many of them begin a write
	// (Event.Begin).
	Head   Head
	Events int64
	Writes int64
	// StateBytes is the size of the state document.
	StateBytes int
	// HeadRecord is one of HeadRecordMatch, HeadRecordMissing,
	// HeadRecordBehind.
	HeadRecord string
	// Anchor is where VerifyOptions.Head was found on the chain (nil when
	// no anchor was given).
	Anchor *Head
	// Repairs are the EventRepair events of the chain, each with the kept
	// data checked against its digest.
	Repairs []Repair
	// Pending lists data kept aside by a repair whose write did not
	// complete; the next write records it in an EventRepair event.
	Pending []KeptTail
	// Tail describes data found after the acknowledged head. Verify fails
	// unless it is what one interrupted write can leave (Tail.Chained); the
	// next write keeps it aside and records an EventRepair event.
	Tail Tail
	// StateFromTemp is true when the run's latest state was found in the
	// file store's temporary state file, where a crash that undid the
	// write's exchange of the two state files left it (docs/storage.md,
	// "Replacing the state"); the next Load or write puts it back in
	// place. Other backends never set it.
	StateFromTemp bool
	// Checks says in words what was checked.
	Checks []string
}

// Repair is one EventRepair event found on a run's chain.
type Repair struct {
	Seq  int64
	Kept []KeptTail
}

// KeptTail is data found after a run's head and kept aside by a repair.
type KeptTail struct {
	// Name is where the data was kept: a file beside the run's event log
	// for the file store.
	Name string `json:"name"`
	// Bytes is its size and SHA256 its digest (lowercase hex).
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
	// Events counts the complete events in it; Torn says it ends inside a
	// line.
	Events int  `json:"events"`
	Torn   bool `json:"torn"`
}

// Tail is unacknowledged data after a run's head.
type Tail struct {
	// Bytes is the size of the data after the head (0 when there is none).
	Bytes int64
	// Events counts the complete events in it that continue the chain from
	// the head.
	Events int
	// Chained is true when the tail is what one interrupted write can
	// leave: events continuing the chain from the head, no more than one
	// write's worth (docs/storage.md, "Write boundaries"), then at most one
	// incomplete line. Anything else means something other than a crashed
	// write wrote it, and the run is corrupt.
	Chained bool
	// Reason says why the tail is not Chained.
	Reason string `json:",omitempty"`
	// KeptAs names where a repair kept the tail (set in Options.OnRepair
	// calls).
	KeptAs string `json:",omitempty"`
}

// Lease is a grant to drive a run, recorded through the store. Expires is
// on the store's clock (see docs/storage.md, "Leases"): a holder must
// treat its lease as lost once ttl has passed on its own monotonic clock
// since it sent the request that granted or renewed it.
type Lease struct {
	Owner string
	// Epoch increases with every grant to an owner other than the last
	// holder: a fencing token.
	Epoch   int64
	Expires time.Time
}
