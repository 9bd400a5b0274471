package store

import (
	"encoding/json"
	"fmt"
	"time"
)

// This file exports the building blocks of a store that keeps a run's
// parts as records (rows of a database) instead of files: package
// store/postgres. They are the functions the file and memory stores use,
// so a run means the same thing whatever holds it: the same canonical
// event lines and hashes, the same state check, the same rules for what a
// state, its head record and data after its head say together
// (integrity.go), the same repair events and the same lease decisions
// (docs/storage.md).

// GenesisHash is the prevHash of a run's first event (docs/storage.md,
// "The event log: events.jsonl", genesis hash) and the head hash of a run
// without events.
func GenesisHash(runID string) string { return genesisHash(runID) }

// EncodedEvent is an event as a store keeps it: its canonical line (the
// stored form, without a newline) and the event it encodes, as Events
// reads it back.
type EncodedEvent struct {
	Line  []byte
	Event Event
}

// EncodeWrite encodes events as one write after head: seqs, prevHashes and
// hashes assigned, the first event marked as the beginning of the write
// (docs/storage.md, "Write boundaries"). It checks each event's type, time
// and data (ErrInvalidInput) but not the "store." prefix, so the store's
// own events ([RepairTail]) can lead the write; [PrepareChange] refuses
// that prefix from callers.
func EncodeWrite(runID string, head Head, events []NewEvent) ([]EncodedEvent, error) {
	w, err := encodeWrite(runID, head, nil, events)
	if err != nil {
		return nil, err
	}
	out := make([]EncodedEvent, len(w.events))
	for i, ev := range w.events {
		end := len(w.lines)
		if i+1 < len(w.at) {
			end = int(w.at[i+1])
		}
		out[i] = EncodedEvent{Line: w.lines[w.at[i] : end-1 : end-1], Event: ev}
	}
	return out, nil
}

// DecodeEvent parses a stored event line (without its newline) and checks
// it completely: it must be exactly the canonical line its fields encode
// to, and its hash the hash of its content. The error says which check
// failed.
func DecodeEvent(line []byte) (Event, error) { return decodeEvent(line) }

// LineHash reads the hash a stored event line records, without checking
// the line: what a page that stops before the head links its first event
// to (the Store contract of Events), as the file store reads it.
func LineHash(line []byte) (string, error) { return lineHash(line) }

// PrepareChange checks everything about a change that does not depend on
// the run (the state document by its first and last bytes, the summary,
// event types not beginning with "store."), so a bad change is refused
// before anything is written. It returns the change to write, with the
// summary compacted. Errors wrap ErrInvalidInput.
func PrepareChange(runID string, c *Change) (Change, error) {
	p, err := prepareChange(runID, c)
	if err != nil {
		return Change{}, err
	}
	return Change{State: p.state, Summary: p.summary, Events: p.events}, nil
}

// StateRecord is the state part of a run as a record store keeps it: what
// the file store's state.json holds, without the log size.
type StateRecord struct {
	RunID string
	// Rev counts the run's writes in this store (1 after Create).
	Rev int64
	// Head is the last acknowledged event.
	Head Head
	// Summary is the compacted summary, nil when none was written.
	Summary []byte
	// SavedAt is when the write happened, on the store's clock.
	SavedAt time.Time
	// State is the engine's document.
	State []byte
}

func (r StateRecord) envelope(check string) envelope {
	return envelope{Version: 2, RunID: r.RunID, Seq: r.Head.Seq, Head: r.Head.Hash, Rev: r.Rev,
		Summary: r.Summary, SavedAt: r.SavedAt, State: r.State, Check: check}
}

// Check is the record's check: the SHA-256 the file store's state.json
// would carry for the same values with a log size of 0 (docs/storage.md,
// "The state file"). A store keeps it with the record and in the head
// record; a record whose check is no longer its own was edited, and one
// whose check is not the head record's was edited with its check
// recomputed. The cost is one copy and one SHA-256 of the document.
func (r StateRecord) Check() string {
	env := r.envelope("")
	sealEnvelope(&env)
	return env.Check
}

// HeadRecord is a run's independent head record (docs/storage.md, "The
// head record"): which write the run is at, the head and the state check
// that write left, and the run's summary.
type HeadRecord struct {
	RunID   string
	Rev     int64
	Head    Head
	SavedAt time.Time
	// State is the check of the state record the write left.
	State   string
	Summary []byte
}

// RecordOf is the head record of the write that left r, whose check is
// check.
func RecordOf(r StateRecord, check string) HeadRecord {
	return HeadRecord{RunID: r.RunID, Rev: r.Rev, Head: r.Head, SavedAt: r.SavedAt, State: check, Summary: r.Summary}
}

func (h HeadRecord) internal() headRecord {
	return headRecord{RunID: h.RunID, Rev: h.Rev, Seq: h.Head.Seq, Hash: h.Head.Hash, SavedAt: h.SavedAt, State: h.State, Summary: h.Summary}
}

// JudgeHeadRecord applies the rules every store shares (docs/storage.md,
// the table under "The head record") to a run's state record, the check
// stored with it, and its head record (nil when it has none). It returns
// HeadRecordMatch, HeadRecordMissing or HeadRecordBehind, or a
// *CorruptError saying which part disagrees. When it returns
// HeadRecordBehind the caller still checks that the record's head is an
// event of the chain.
func JudgeHeadRecord(st StateRecord, check string, rec *HeadRecord) (string, error) {
	var r headRecord
	if rec != nil {
		r = rec.internal()
	}
	state, ce := judgeRecord(st.RunID, st.envelope(check), r, rec != nil)
	if ce != nil {
		return "", ce
	}
	return state, nil
}

// ClassifyTail describes data found after a run's head: stored event
// lines, each followed by a newline, possibly ending with an incomplete
// line. It is what one interrupted write can leave (Tail.Chained) only if
// the lines continue the chain from head as one write (docs/storage.md,
// "Write boundaries").
func ClassifyTail(data []byte, head Head) Tail { return classifyTail(data, head) }

// TailCorrupt is the corruption of data after head that ClassifyTail did
// not find Chained.
func TailCorrupt(runID string, head Head, t Tail) *CorruptError {
	return tailCorrupt(runID, envelope{Seq: head.Seq, LogSize: -1}, t)
}

// KeptName is the name a repair at head seq gives the i-th piece of data
// it keeps aside (i from 1): the file store's file name beside the log,
// kept as is by other stores so that a run copied between stores keeps
// its repair events valid.
func KeptName(seq int64, i int) string { return keptName(seq, i) }

// RepairTail plans the repair of what one interrupted write left after
// head (data, classified as t): the data is to be kept aside under
// KeptName(head.Seq, 1), and the write that keeps it begins with the
// returned [EventRepair] event (the store's own, to be encoded before the
// caller's events by EncodeWrite). at is the store's clock.
func RepairTail(runID string, head Head, data []byte, t Tail, at time.Time) (NewEvent, KeptTail) {
	kept := keptTail(keptName(head.Seq, 1), data, t)
	return repairEvent(runID, head.Seq+1, []KeptTail{kept}, at), kept
}

// ParseRepair reads the data of an EventRepair event: where it says data
// was kept aside.
func ParseRepair(ev Event) (Repair, error) { return parseRepair(ev) }

// RemovedRunError is the corruption of a run whose data is gone while its
// head record remains: a removed run must not look like one that never
// existed.
func RemovedRunError(rec HeadRecord) *CorruptError { return removedRun(rec.RunID, rec.internal()) }

// CheckAnchor validates VerifyOptions.Head (ErrInvalidInput).
func CheckAnchor(runID, anchor string) error { return checkAnchor(runID, anchor) }

// AnchorMissingError is Verify's answer when the anchor is not on the
// chain that ends at head.
func AnchorMissingError(runID, anchor string, head Head) *CorruptError {
	return anchorMissing(runID, anchor, head)
}

// AnchoredMissingError is Verify's answer for a run that does not exist
// (no data, no head record) when the caller holds an anchor for it: it
// was removed together with its head record.
func AnchoredMissingError(runID, anchor string) *CorruptError {
	return anchoredMissing(runID, anchor)
}

// VerifyChecks says in words what Verify checked, for VerifyReport.Checks.
func VerifyChecks(rep *VerifyReport, anchor string) []string {
	return verifyChecks(envelope{}, rep, anchor)
}

// LeaseRecord is a run's lease as a store keeps it: the current or last
// grant. Owner is "" once released; the epoch stays.
type LeaseRecord struct {
	Owner   string
	Epoch   int64
	Expires time.Time
}

// Active is the lease a Snapshot shows at now (the store's clock): the
// record when it is held and unexpired, else nil.
func (r LeaseRecord) Active(now time.Time) *Lease {
	return leaseRecord{Owner: r.Owner, Epoch: r.Epoch, Expires: r.Expires}.active(now)
}

// CheckLeaseArgs validates an owner and a ttl (ErrInvalidInput).
func CheckLeaseArgs(runID, owner string, ttl time.Duration) error {
	return checkLeaseArgs(runID, owner, ttl)
}

// GrantLease decides an AcquireLease against the current record at now
// (the store's clock): the record to store, or a *LeaseHeldError.
func GrantLease(runID string, cur LeaseRecord, owner string, now time.Time, ttl time.Duration) (LeaseRecord, error) {
	next, _, err := grantLease(runID, leaseRecord{Owner: cur.Owner, Epoch: cur.Epoch, Expires: cur.Expires}, owner, now, ttl)
	return LeaseRecord{Owner: next.Owner, Epoch: next.Epoch, Expires: next.Expires}, err
}

// RenewLeaseRecord decides a RenewLease of l (ErrLeaseLost when l is no
// longer the run's lease or has expired at now).
func RenewLeaseRecord(runID string, cur LeaseRecord, l Lease, now time.Time, ttl time.Duration) (LeaseRecord, error) {
	next, err := renewLease(runID, leaseRecord{Owner: cur.Owner, Epoch: cur.Epoch, Expires: cur.Expires}, l, now, ttl)
	return LeaseRecord{Owner: next.Owner, Epoch: next.Epoch, Expires: next.Expires}, err
}

// ReleaseLeaseRecord decides a ReleaseLease of l (ErrLeaseLost when l is
// no longer the run's lease).
func ReleaseLeaseRecord(runID string, cur LeaseRecord, l Lease) (LeaseRecord, error) {
	next, err := releaseLease(runID, leaseRecord{Owner: cur.Owner, Epoch: cur.Epoch, Expires: cur.Expires}, l)
	return LeaseRecord{Owner: next.Owner, Epoch: next.Epoch, Expires: next.Expires}, err
}

// CheckRepairData checks that the data kept aside for a repair event is
// what the event recorded: kept returns the data stored under a name (ok
// false when there is none).
func CheckRepairData(ev Event, kept func(name string) (data []byte, ok bool, err error)) (Repair, error) {
	rp, err := parseRepair(ev)
	if err != nil {
		return Repair{}, err
	}
	for _, k := range rp.Kept {
		data, ok, err := kept(k.Name)
		if err != nil {
			return Repair{}, fmt.Errorf("the data the repair kept aside (%s) cannot be read: %v", k.Name, err)
		}
		if !ok {
			return Repair{}, fmt.Errorf("the data the repair kept aside (%s) is missing", k.Name)
		}
		if got := keptTail(k.Name, data, Tail{}); got.Bytes != k.Bytes || got.SHA256 != k.SHA256 {
			return Repair{}, fmt.Errorf("the data the repair kept aside (%s) changed: %d bytes with SHA-256 %s, the repair recorded %d bytes with %s",
				k.Name, got.Bytes, got.SHA256, k.Bytes, k.SHA256)
		}
	}
	return rp, nil
}

// NormalizeSummary checks and compacts a summary as Change.Summary is
// stored (ErrInvalidInput).
func NormalizeSummary(runID string, b json.RawMessage) ([]byte, error) {
	return normalizeSummary(runID, b)
}
