package store

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
)

// firstReadWindow is the first amount read backwards from the head (or
// forwards for a page); typical events are far smaller, so one read
// usually finds the head line.
const firstReadWindow = 8 << 10

// spareReadBuffer is a buffer lines were read into, kept for the next
// read: a reader paging through a log (stratum audit) reads every page
// into the same buffer. One slot, not a sync.Pool: a pool is emptied by
// every collection, and reading pages makes several.
var spareReadBuffer atomic.Pointer[[]byte]

// maxSpareRead bounds the buffer kept; a larger one (a page of large
// events) is left to the collector.
const maxSpareRead = 1 << 20

// getReadBuffer returns the spare buffer (or a new one), of length 0.
func getReadBuffer() *[]byte {
	if p := spareReadBuffer.Swap(nil); p != nil {
		*p = (*p)[:0]
		return p
	}
	return new([]byte)
}

// growReadBuffer makes *p n bytes long, keeping its contents, and returns
// it. A buffer that must grow grows by a quarter more than asked, so that
// the next page, a little longer, fits it too.
func growReadBuffer(p *[]byte, n int) []byte {
	if cap(*p) < n {
		b := make([]byte, len(*p), n+n/4)
		copy(b, *p)
		*p = b
	}
	*p = (*p)[:n]
	return *p
}

// putReadBuffer keeps a buffer from getReadBuffer for the next read once
// nothing aliases it. A nil p is ignored.
func putReadBuffer(p *[]byte) {
	if p != nil && cap(*p) <= maxSpareRead {
		spareReadBuffer.Store(p)
	}
}

// logLine is one event line of the log and where it starts.
type logLine struct {
	text   []byte // without the newline
	offset int64
}

// Lines are read into a buffer from [getReadBuffer] that the caller puts
// back once it has checked them: the events it returns own their memory
// ([eventPage]), so reading a page allocates nothing for the bytes read.

// lastLines returns up to n complete lines of the log that end exactly at
// byte end (which must follow a newline), in file order, and the buffer
// they alias. It reads backwards in growing windows, so its cost is
// proportional to the bytes of those lines, not to the size of the log.
// Fewer than n lines come back only when the log has fewer.
func lastLines(r io.ReaderAt, end int64, n int64) ([]logLine, *[]byte, error) {
	if n <= 0 || end == 0 {
		return nil, nil, nil
	}
	bp := getReadBuffer()
	var lines []logLine
	window := int64(firstReadWindow)
	for {
		start := max(0, end-window)
		*bp = (*bp)[:0] // each window is read whole
		buf := growReadBuffer(bp, int(end-start))
		if _, err := r.ReadAt(buf, start); err != nil {
			return nil, bp, fmt.Errorf("read event log: %w", err)
		}
		if buf[len(buf)-1] != '\n' {
			return nil, bp, errors.New("the acknowledged part of the log does not end with a newline")
		}
		// Walk back over newlines; each one (except the last byte's) ends
		// the line before the one that follows it.
		lines = lines[:0]
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
			return lines, bp, nil
		}
		window += moreToRead(int64(len(buf)), int64(len(buf)-1-stop), int64(len(lines)), n)
	}
}

// moreToRead is how many more bytes to read when read bytes gave only
// got < want whole lines, together scanned bytes long: what the lines
// still wanted take at the average length so far and an eighth more (so
// one more read usually does), but at least a window and three times the
// partial line read (so a long line takes a few reads, not many).
func moreToRead(read, scanned, got, want int64) int64 {
	more := max(firstReadWindow, 3*(read-scanned))
	if got > 0 {
		more = max(more, (want-got)*(scanned/got)*9/8)
	}
	return more
}

// firstLines returns up to n complete lines of the log starting at byte
// off (the start of a line) and ending at or before end, in file order,
// and the buffer they alias, reading forwards in growing reads.
func firstLines(r io.ReaderAt, off, end int64, n int64) ([]logLine, *[]byte, error) {
	bp := getReadBuffer()
	buf := *bp
	lines := make([]logLine, 0, min(n, 1<<14))
	scanned := 0 // buf[:scanned] is split into lines
	for int64(len(lines)) < n && off+int64(len(buf)) < end {
		size := int64(firstReadWindow)
		if len(buf) > 0 {
			size = moreToRead(int64(len(buf)), int64(scanned), int64(len(lines)), n)
		}
		size = min(size, end-off-int64(len(buf)))
		at := len(buf)
		buf = growReadBuffer(bp, at+int(size))
		if _, err := r.ReadAt(buf[at:], off+int64(at)); err != nil {
			return nil, bp, fmt.Errorf("read event log: %w", err)
		}
		for int64(len(lines)) < n {
			i := bytes.IndexByte(buf[scanned:], '\n')
			if i < 0 {
				break
			}
			lines = append(lines, logLine{text: buf[scanned : scanned+i], offset: off + int64(scanned)})
			scanned += i + 1
		}
	}
	if int64(len(lines)) < n && scanned < len(buf) {
		return nil, bp, errors.New("the acknowledged part of the log does not end with a newline")
	}
	// Lines read before the buffer last grew alias the array it grew
	// from, which only they hold: it is not reused.
	return lines, bp, nil
}

// checkChainForward verifies lines that must be the events first,
// first+1, ... of runID, the first following an event whose hash is prev
// (the genesis hash before event 1): every line decodes and hashes, the
// seqs are consecutive, and each prevHash is the hash before it. The
// events returned own their memory ([eventPage]).
func checkChainForward(runID string, lines []logLine, first int64, prev string) ([]Event, *CorruptError) {
	pg := newEventPage(len(lines))
	var last []byte // the hash of the line before, once there is one
	for i, l := range lines {
		wantSeq := first + int64(i)
		bad := func(reason string) *CorruptError {
			return &CorruptError{RunID: runID, Part: PartEvents, Seq: wantSeq, Offset: l.offset, Reason: reason}
		}
		p, err := pg.check(l.text)
		if err != nil {
			return nil, bad(err.Error())
		}
		if p.seq != wantSeq {
			return nil, bad(fmt.Sprintf("line holds seq %d", p.seq))
		}
		if linked := i == 0 && string(p.prevHash) == prev || i > 0 && bytes.Equal(p.prevHash, last); !linked {
			if p.seq == 1 {
				return nil, bad("the first event's prevHash is not this run's genesis hash")
			}
			if i > 0 {
				prev = string(last)
			}
			return nil, bad(fmt.Sprintf("prevHash %s is not the previous event's hash %s: the chain is broken", p.prevHash, prev))
		}
		pg.add(i, p)
		last = p.hash
	}
	hashes := pg.own()
	for i := range pg.events {
		pg.events[i].Hash = hashes[i*hashHexLen:][:hashHexLen]
		if i == 0 {
			pg.events[i].PrevHash = prev
		} else {
			pg.events[i].PrevHash = pg.events[i-1].Hash
		}
	}
	return pg.events, nil
}

// checkChainBack verifies lines that must be the events seq-len+1..seq of
// the run whose head is (seq, headHash): every line decodes and hashes
// correctly, the seqs are consecutive, each hash is the next one's
// prevHash, the last hash is the head's, and if the first is event 1 its
// prevHash is the run's genesis hash. It returns the decoded events,
// which own their memory ([eventPage]).
func checkChainBack(runID string, lines []logLine, seq int64, headHash string) ([]Event, *CorruptError) {
	pg := newEventPage(len(lines))
	var want []byte // the prevHash of the line after, once there is one
	for i := len(lines) - 1; i >= 0; i-- {
		wantSeq := seq - int64(len(lines)-1-i)
		bad := func(reason string) *CorruptError {
			return &CorruptError{RunID: runID, Part: PartEvents, Seq: wantSeq, Offset: lines[i].offset, Reason: reason}
		}
		p, err := pg.check(lines[i].text)
		if err != nil {
			return nil, bad(err.Error())
		}
		if p.seq != wantSeq {
			return nil, bad(fmt.Sprintf("line holds seq %d", p.seq))
		}
		if i == len(lines)-1 && string(p.hash) != headHash {
			return nil, bad(fmt.Sprintf("hash %s is not the head %s recorded in the state", p.hash, headHash))
		}
		if i < len(lines)-1 && !bytes.Equal(p.hash, want) {
			return nil, bad(fmt.Sprintf("hash %s is not the next event's prevHash %s: the chain is broken", p.hash, want))
		}
		if p.seq == 1 && string(p.prevHash) != genesisHash(runID) {
			return nil, bad("the first event's prevHash is not this run's genesis hash")
		}
		pg.add(i, p)
		want = p.prevHash
	}
	if len(lines) > 0 {
		pg.hashes.Write(want) // the first event's prevHash, after the hashes
	}
	hashes := pg.own()
	n := len(pg.events)
	for i := range pg.events {
		pg.events[i].Hash = hashes[(n-1-i)*hashHexLen:][:hashHexLen]
	}
	for i := range pg.events {
		if i == 0 {
			pg.events[i].PrevHash = hashes[n*hashHexLen:]
		} else {
			pg.events[i].PrevHash = pg.events[i-1].Hash
		}
	}
	return pg.events, nil
}

// maxTailRead bounds the data after a head that is read to classify it.
// One interrupted write leaves at most one write's events; a tail beyond
// this size is not one.
const maxTailRead = 64 << 20
