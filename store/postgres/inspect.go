package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stratum-go/stratum/store"
)

// maxTailRows bounds the rows after a head that are read to classify them.
// One interrupted write leaves at most one write's events; more rows than
// this are not one.
const maxTailRows = 10000

// readRunSQL reads everything a check of a run needs apart from the
// interior of its log, in one statement (one snapshot): the state row,
// the head record, the lease, the database's clock, the head's event line,
// the line of the event the head record names (when it is another), and
// the rows after the head.
const readRunSQL = `
SELECT r.rev, r.seq, r.head, r.summary, r.saved_at, r.state, r.state_check,
	h.rev, h.seq, h.hash, h.state_check, h.summary, h.saved_at,
	l.owner, l.epoch, l.expires, clock_timestamp(),
	(SELECT e.line FROM stratum_events e WHERE e.run_id = q.id AND e.seq = r.seq),
	(SELECT e.line FROM stratum_events e WHERE e.run_id = q.id AND e.seq = h.seq AND h.seq <> r.seq),
	ARRAY(SELECT e.line FROM stratum_events e WHERE e.run_id = q.id AND e.seq > r.seq ORDER BY e.seq LIMIT $2)
FROM (SELECT $1::text AS id) q
LEFT JOIN stratum_runs r ON r.run_id = q.id
LEFT JOIN stratum_heads h ON h.run_id = q.id
LEFT JOIN stratum_leases l ON l.run_id = q.id`

// runRow is what readRunSQL read.
type runRow struct {
	id     string
	exists bool // the state row is there
	st     store.StateRecord
	check  string
	rec    *store.HeadRecord // nil when the run has none
	lease  store.LeaseRecord
	now    time.Time // the database's clock
	// headLine is the line of the event at the state's head (nil when
	// there is no such row); recLine that of the event the head record
	// names, when it names another.
	headLine, recLine *string
	tail              []string
}

type queryRower interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func readRun(ctx context.Context, q queryRower, id string) (runRow, error) {
	return scanRun(id, q.QueryRow(ctx, readRunSQL, id, maxTailRows+1))
}

func scanRun(id string, row pgx.Row) (runRow, error) {
	r := runRow{id: id}
	var (
		rRev, rSeq              *int64
		rHead, rSummary, rCheck *string
		rSaved                  *time.Time
		hRev, hSeq              *int64
		hHash, hCheck, hSummary *string
		hSaved                  *time.Time
		lOwner                  *string
		lEpoch                  *int64
		lExpires                *time.Time
		state                   []byte
	)
	if err := row.Scan(&rRev, &rSeq, &rHead, &rSummary, &rSaved, &state, &rCheck,
		&hRev, &hSeq, &hHash, &hCheck, &hSummary, &hSaved,
		&lOwner, &lEpoch, &lExpires, &r.now, &r.headLine, &r.recLine, &r.tail); err != nil {
		return runRow{}, err
	}
	r.now = r.now.UTC()
	if rRev != nil {
		r.exists = true
		r.st = store.StateRecord{RunID: id, Rev: *rRev, Head: store.Head{Seq: *rSeq, Hash: *rHead},
			Summary: textBytes(rSummary), SavedAt: rSaved.UTC(), State: state}
		r.check = *rCheck
	}
	if hRev != nil {
		r.rec = &store.HeadRecord{RunID: id, Rev: *hRev, Head: store.Head{Seq: *hSeq, Hash: *hHash},
			SavedAt: hSaved.UTC(), State: *hCheck, Summary: textBytes(hSummary)}
	}
	if lEpoch != nil {
		r.lease = store.LeaseRecord{Owner: *lOwner, Epoch: *lEpoch, Expires: lExpires.UTC()}
	}
	return r, nil
}

func textBytes(s *string) []byte {
	if s == nil {
		return nil
	}
	return []byte(*s)
}

func bytesText(b []byte) *string {
	if b == nil {
		return nil
	}
	s := string(b)
	return &s
}

// view is what inspect found.
type view struct {
	row      runRow
	recState string // store.HeadRecordMatch, Missing or Behind
	tail     store.Tail
	tailData []byte
}

func (v view) head() store.Head { return v.row.st.Head }

// inspect applies package store's rules (store/integrity.go, through
// store/records.go) to a run as read: the state row's check, the head
// event, the head record against the state, and the rows after the head.
func inspect(r runRow) (view, error) {
	id := r.id
	v := view{row: r}
	if !r.exists {
		if r.rec != nil {
			return v, store.RemovedRunError(*r.rec)
		}
		return v, notFound(id)
	}
	bad := func(part string, seq int64, format string, args ...any) (view, error) {
		return v, &store.CorruptError{RunID: id, Part: part, Seq: seq, Offset: -1, Reason: fmt.Sprintf(format, args...)}
	}
	if got := r.st.Check(); got != r.check {
		return bad(store.PartState, 0, "checksum mismatch: stored %s, computed %s: the state row was changed without its check", r.check, got)
	}
	head := r.st.Head
	if head.Seq == 0 && head.Hash != store.GenesisHash(id) {
		return bad(store.PartState, 0, "a run without events must have the genesis hash as its head")
	}
	if head.Seq > 0 {
		if r.headLine == nil {
			return bad(store.PartEvents, head.Seq, "the events table has no row for the head's seq %d: acknowledged events are missing", head.Seq)
		}
		if _, err := checkLine(id, head.Seq, []byte(*r.headLine), head.Hash); err != nil {
			return v, err
		}
	}
	state, err := store.JudgeHeadRecord(r.st, r.check, r.rec)
	if err != nil {
		return v, err
	}
	if state == store.HeadRecordBehind {
		if err := checkBehind(r); err != nil {
			return v, err
		}
	}
	v.recState = state
	v.tail.Chained = true
	if len(r.tail) > maxTailRows {
		return v, store.TailCorrupt(id, head, store.Tail{Reason: fmt.Sprintf("more than %d rows, far more than one write", maxTailRows)})
	}
	if len(r.tail) > 0 {
		for _, l := range r.tail {
			v.tailData = append(append(v.tailData, l...), '\n')
		}
		v.tail = store.ClassifyTail(v.tailData, head)
		if !v.tail.Chained {
			return v, store.TailCorrupt(id, head, v.tail)
		}
	}
	return v, nil
}

// checkLine checks the stored line of event seq: canonical, hashed, the
// seq it is stored under, the genesis hash before seq 1, and, when want is
// set, the hash the state or the next event expects.
func checkLine(id string, seq int64, line []byte, want string) (store.Event, error) {
	bad := func(format string, args ...any) (store.Event, error) {
		return store.Event{}, &store.CorruptError{RunID: id, Part: store.PartEvents, Seq: seq, Offset: -1, Reason: fmt.Sprintf(format, args...)}
	}
	ev, err := store.DecodeEvent(line)
	switch {
	case err != nil:
		return bad("%v", err)
	case ev.Seq != seq:
		return bad("the row of seq %d holds the event of seq %d", seq, ev.Seq)
	case seq == 1 && ev.PrevHash != store.GenesisHash(id):
		return bad("the first event's prevHash is not this run's genesis hash")
	case want != "" && ev.Hash != want:
		return bad("hash %s is not the hash %s that the state or the next event expects: the chain is broken", ev.Hash, want)
	}
	return ev, nil
}

// checkBehind confirms that a head record one write behind the state names
// an event of the chain.
func checkBehind(r runRow) error {
	rec := r.rec.Head
	bad := func(format string, args ...any) error {
		return &store.CorruptError{RunID: r.id, Part: store.PartHead, Seq: rec.Seq, Offset: -1, Reason: fmt.Sprintf(format, args...)}
	}
	switch {
	case rec.Seq == r.st.Head.Seq:
		if rec.Hash != r.st.Head.Hash {
			return bad("the head record names hash %s for seq %d, the events table has %s", rec.Hash, rec.Seq, r.st.Head.Hash)
		}
	case rec.Seq == 0:
		if rec.Hash != store.GenesisHash(r.id) {
			return bad("the head record names seq 0 with a hash other than the genesis hash")
		}
	case r.recLine == nil:
		return bad("the head record names seq %d, which the events table does not hold", rec.Seq)
	default:
		ev, err := store.DecodeEvent([]byte(*r.recLine))
		if err != nil || ev.Hash != rec.Hash {
			return bad("the head record names hash %s for seq %d, which the events table does not hold", rec.Hash, rec.Seq)
		}
	}
	return nil
}

// snapshot is the Snapshot of an inspected run.
func (v view) snapshot() *store.Snapshot {
	r := v.row
	return &store.Snapshot{RunID: r.id, State: r.st.State, Summary: r.st.Summary, Head: r.st.Head, Lease: r.lease.Active(r.now)}
}
