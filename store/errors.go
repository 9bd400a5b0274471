package store

import (
	"errors"
	"fmt"
	"time"
)

// Sentinel errors. Callers branch on them with errors.Is; the typed errors
// LockedError and CorruptError match ErrLocked and ErrCorrupt.
var (
	// ErrRunNotFound: no run has this id.
	ErrRunNotFound = errors.New("run not found")
	// ErrRunExists: Create was given an id that is already taken.
	ErrRunExists = errors.New("run already exists")
	// ErrLocked: the run's lock could not be taken before the lock timeout.
	ErrLocked = errors.New("run is locked")
	// ErrCorrupt: the stored run fails an integrity check. The store never
	// returns data from a corrupt part of a run.
	ErrCorrupt = errors.New("run is corrupt")
	// ErrInvalidRunID: the id does not match the run id pattern.
	ErrInvalidRunID = errors.New("invalid run id")
	// ErrInvalidInput: a state document, event or argument the caller
	// supplied is malformed (not JSON, a bad event type, a zero time, a
	// negative limit...).
	ErrInvalidInput = errors.New("invalid store input")
	// ErrSeqOutOfRange: an Events cursor is negative or beyond the head.
	ErrSeqOutOfRange = errors.New("event seq out of range")
)

// LockedError reports a lock that stayed held for the whole lock timeout.
type LockedError struct {
	RunID string
	// PID is the process holding the lock, or 0 when it is not known (the
	// holder had not yet recorded itself, or the backend cannot tell).
	PID int
	// Waited is how long the caller waited.
	Waited time.Duration
}

func (e *LockedError) Error() string {
	if e.PID > 0 {
		return fmt.Sprintf("run %s is locked by pid %d (waited %s)", e.RunID, e.PID, e.Waited.Round(time.Millisecond))
	}
	return fmt.Sprintf("run %s is locked by another writer (waited %s)", e.RunID, e.Waited.Round(time.Millisecond))
}

// Is makes errors.Is(err, ErrLocked) true.
func (e *LockedError) Is(target error) bool { return target == ErrLocked }

// Parts of a run named by CorruptError.Part.
const (
	// PartState is the state document and its envelope.
	PartState = "state"
	// PartEvents is the event log (and what was kept aside from it).
	PartEvents = "events"
	// PartHead is the run's independent head record.
	PartHead = "head record"
	// PartRun is the run as a whole (its data was removed).
	PartRun = "run"
)

// CorruptError says what part of a run is broken and where.
type CorruptError struct {
	RunID string
	// Part is PartState, PartEvents, PartHead or PartRun.
	Part string
	// Path is the file concerned, when the backend has files.
	Path string
	// Seq is the event concerned (0 when not about one event).
	Seq int64
	// Offset is the byte offset in the file, or -1 when not meaningful.
	Offset int64
	// Reason says what check failed.
	Reason string
}

func (e *CorruptError) Error() string {
	msg := fmt.Sprintf("run %s: %s is corrupt", e.RunID, e.Part)
	if e.Path != "" {
		msg += " (" + e.Path + ")"
	}
	switch {
	case e.Seq > 0 && e.Offset >= 0:
		msg += fmt.Sprintf(" at event seq %d, byte %d", e.Seq, e.Offset)
	case e.Seq > 0:
		msg += fmt.Sprintf(" at event seq %d", e.Seq)
	case e.Offset >= 0:
		msg += fmt.Sprintf(" at byte %d", e.Offset)
	}
	return msg + ": " + e.Reason
}

// Is makes errors.Is(err, ErrCorrupt) true.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// Lease errors.
var (
	// ErrLeaseHeld: another owner holds the run's unexpired lease. The
	// error is a *LeaseHeldError naming the holder.
	ErrLeaseHeld = errors.New("run lease is held by another owner")
	// ErrLeaseLost: the lease presented is no longer the run's lease
	// (expired, released, or granted to another owner).
	ErrLeaseLost = errors.New("run lease lost")
)

// LeaseHeldError reports the holder of a lease that AcquireLease could not
// grant.
type LeaseHeldError struct {
	RunID  string
	Holder string
	// Expires is when the holder's lease expires unless renewed, on the
	// store's clock.
	Expires time.Time
}

func (e *LeaseHeldError) Error() string {
	return fmt.Sprintf("run %s: lease held by %q until %s", e.RunID, e.Holder, e.Expires.UTC().Format(time.RFC3339Nano))
}

// Is makes errors.Is(err, ErrLeaseHeld) true.
func (e *LeaseHeldError) Is(target error) bool { return target == ErrLeaseHeld }
