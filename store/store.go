package store

import (
	"context"
	"encoding/json"
	"time"
)

// Store persists runs. A run is an opaque current-state document (JSON
// written by the engine) plus an append-only, hash-chained list of events.
// The store never interprets either.
//
// Every method is safe for concurrent use by many goroutines and, for the
// file store, by many processes sharing one root.
type Store interface {
	// Create stores a new run with its initial state and events. It fails
	// with ErrRunExists if the id is taken. When it returns nil the run is
	// durable; when it fails no part of the run is visible.
	Create(ctx context.Context, runID string, state []byte, events []NewEvent) (Head, error)

	// Update is the only way to change a run. It takes the run's exclusive
	// lock, loads the current snapshot, calls fn, and if fn returns a
	// non-nil Change, appends its events and replaces the state before
	// releasing the lock. When fn returns an error nothing is written and
	// Update returns that same error value, unwrapped, so the caller's own
	// domain errors (a stale token, say) come back as they were.
	// A nil Change (or one with no state and no events) writes nothing.
	// When Update returns nil the change is durable ("acknowledged").
	Update(ctx context.Context, runID string, fn func(cur *Snapshot) (*Change, error)) (Head, error)

	// Load returns the run's current state and head. It reflects exactly
	// the last acknowledged Create or Update, never a partial one.
	Load(ctx context.Context, runID string) (*Snapshot, error)

	// Events returns the events with seq > afterSeq, oldest first, at most
	// limit of them (limit 0 means all). afterSeq must be between 0 and the
	// head's seq; otherwise the error wraps ErrSeqOutOfRange. Every returned
	// event has had its hash recomputed and its chain checked up to the
	// head.
	Events(ctx context.Context, runID string, afterSeq int64, limit int) ([]Event, error)

	// List returns every run, sorted by id.
	List(ctx context.Context) ([]RunInfo, error)

	// Verify re-checks the whole run: the state's integrity and every event
	// of the chain from the first to the head. A broken run yields an error
	// wrapping ErrCorrupt; the report describes what was checked.
	Verify(ctx context.Context, runID string) (*VerifyReport, error)
}

// Head identifies the last acknowledged event of a run: its sequence
// number (1 for the first event, 0 for a run without events) and its hash.
type Head struct {
	Seq  int64  `json:"seq"`
	Hash string `json:"hash"`
}

// Snapshot is a run as of its last acknowledged change.
type Snapshot struct {
	RunID string
	// State is the engine's document, byte for byte as last written.
	State []byte
	Head  Head
}

// Change is what an Update function asks the store to write.
type Change struct {
	// State is the new state document (valid JSON). Nil keeps the current
	// document unchanged.
	State []byte
	// Events are appended in order after the head; the store assigns their
	// seq, prevHash and hash.
	Events []NewEvent
}

// NewEvent is an event as the caller supplies it.
type NewEvent struct {
	// Type names the kind of event: 1 to 64 bytes of ASCII letters, digits
	// and "_.:-".
	Type string
	// At is when the event happened; it must not be the zero time. It is
	// stored in UTC with nanosecond precision.
	At time.Time
	// Data is the event's payload, any JSON value. Nil stores null. It is
	// stored in canonical form (see docs/storage.md), so the Data read back
	// may differ in key order and whitespace from what was given.
	Data json.RawMessage
}

// Event is a stored event.
type Event struct {
	Seq      int64
	Type     string
	At       time.Time
	Data     json.RawMessage
	PrevHash string
	Hash     string
}

// RunInfo describes one run in a List answer.
type RunInfo struct {
	ID string
	// UpdatedAt is when the run's state was last written.
	UpdatedAt time.Time
}

// VerifyReport is what Verify checked.
type VerifyReport struct {
	RunID string
	// Head is the verified head; Events is how many events were checked
	// (equal to Head.Seq).
	Head   Head
	Events int64
	// StateBytes is the size of the state document.
	StateBytes int
	// Tail describes data found after the acknowledged head: events written
	// by an Update that crashed before it replaced the state, or a torn
	// line. Such data was never acknowledged; the next Update removes it.
	Tail Tail
}

// Tail is unacknowledged data after a run's head.
type Tail struct {
	// Bytes is the size of the data after the head (0 when there is none).
	Bytes int64
	// Events counts the complete events in it that continue the chain from
	// the head.
	Events int
	// Chained is false when the tail holds anything other than such events
	// followed by at most one incomplete line: a sign that something other
	// than a crashed Update wrote it.
	Chained bool
}
