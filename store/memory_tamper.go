package store

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
)

// The methods in this file change a Memory store's data behind its back,
// the way someone with write access to a backend's storage could. They
// exist for tests (storetest.Tamperer): they take no run lock and check
// nothing.

// TamperEvent replaces the stored line of event seq (without its newline)
// with edit's result; a nil result deletes the line.
func (m *Memory) TamperEvent(runID string, seq int64, edit func(stored []byte) []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.runs[runID]
	if !ok || seq < 1 || seq > int64(len(r.lines)) {
		return fmt.Errorf("tamper: run %s has no stored line for seq %d", runID, seq)
	}
	out := edit(slices.Clone(r.lines[seq-1].raw))
	if out == nil {
		r.lines = slices.Delete(r.lines, int(seq-1), int(seq))
		return nil
	}
	r.lines[seq-1] = newMemLine(out)
	return nil
}

// AppendLog appends raw bytes after a run's log, as a stray writer could:
// complete lines become stored lines, a last incomplete one a torn line.
func (m *Memory) AppendLog(runID string, data []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.runs[runID]
	if !ok {
		return fmt.Errorf("tamper: no run %s", runID)
	}
	data = append(slices.Clone(r.torn), data...)
	r.torn = nil
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		r.lines = append(r.lines, newMemLine(slices.Clone(data[:i])))
		data = data[i+1:]
	}
	if len(data) > 0 {
		r.torn = data
	}
	return nil
}

// SaveParts captures the named parts of a run (PartState, PartEvents,
// PartHead) as they are now; restore puts exactly those back, leaving the
// other parts as they are then: a rollback of one part, or of several.
func (m *Memory) SaveParts(runID string, parts ...string) (restore func() error, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.runs[runID]
	if !ok {
		return nil, fmt.Errorf("tamper: no run %s", runID)
	}
	env := r.env
	env.State, env.Summary = slices.Clone(env.State), slices.Clone(env.Summary)
	lines, torn, kept := slices.Clone(r.lines), slices.Clone(r.torn), maps.Clone(r.kept)
	rec, haveRec := m.heads[runID]
	for _, p := range parts {
		if p != PartState && p != PartEvents && p != PartHead {
			return nil, fmt.Errorf("tamper: unknown part %q", p)
		}
	}
	return func() error {
		m.mu.Lock()
		defer m.mu.Unlock()
		cur, ok := m.runs[runID]
		if !ok {
			cur = &memRun{lock: make(chan struct{}, 1), kept: map[string][]byte{}}
			m.runs[runID] = cur
		}
		for _, p := range parts {
			switch p {
			case PartState:
				cur.env = env
			case PartEvents:
				cur.lines, cur.torn, cur.kept = slices.Clone(lines), slices.Clone(torn), maps.Clone(kept)
			case PartHead:
				if haveRec {
					m.heads[runID] = rec
				} else {
					delete(m.heads, runID)
				}
			}
		}
		return nil
	}, nil
}

// RemoveRun deletes a run's data (state, events, lease) and, with
// headRecordToo, its head record as well.
func (m *Memory) RemoveRun(runID string, headRecordToo bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.runs[runID]; !ok {
		return fmt.Errorf("tamper: no run %s", runID)
	}
	delete(m.runs, runID)
	if headRecordToo {
		delete(m.heads, runID)
	}
	return nil
}
