package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
)

// events.idx maps seqs to offsets: entry seq-1 (8 bytes, little endian)
// is where the line of event seq starts in events.jsonl. It is derived
// data, written after each write is durable and never fsynced: Event
// checks every line it finds through it and falls back to bisecting the
// log when the index is short or stale, and the next Update rebuilds an
// index that does not end at the head (docs/storage.md, "Reading").
const indexEntrySize = 8

// maxEventLine bounds a line found through the index before it is read.
const maxEventLine = 256 << 20

// eventAt returns event seq (1..env.Seq) of the log f, checked alone: its
// line is found through the index or by bisection ([FileStore.lineOf]).
func (s *FileStore) eventAt(id string, env envelope, f io.ReaderAt, seq int64) (Event, error) {
	line, end, err := s.lineOf(id, env, f, seq)
	if err != nil {
		return Event{}, err
	}
	off := end - int64(len(line)) - 1
	ev, err := decodeEvent(line)
	if err != nil {
		return Event{}, s.corrupt(id, eventsFile, seq, off, err.Error())
	}
	if ev.Seq != seq {
		return Event{}, s.corrupt(id, eventsFile, seq, off, fmt.Sprintf("line holds seq %d", ev.Seq))
	}
	return ev, nil
}

// indexLookup returns the byte range of event seq's line as the index
// records it, if the index has a plausible one.
func (s *FileStore) indexLookup(id string, env envelope, seq int64) (off, end int64, ok bool) {
	f, err := openSmall(s.runPath(id, indexFile), os.O_RDONLY, 0)
	if err != nil {
		return 0, 0, false
	}
	defer f.Close()
	var buf [2 * indexEntrySize]byte
	n := 2 * indexEntrySize
	if seq == env.Seq {
		n = indexEntrySize
	}
	if _, err := f.ReadAt(buf[:n], (seq-1)*indexEntrySize); err != nil {
		return 0, 0, false
	}
	off, end = int64(binary.LittleEndian.Uint64(buf[:])), env.LogSize
	if seq < env.Seq {
		end = int64(binary.LittleEndian.Uint64(buf[indexEntrySize:]))
	}
	if off < 0 || end <= off || end > env.LogSize || end-off > maxEventLine {
		return 0, 0, false
	}
	return off, end, true
}

// bisectWindow is the span below which bisectLog reads lines in order.
const bisectWindow = 32 << 10

// bisectLog finds the byte range of event seq's line among the first
// logSize bytes of the log by bisection over line starts (each line's seq
// is read from its canonical end), reading O(log n) small windows.
func bisectLog(f io.ReaderAt, logSize, seq int64) (off, end int64, err error) {
	lo, hi := int64(0), logSize // the line of seq starts in [lo, hi)
	for hi-lo > bisectWindow {
		mid := lo + (hi-lo)/2
		start, line, err := lineFrom(f, mid, logSize)
		if err != nil {
			return 0, 0, err
		}
		if start >= hi {
			hi = mid
			continue
		}
		got, err := lineSeq(line)
		if err != nil {
			return 0, 0, fmt.Errorf("line at byte %d: %v", start, err)
		}
		switch {
		case got == seq:
			return start, start + int64(len(line)) + 1, nil
		case got < seq:
			lo = start
		default:
			hi = start
		}
	}
	for pos := lo; pos < logSize; {
		start, line, err := lineFrom(f, pos, logSize)
		if err != nil {
			return 0, 0, err
		}
		got, err := lineSeq(line)
		if err != nil {
			return 0, 0, fmt.Errorf("line at byte %d: %v", start, err)
		}
		if got == seq {
			return start, start + int64(len(line)) + 1, nil
		}
		if got > seq || start >= hi {
			break
		}
		pos = start + int64(len(line)) + 1
	}
	return 0, 0, fmt.Errorf("no line of the log holds seq %d", seq)
}

// lineFrom returns the first line starting at or after pos (pos itself
// when pos is 0 or follows a newline), without its newline.
func lineFrom(f io.ReaderAt, pos, limit int64) (int64, []byte, error) {
	start := pos
	if pos > 0 {
		nl, err := indexFrom(f, pos-1, limit)
		if err != nil {
			return 0, nil, err
		}
		start = nl + 1
	}
	if start >= limit {
		return start, nil, nil
	}
	nl, err := indexFrom(f, start, limit)
	if err != nil {
		return 0, nil, err
	}
	line := make([]byte, nl-start)
	if _, err := f.ReadAt(line, start); err != nil {
		return 0, nil, fmt.Errorf("read event log: %w", err)
	}
	return start, line, nil
}

// indexFrom returns the offset of the first newline at or after pos.
func indexFrom(f io.ReaderAt, pos, limit int64) (int64, error) {
	buf := make([]byte, 4<<10)
	for pos < limit {
		n := min(int64(len(buf)), limit-pos)
		if _, err := f.ReadAt(buf[:n], pos); err != nil {
			return 0, fmt.Errorf("read event log: %w", err)
		}
		if i := bytes.IndexByte(buf[:n], '\n'); i >= 0 {
			return pos + int64(i), nil
		}
		pos += n
		if len(buf) < 1<<20 {
			buf = make([]byte, 4*len(buf))
		}
	}
	return 0, errors.New("the acknowledged part of the log does not end with a newline")
}

// lineSeq reads the seq of a canonical event line from its end
// (`,"seq":N,"type":"T"}`) without decoding it.
func lineSeq(line []byte) (int64, error) {
	i := bytes.LastIndex(line, []byte(`,"seq":`))
	if i < 0 {
		return 0, errors.New("not an event line")
	}
	rest := line[i+len(`,"seq":`):]
	j := bytes.IndexByte(rest, ',')
	if j < 0 {
		return 0, errors.New("not an event line")
	}
	n, err := strconv.ParseInt(string(rest[:j]), 10, 64)
	if err != nil {
		return 0, errors.New("not an event line")
	}
	return n, nil
}

// appendIndex records the lines of a durable write in the index: at is
// where the write's lines start in the log. The index must end at the
// head the write followed (its last entry is headOffset); otherwise it is
// rebuilt from the log. Failures are ignored: the index is an
// accelerator, and readers check what it points to.
func (s *FileStore) appendIndex(id string, rf runFS, prev envelope, headOffset int64, w encodedWrite, at int64) {
	if len(w.at) == 0 {
		return
	}
	f, err := rf.open(indexFile, os.O_RDWR|os.O_CREATE, filePerm)
	if err != nil {
		return
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return
	}
	want := prev.Seq * indexEntrySize
	entries := make([]byte, 0, len(w.at)*indexEntrySize)
	for _, o := range w.at {
		entries = binary.LittleEndian.AppendUint64(entries, uint64(at+o))
	}
	valid := size >= want
	if valid && prev.Seq > 0 {
		var last [indexEntrySize]byte
		_, err := f.ReadAt(last[:], want-indexEntrySize)
		valid = err == nil && int64(binary.LittleEndian.Uint64(last[:])) == headOffset
	}
	if !valid {
		old, err := scanLineStarts(s.runPath(id, eventsFile), prev.LogSize)
		if err != nil || int64(len(old)) != want {
			f.Truncate(0)
			return
		}
		entries = append(old, entries...)
		want = 0
	}
	if _, err := f.WriteAt(entries, want); err != nil {
		return
	}
	if end := want + int64(len(entries)); size > end {
		f.Truncate(end)
	}
}

// scanLineStarts returns the index entries of the first size bytes of a
// log.
func scanLineStarts(path string, size int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []byte
	next := int64(0) // where the next line starts
	buf := make([]byte, 1<<20)
	for pos := int64(0); pos < size; {
		n := min(int64(len(buf)), size-pos)
		if _, err := f.ReadAt(buf[:n], pos); err != nil {
			return nil, err
		}
		for b := buf[:n]; ; {
			i := bytes.IndexByte(b, '\n')
			if i < 0 {
				break
			}
			out = binary.LittleEndian.AppendUint64(out, uint64(next))
			next = pos + n - int64(len(b)) + int64(i) + 1
			b = b[i+1:]
		}
		pos += n
	}
	return out, nil
}
