package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Events implements Store.
func (m *Memory) Events(ctx context.Context, runID string, afterSeq int64, limit int) ([]Event, error) {
	if err := ValidateRunID(runID); err != nil {
		return nil, err
	}
	if limit < 0 {
		return nil, fmt.Errorf("run %s: %w: negative limit %d", runID, ErrInvalidInput, limit)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r, err := m.run(runID)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	env := r.env
	if afterSeq < 0 || afterSeq > env.Seq {
		return nil, fmt.Errorf("run %s: %w: after seq %d, head is %d", runID, ErrSeqOutOfRange, afterSeq, env.Seq)
	}
	if int64(len(r.lines)) < env.Seq {
		return nil, &CorruptError{RunID: runID, Part: PartEvents, Offset: -1, Reason: fmt.Sprintf(
			"the event log holds %d events but the state acknowledges %d: acknowledged events are missing", len(r.lines), env.Seq)}
	}
	if limit > 0 && afterSeq+int64(limit) < env.Seq {
		return m.eventsWindow(runID, r, afterSeq, limit)
	}
	// Checked backwards from the head, as the file store reads.
	out := make([]Event, env.Seq-afterSeq)
	want := env.Head
	for seq := env.Seq; seq > afterSeq; seq-- {
		l := r.lines[seq-1]
		bad := func(reason string) error {
			return &CorruptError{RunID: runID, Part: PartEvents, Seq: seq, Offset: -1, Reason: reason}
		}
		switch {
		case l.err != nil:
			return nil, bad(l.err.Error())
		case l.ev.Seq != seq:
			return nil, bad(fmt.Sprintf("line holds seq %d", l.ev.Seq))
		case l.ev.Hash != want && seq == env.Seq:
			return nil, bad(fmt.Sprintf("hash %s is not the head %s recorded in the state", l.ev.Hash, env.Head))
		case l.ev.Hash != want:
			return nil, bad(fmt.Sprintf("hash %s is not the next event's prevHash %s: the chain is broken", l.ev.Hash, want))
		case seq == 1 && l.ev.PrevHash != genesisHash(runID):
			return nil, bad("the first event's prevHash is not this run's genesis hash")
		}
		out[seq-afterSeq-1] = cloneEvent(l.ev)
		want = l.ev.PrevHash
	}
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// eventsWindow is a page that ends before the head, checked as the file
// store checks one: forwards, linked to the hash the event before it
// records.
func (m *Memory) eventsWindow(runID string, r *memRun, afterSeq int64, limit int) ([]Event, error) {
	prev := genesisHash(runID)
	if afterSeq > 0 {
		h, err := lineHash(r.lines[afterSeq-1].raw)
		if err != nil {
			return nil, &CorruptError{RunID: runID, Part: PartEvents, Seq: afterSeq, Offset: -1, Reason: err.Error()}
		}
		prev = h
	}
	out := make([]Event, limit)
	for i := range out {
		seq := afterSeq + 1 + int64(i)
		l := r.lines[seq-1]
		bad := func(reason string) error {
			return &CorruptError{RunID: runID, Part: PartEvents, Seq: seq, Offset: -1, Reason: reason}
		}
		switch {
		case l.err != nil:
			return nil, bad(l.err.Error())
		case l.ev.Seq != seq:
			return nil, bad(fmt.Sprintf("line holds seq %d", l.ev.Seq))
		case l.ev.PrevHash != prev && seq == 1:
			return nil, bad("the first event's prevHash is not this run's genesis hash")
		case l.ev.PrevHash != prev:
			return nil, bad(fmt.Sprintf("prevHash %s is not the previous event's hash %s: the chain is broken", l.ev.PrevHash, prev))
		}
		out[i] = cloneEvent(l.ev)
		prev = l.ev.Hash
	}
	return out, nil
}

func cloneEvent(ev Event) Event {
	ev.Data = slices.Clone(ev.Data)
	return ev
}

// Event implements Store.
func (m *Memory) Event(ctx context.Context, runID string, seq int64) (Event, error) {
	if err := ValidateRunID(runID); err != nil {
		return Event{}, err
	}
	if err := ctx.Err(); err != nil {
		return Event{}, err
	}
	r, err := m.run(runID)
	if err != nil {
		return Event{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if seq < 1 || seq > r.env.Seq {
		return Event{}, fmt.Errorf("run %s: %w: seq %d, head is %d", runID, ErrSeqOutOfRange, seq, r.env.Seq)
	}
	bad := func(reason string) (Event, error) {
		return Event{}, &CorruptError{RunID: runID, Part: PartEvents, Seq: seq, Offset: -1, Reason: reason}
	}
	if int64(len(r.lines)) < seq {
		return bad("the event log does not hold this event")
	}
	l := r.lines[seq-1]
	switch {
	case l.err != nil:
		return bad(l.err.Error())
	case l.ev.Seq != seq:
		return bad(fmt.Sprintf("line holds seq %d", l.ev.Seq))
	case seq == 1 && l.ev.PrevHash != genesisHash(runID):
		return bad("the first event's prevHash is not this run's genesis hash")
	case seq == r.env.Seq && l.ev.Hash != r.env.Head:
		return bad(fmt.Sprintf("hash %s is not the head %s recorded in the state", l.ev.Hash, r.env.Head))
	}
	return cloneEvent(l.ev), nil
}

// List implements Store from the head records.
func (m *Memory) List(ctx context.Context) ([]RunInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]RunInfo, 0, len(m.heads))
	for id, rec := range m.heads {
		out = append(out, RunInfo{ID: id, UpdatedAt: rec.SavedAt, Head: rec.head(), Summary: slices.Clone(rec.Summary)})
	}
	for id, r := range m.runs {
		if _, ok := m.heads[id]; !ok {
			out = append(out, RunInfo{ID: id, UpdatedAt: r.env.SavedAt})
		}
	}
	slices.SortFunc(out, func(a, b RunInfo) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// Verify implements Store. It takes the run's lock, so it waits for a
// writer to finish.
func (m *Memory) Verify(ctx context.Context, runID string, opts VerifyOptions) (*VerifyReport, error) {
	if err := ValidateRunID(runID); err != nil {
		return nil, err
	}
	if err := checkAnchor(runID, opts.Head); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r, err := m.run(runID)
	if errors.Is(err, ErrRunNotFound) && opts.Head != "" {
		return nil, anchoredMissing(runID, opts.Head)
	}
	if err != nil {
		return nil, err
	}
	if err := m.acquire(ctx, runID, r); err != nil {
		return nil, err
	}
	defer r.release()
	m.mu.Lock()
	defer m.mu.Unlock()
	v, err := m.inspect(runID, r)
	if err != nil {
		return nil, err
	}
	rep := &VerifyReport{RunID: runID, StateBytes: len(r.env.State), HeadRecord: v.recState, Tail: v.tail}
	if err := m.walk(ctx, runID, r, opts.Head, rep); err != nil {
		return nil, err
	}
	if opts.Head != "" && rep.Anchor == nil {
		return nil, anchorMissing(runID, opts.Head, rep.Head)
	}
	rep.Checks = verifyChecks(r.env, rep, opts.Head)
	return rep, nil
}

// walk checks every acknowledged event from the genesis hash to the head
// and fills in the report, as the file store's walkLog does.
func (m *Memory) walk(ctx context.Context, runID string, r *memRun, anchor string, rep *VerifyReport) error {
	prev := genesisHash(runID)
	if anchor == prev {
		rep.Anchor = &Head{Seq: 0, Hash: prev}
	}
	for i := range r.env.Seq {
		if i%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		l, seq := r.lines[i], i+1
		bad := func(reason string) error {
			return &CorruptError{RunID: runID, Part: PartEvents, Seq: seq, Offset: -1, Reason: reason}
		}
		switch {
		case l.err != nil:
			return bad(l.err.Error())
		case l.ev.Seq != seq:
			return bad(fmt.Sprintf("line holds seq %d", l.ev.Seq))
		case l.ev.PrevHash != prev:
			return bad(fmt.Sprintf("prevHash %s is not the previous event's hash %s: the chain is broken", l.ev.PrevHash, prev))
		}
		if l.ev.Begin {
			rep.Writes++
		}
		if l.ev.Type == EventRepair {
			rp, err := m.checkRepair(r, l.ev)
			if err != nil {
				return bad(err.Error())
			}
			rep.Repairs = append(rep.Repairs, rp)
		}
		if anchor != "" && l.ev.Hash == anchor {
			rep.Anchor = &Head{Seq: seq, Hash: l.ev.Hash}
		}
		prev = l.ev.Hash
	}
	rep.Head, rep.Events = Head{Seq: r.env.Seq, Hash: prev}, r.env.Seq
	if prev != r.env.Head {
		return &CorruptError{RunID: runID, Part: PartEvents, Seq: r.env.Seq, Offset: -1, Reason: fmt.Sprintf(
			"the log's acknowledged part ends with hash %s, which is not the head %s recorded in the state", prev, r.env.Head)}
	}
	return nil
}

// checkRepair checks that the data a repair event kept aside is intact.
func (m *Memory) checkRepair(r *memRun, ev Event) (Repair, error) {
	rp, err := parseRepair(ev)
	if err != nil {
		return Repair{}, err
	}
	for _, k := range rp.Kept {
		data, ok := r.kept[k.Name]
		if !ok {
			return Repair{}, fmt.Errorf("the data the repair kept aside (%s) is missing", k.Name)
		}
		sum := sha256.Sum256(data)
		if got := hex.EncodeToString(sum[:]); int64(len(data)) != k.Bytes || got != k.SHA256 {
			return Repair{}, fmt.Errorf("the data the repair kept aside (%s) changed", k.Name)
		}
	}
	return rp, nil
}

// AcquireLease implements Store.
func (m *Memory) AcquireLease(ctx context.Context, runID, owner string, ttl time.Duration) (Lease, error) {
	if err := checkLeaseArgs(runID, owner, ttl); err != nil {
		return Lease{}, err
	}
	return m.leaseOp(ctx, runID, func(cur leaseRecord, now time.Time) (leaseRecord, error) {
		next, _, err := grantLease(runID, cur, owner, now, ttl)
		return next, err
	})
}

// RenewLease implements Store.
func (m *Memory) RenewLease(ctx context.Context, runID string, l Lease, ttl time.Duration) (Lease, error) {
	if err := checkLeaseArgs(runID, l.Owner, ttl); err != nil {
		return Lease{}, err
	}
	return m.leaseOp(ctx, runID, func(cur leaseRecord, now time.Time) (leaseRecord, error) {
		return renewLease(runID, cur, l, now, ttl)
	})
}

// ReleaseLease implements Store.
func (m *Memory) ReleaseLease(ctx context.Context, runID string, l Lease) error {
	_, err := m.leaseOp(ctx, runID, func(cur leaseRecord, now time.Time) (leaseRecord, error) {
		return releaseLease(runID, cur, l)
	})
	return err
}

// leaseOp applies decide to a run's lease under Memory.mu (never the run's
// lock: leases do not wait for writers).
func (m *Memory) leaseOp(ctx context.Context, runID string, decide func(leaseRecord, time.Time) (leaseRecord, error)) (Lease, error) {
	if err := ValidateRunID(runID); err != nil {
		return Lease{}, err
	}
	if err := ctx.Err(); err != nil {
		return Lease{}, err
	}
	r, err := m.run(runID)
	if err != nil {
		return Lease{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	next, err := decide(r.lease, leaseNow())
	if err != nil {
		return Lease{}, err
	}
	r.lease = next
	return next.lease(), nil
}
