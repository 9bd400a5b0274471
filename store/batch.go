package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// checkStateDoc is the store's whole check of a state document: a JSON
// object by its first and last bytes. A full validation (json.Valid) costs
// about 13 µs per KiB on every update and guards nothing the store relies
// on: the envelope is parsed by its layout, and the engine that wrote the
// document is the one that decodes it (docs/storage.md, "Writing").
func checkStateDoc(runID string, b []byte) error {
	if len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' {
		return fmt.Errorf("run %s: %w: state must be a JSON object", runID, ErrInvalidInput)
	}
	return nil
}

// normalizeSummary validates a summary and returns it compacted.
func normalizeSummary(runID string, b json.RawMessage) ([]byte, error) {
	if len(b) > 4*MaxSummaryBytes { // before compacting: no need to scan a megabyte
		return nil, fmt.Errorf("run %s: %w: summary is %d bytes, at most %d allowed", runID, ErrInvalidInput, len(b), MaxSummaryBytes)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return nil, fmt.Errorf("run %s: %w: summary is not valid JSON: %v", runID, ErrInvalidInput, err)
	}
	c := buf.Bytes()
	if len(c) == 0 || c[0] != '{' {
		return nil, fmt.Errorf("run %s: %w: summary must be a JSON object", runID, ErrInvalidInput)
	}
	if len(c) > MaxSummaryBytes {
		return nil, fmt.Errorf("run %s: %w: summary is %d bytes compacted, at most %d allowed", runID, ErrInvalidInput, len(c), MaxSummaryBytes)
	}
	return c, nil
}

// prepared is a validated change: nil state or summary keeps the current
// one.
type prepared struct {
	state   []byte
	summary []byte
	events  []NewEvent
}

// prepareChange checks everything about a change that does not depend on
// the run, so a bad change is refused before anything is written.
func prepareChange(runID string, c *Change) (prepared, error) {
	p := prepared{state: c.State, events: c.Events}
	if c.State != nil {
		if err := checkStateDoc(runID, c.State); err != nil {
			return prepared{}, err
		}
	}
	if c.Summary != nil {
		s, err := normalizeSummary(runID, c.Summary)
		if err != nil {
			return prepared{}, err
		}
		p.summary = s
	}
	for i, e := range c.Events {
		if strings.HasPrefix(e.Type, storeTypePrefix) {
			return prepared{}, fmt.Errorf("run %s: event %d: %w: type %q: types beginning with %q are the store's own", runID, i, ErrInvalidInput, e.Type, storeTypePrefix)
		}
	}
	return p, nil
}

// encodedWrite is one write's events as stored lines.
type encodedWrite struct {
	lines  []byte  // the lines, each ending with '\n'
	at     []int64 // offset of each line within lines
	events []Event // the events as Events reads them back
	head   Head    // the head after the write
}

// encodeWrite encodes the store's own events pre, then the caller's
// events, as one write after head: the first event is marked as the
// beginning of a write (docs/storage.md, "Write boundaries").
func encodeWrite(runID string, head Head, pre, events []NewEvent) (encodedWrite, error) {
	n := len(pre) + len(events)
	w := encodedWrite{head: head, at: make([]int64, 0, n)}
	for i := range n {
		e, idx := NewEvent{}, i
		if i < len(pre) {
			e = pre[i]
		} else {
			idx = i - len(pre)
			e = events[idx]
		}
		ev, line, err := encodeStored(w.head.Seq+1, w.head.Hash, e, i == 0)
		if err != nil {
			return encodedWrite{}, fmt.Errorf("run %s: event %d: %w", runID, idx, err)
		}
		w.at = append(w.at, int64(len(w.lines)))
		w.lines = append(append(w.lines, line...), '\n')
		w.events = append(w.events, ev)
		w.head = Head{Seq: ev.Seq, Hash: ev.Hash}
	}
	return w, nil
}

// repairData is the data of an EventRepair event. Run and Seq repeat
// where the kept data was found, so the kept files can be matched to
// their run even when moved; Detail follows the engine's event layout so
// that audits show it.
type repairData struct {
	Detail struct {
		Kept   []KeptTail `json:"kept"`
		Reason string     `json:"reason"`
	} `json:"detail"`
	Run string `json:"run"`
	Seq int64  `json:"seq"`
}

// repairEvent records that kept were kept aside; seq is the event's own.
func repairEvent(runID string, seq int64, kept []KeptTail, at time.Time) NewEvent {
	var d repairData
	d.Detail.Kept = kept
	d.Detail.Reason = "data found after the run's head, left by an interrupted write, was kept aside instead of deleted"
	d.Run, d.Seq = runID, seq
	b, _ := json.Marshal(d) // cannot fail: strings and numbers
	return NewEvent{Type: EventRepair, At: at, Data: b}
}

// parseRepair reads an EventRepair event's data.
func parseRepair(ev Event) (Repair, error) {
	var d repairData
	if err := json.Unmarshal(ev.Data, &d); err != nil {
		return Repair{}, fmt.Errorf("repair event data: %v", err)
	}
	if d.Seq != ev.Seq || len(d.Detail.Kept) == 0 {
		return Repair{}, fmt.Errorf("repair event names seq %d and %d kept tails", d.Seq, len(d.Detail.Kept))
	}
	return Repair{Seq: ev.Seq, Kept: d.Detail.Kept}, nil
}
