package store

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"
)

// Memory is an in-memory Store with the file store's semantics: the same
// canonical event lines and hashes, write marks, state revisions, an
// independent head record per run, the same integrity and repair rules
// (integrity.go), per-run locks with the same timeout and ErrLocked,
// leases, summaries. It keeps everything in this process and fsyncs
// nothing, so tests of the engine run on it without paying for disks.
// Its Tamper methods change stored data the way someone with access to a
// backend's storage could, for contract tests (package storetest).
type Memory struct {
	lockTimeout time.Duration

	mu    sync.Mutex
	runs  map[string]*memRun
	heads map[string]headRecord // kept apart from runs: RemoveRun leaves them
}

// memRun is one run. Its fields change only under both the run's lock
// and Memory.mu; readers take Memory.mu alone.
type memRun struct {
	lock  chan struct{} // capacity 1: the run's exclusive lock
	env   envelope      // the "state part": LogSize is unused, Seq counts acknowledged lines
	lines []memLine     // the log: acknowledged lines, then any tail
	torn  []byte        // an incomplete line after lines (only by AppendLog)
	kept  map[string][]byte
	lease leaseRecord
}

// memLine is a stored event line (without its newline), decoded once.
type memLine struct {
	raw []byte
	ev  Event
	err error
}

func newMemLine(raw []byte) memLine {
	ev, err := decodeEvent(raw)
	return memLine{raw: raw, ev: ev, err: err}
}

var _ Store = (*Memory)(nil)

// NewMemory returns an empty in-memory store with DefaultLockTimeout.
func NewMemory() *Memory { return NewMemoryWithTimeout(DefaultLockTimeout) }

// NewMemoryWithTimeout returns an empty in-memory store whose Update waits
// at most lockTimeout for a run's lock (non-positive means
// DefaultLockTimeout).
func NewMemoryWithTimeout(lockTimeout time.Duration) *Memory {
	if lockTimeout <= 0 {
		lockTimeout = DefaultLockTimeout
	}
	return &Memory{lockTimeout: lockTimeout, runs: map[string]*memRun{}, heads: map[string]headRecord{}}
}

// acquire takes r's lock, waiting at most the lock timeout.
func (m *Memory) acquire(ctx context.Context, id string, r *memRun) error {
	select {
	case r.lock <- struct{}{}:
		return nil
	default:
	}
	start := time.Now()
	t := time.NewTimer(m.lockTimeout)
	defer t.Stop()
	select {
	case r.lock <- struct{}{}:
		return nil
	case <-t.C:
		return &LockedError{RunID: id, PID: os.Getpid(), Waited: time.Since(start)}
	case <-ctx.Done():
		return fmt.Errorf("run %s: waiting for the lock: %w", id, ctx.Err())
	}
}

func (r *memRun) release() { <-r.lock }

// run returns the run with id, or the error for a missing one.
func (m *Memory) run(id string) (*memRun, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.runs[id]
	if !ok {
		if rec, have := m.heads[id]; have {
			return nil, removedRun(id, rec)
		}
		return nil, notFound(id)
	}
	return r, nil
}

// Create implements Store.
func (m *Memory) Create(ctx context.Context, runID string, c Change) (Head, error) {
	if err := ValidateRunID(runID); err != nil {
		return Head{}, err
	}
	if err := ctx.Err(); err != nil {
		return Head{}, err
	}
	if c.State == nil {
		return Head{}, fmt.Errorf("run %s: %w: Create needs a state document", runID, ErrInvalidInput)
	}
	p, err := prepareChange(runID, &c)
	if err != nil {
		return Head{}, err
	}
	w, err := encodeWrite(runID, Head{Hash: genesisHash(runID)}, nil, p.events)
	if err != nil {
		return Head{}, err
	}
	env := envelope{Version: 2, RunID: runID, Seq: w.head.Seq, Head: w.head.Hash, Rev: 1,
		Summary: slices.Clone(p.summary), SavedAt: time.Now().UTC(), State: slices.Clone(p.state)}
	sealEnvelope(&env) // for its check, which the head record carries
	r := &memRun{lock: make(chan struct{}, 1), env: env, lines: storedLines(w), kept: map[string][]byte{}}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.runs[runID]; ok {
		return Head{}, fmt.Errorf("run %s: %w", runID, ErrRunExists)
	}
	if _, ok := m.heads[runID]; ok {
		return Head{}, fmt.Errorf("run %s: %w: its data was removed but its head record remains", runID, ErrRunExists)
	}
	m.runs[runID] = r
	m.heads[runID] = recordOf(env)
	return w.head, nil
}

// storedLines turns an encoded write into stored lines, decoded already.
func storedLines(w encodedWrite) []memLine {
	out := make([]memLine, len(w.events))
	for i, ev := range w.events {
		end := len(w.lines)
		if i+1 < len(w.at) {
			end = int(w.at[i+1])
		}
		out[i] = memLine{raw: w.lines[w.at[i] : end-1 : end-1], ev: ev}
	}
	return out
}

// memView is what inspect found: the same facts as the file store's
// runView.
type memView struct {
	env      envelope
	recState string
	hasRec   bool
	tail     Tail
	tailData []byte
}

func (v memView) head() Head { return Head{Seq: v.env.Seq, Hash: v.env.Head} }

// inspect applies the rules of integrity.go to r; the caller holds m.mu.
func (m *Memory) inspect(id string, r *memRun) (memView, error) {
	v := memView{env: r.env}
	rec, have := m.heads[id]
	v.hasRec = have
	if int64(len(r.lines)) < r.env.Seq {
		return v, &CorruptError{RunID: id, Part: PartEvents, Offset: -1, Reason: fmt.Sprintf(
			"the event log holds %d events but the state acknowledges %d: acknowledged events are missing", len(r.lines), r.env.Seq)}
	}
	if r.env.Seq > 0 {
		l := r.lines[r.env.Seq-1]
		switch {
		case l.err != nil:
			return v, &CorruptError{RunID: id, Part: PartEvents, Seq: r.env.Seq, Offset: -1, Reason: l.err.Error()}
		case l.ev.Seq != r.env.Seq:
			return v, &CorruptError{RunID: id, Part: PartEvents, Seq: r.env.Seq, Offset: -1, Reason: fmt.Sprintf("line holds seq %d", l.ev.Seq)}
		case l.ev.Hash != r.env.Head:
			return v, &CorruptError{RunID: id, Part: PartEvents, Seq: r.env.Seq, Offset: -1, Reason: fmt.Sprintf("hash %s is not the head %s recorded in the state", l.ev.Hash, r.env.Head)}
		case l.ev.Seq == 1 && l.ev.PrevHash != genesisHash(id):
			return v, &CorruptError{RunID: id, Part: PartEvents, Seq: 1, Offset: -1, Reason: "the first event's prevHash is not this run's genesis hash"}
		}
	}
	state, ce := judgeRecord(id, r.env, rec, have)
	if ce != nil {
		return v, ce
	}
	if state == HeadRecordBehind && rec.Seq > 0 {
		if l := r.lines[rec.Seq-1]; l.err != nil || l.ev.Hash != rec.Hash {
			return v, &CorruptError{RunID: id, Part: PartHead, Seq: rec.Seq, Offset: -1, Reason: fmt.Sprintf("the head record names hash %s for seq %d, which the log does not hold", rec.Hash, rec.Seq)}
		}
	}
	v.recState = state
	v.tail.Chained = true
	if int64(len(r.lines)) > r.env.Seq || len(r.torn) > 0 {
		for _, l := range r.lines[r.env.Seq:] {
			v.tailData = append(append(v.tailData, l.raw...), '\n')
		}
		v.tailData = append(v.tailData, r.torn...)
		v.tail = classifyTail(v.tailData, v.head())
		if !v.tail.Chained {
			env := r.env
			env.LogSize = -1
			return v, tailCorrupt(id, env, v.tail)
		}
	}
	return v, nil
}

// Load implements Store.
func (m *Memory) Load(ctx context.Context, runID string) (*Snapshot, error) {
	if err := ValidateRunID(runID); err != nil {
		return nil, err
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
	v, err := m.inspect(runID, r)
	if err != nil {
		return nil, err
	}
	if v.recState == HeadRecordBehind { // as the file store does when the lock is free
		m.heads[runID] = recordOf(r.env)
	}
	return &Snapshot{RunID: runID, State: slices.Clone(r.env.State), Summary: slices.Clone(r.env.Summary), Head: v.head(), Lease: r.lease.active(leaseNow())}, nil
}

// Update implements Store.
func (m *Memory) Update(ctx context.Context, runID string, fn func(cur *Snapshot) (*Change, error)) (Head, error) {
	if err := ValidateRunID(runID); err != nil {
		return Head{}, err
	}
	if err := ctx.Err(); err != nil {
		return Head{}, err
	}
	r, err := m.run(runID)
	if err != nil {
		return Head{}, err
	}
	if err := m.acquire(ctx, runID, r); err != nil {
		return Head{}, err
	}
	defer r.release()

	m.mu.Lock()
	if _, ok := m.runs[runID]; !ok { // removed while we waited
		m.mu.Unlock()
		_, err := m.run(runID)
		return Head{}, err
	}
	v, err := m.inspect(runID, r)
	if err == nil && v.recState == HeadRecordBehind {
		m.heads[runID] = recordOf(r.env)
	}
	snap := &Snapshot{RunID: runID, State: slices.Clone(r.env.State), Summary: slices.Clone(r.env.Summary), Lease: r.lease.active(leaseNow())}
	m.mu.Unlock()
	if err != nil {
		return Head{}, err
	}
	cur := v.head()
	var pre []NewEvent
	var kept KeptTail
	snap.Head = cur
	if v.tail.Bytes > 0 {
		kept = keptTail(keptName(cur.Seq, 1), v.tailData, v.tail)
		pre = []NewEvent{repairEvent(runID, cur.Seq+1, []KeptTail{kept}, time.Now())}
		_, hash, err := encodeEvent(cur.Seq+1, cur.Hash, pre[0], true)
		if err != nil {
			return Head{}, fmt.Errorf("run %s: repair event: %w", runID, err)
		}
		snap.Head = Head{Seq: cur.Seq + 1, Hash: hash}
	}
	change, err := fn(snap)
	if err != nil {
		return Head{}, err
	}
	if change.empty() {
		return cur, nil
	}
	p, err := prepareChange(runID, change)
	if err != nil {
		return Head{}, err
	}
	w, err := encodeWrite(runID, cur, pre, p.events)
	if err != nil {
		return Head{}, err
	}
	next := r.env
	next.Version, next.Rev, next.SavedAt = 2, r.env.Rev+1, time.Now().UTC()
	next.Seq, next.Head = w.head.Seq, w.head.Hash
	if p.state != nil {
		next.State = slices.Clone(p.state)
	}
	if p.summary != nil {
		next.Summary = slices.Clone(p.summary)
	}
	sealEnvelope(&next)
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(pre) > 0 {
		r.kept[kept.Name] = v.tailData
		r.lines, r.torn = r.lines[:cur.Seq], nil
	}
	r.lines = append(r.lines, storedLines(w)...)
	r.env = next
	m.heads[runID] = recordOf(next)
	return w.head, nil
}
