package store

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// firstReadWindow is the first amount read backwards from the head; typical
// events are far smaller, so one read usually finds the head line.
const firstReadWindow = 8 << 10

// logLine is one event line of the log and where it starts.
type logLine struct {
	text   []byte // without the newline
	offset int64
}

// lastLines returns up to n complete lines of the log that end exactly at
// byte end (which must follow a newline), in file order. It reads
// backwards in growing windows, so its cost is proportional to the bytes of
// those lines, not to the size of the log. Fewer than n lines come back
// only when the log has fewer.
func lastLines(r io.ReaderAt, end int64, n int64) ([]logLine, error) {
	if n <= 0 || end == 0 {
		return nil, nil
	}
	window := int64(firstReadWindow)
	for {
		start := max(0, end-window)
		buf := make([]byte, end-start)
		if _, err := r.ReadAt(buf, start); err != nil {
			return nil, fmt.Errorf("read event log: %w", err)
		}
		if buf[len(buf)-1] != '\n' {
			return nil, errors.New("the acknowledged part of the log does not end with a newline")
		}
		// Walk back over newlines; each one (except the last byte's) ends
		// the line before the one that follows it.
		var lines []logLine
		stop := len(buf) - 1 // index of the newline ending the current line
		for int64(len(lines)) < n {
			i := bytes.LastIndexByte(buf[:stop], '\n')
			if i < 0 {
				if start > 0 {
					break // this line may start before the window
				}
				lines = append(lines, logLine{text: buf[:stop], offset: start})
				break
			}
			lines = append(lines, logLine{text: buf[i+1 : stop], offset: start + int64(i) + 1})
			stop = i
		}
		if int64(len(lines)) == n || start == 0 {
			for i, j := 0, len(lines)-1; i < j; i, j = i+1, j-1 {
				lines[i], lines[j] = lines[j], lines[i]
			}
			return lines, nil
		}
		window *= 4
	}
}

// firstLines returns up to n complete lines of the log starting at byte
// off (the start of a line) and ending at or before end, in file order,
// reading forwards in growing windows.
func firstLines(r io.ReaderAt, off, end int64, n int64) ([]logLine, error) {
	var lines []logLine
	window := int64(firstReadWindow)
	for int64(len(lines)) < n && off < end {
		buf := make([]byte, min(window, end-off))
		if _, err := r.ReadAt(buf, off); err != nil {
			return nil, fmt.Errorf("read event log: %w", err)
		}
		used := 0
		for int64(len(lines)) < n {
			i := bytes.IndexByte(buf[used:], '\n')
			if i < 0 {
				break
			}
			lines = append(lines, logLine{text: buf[used : used+i], offset: off + int64(used)})
			used += i + 1
		}
		if used == 0 {
			if off+int64(len(buf)) == end {
				return nil, errors.New("the acknowledged part of the log does not end with a newline")
			}
			window *= 4 // one line longer than the window
			continue
		}
		off += int64(used)
	}
	return lines, nil
}

// checkChainForward verifies lines that must be the events first,
// first+1, ... of runID, the first following an event whose hash is prev
// (the genesis hash before event 1): every line decodes and hashes, the
// seqs are consecutive, and each prevHash is the hash before it.
func checkChainForward(runID string, lines []logLine, first int64, prev string) ([]Event, *CorruptError) {
	events := make([]Event, len(lines))
	for i, l := range lines {
		wantSeq := first + int64(i)
		bad := func(reason string) *CorruptError {
			return &CorruptError{RunID: runID, Part: PartEvents, Seq: wantSeq, Offset: l.offset, Reason: reason}
		}
		ev, err := decodeEvent(l.text)
		if err != nil {
			return nil, bad(err.Error())
		}
		if ev.Seq != wantSeq {
			return nil, bad(fmt.Sprintf("line holds seq %d", ev.Seq))
		}
		if ev.PrevHash != prev {
			if ev.Seq == 1 {
				return nil, bad("the first event's prevHash is not this run's genesis hash")
			}
			return nil, bad(fmt.Sprintf("prevHash %s is not the previous event's hash %s: the chain is broken", ev.PrevHash, prev))
		}
		events[i] = ev
		prev = ev.Hash
	}
	return events, nil
}

// checkChainBack verifies lines that must be the events seq-len+1..seq of
// the run whose head is (seq, headHash): every line decodes and hashes
// correctly, the seqs are consecutive, each hash is the next one's
// prevHash, the last hash is the head's, and if the first is event 1 its
// prevHash is the run's genesis hash. It returns the decoded events.
func checkChainBack(runID string, lines []logLine, seq int64, headHash string) ([]Event, *CorruptError) {
	events := make([]Event, len(lines))
	want := headHash
	for i := len(lines) - 1; i >= 0; i-- {
		wantSeq := seq - int64(len(lines)-1-i)
		bad := func(reason string) *CorruptError {
			return &CorruptError{RunID: runID, Part: PartEvents, Seq: wantSeq, Offset: lines[i].offset, Reason: reason}
		}
		ev, err := decodeEvent(lines[i].text)
		if err != nil {
			return nil, bad(err.Error())
		}
		if ev.Seq != wantSeq {
			return nil, bad(fmt.Sprintf("line holds seq %d", ev.Seq))
		}
		if ev.Hash != want {
			if i == len(lines)-1 {
				return nil, bad(fmt.Sprintf("hash %s is not the head %s recorded in the state", ev.Hash, headHash))
			}
			return nil, bad(fmt.Sprintf("hash %s is not the next event's prevHash %s: the chain is broken", ev.Hash, want))
		}
		if ev.Seq == 1 && ev.PrevHash != genesisHash(runID) {
			return nil, bad("the first event's prevHash is not this run's genesis hash")
		}
		events[i] = ev
		want = ev.PrevHash
	}
	return events, nil
}

// maxTailRead bounds the data after a head that is read to classify it.
// One interrupted write leaves at most one write's events; a tail beyond
// this size is not one.
const maxTailRead = 64 << 20
