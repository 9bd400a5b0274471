package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// pagedRun creates a run of n events whose data differ in length and
// content (some only the rebuild accepts, one larger than a read window)
// and returns them as Event reads each alone.
func pagedRun(t *testing.T, s *FileStore, n int) []Event {
	t.Helper()
	ctx := context.Background()
	evs := make([]NewEvent, n)
	for i := range evs {
		data := fmt.Sprintf(`{"i":%d,"pad":"%s"}`, i+1, strings.Repeat("p", i%37*11))
		switch {
		case i%7 == 3:
			data = fmt.Sprintf(`{"c":"\u0001%d"}`, i+1) // canonical, the fast check unsure
		case i == n/2:
			data = fmt.Sprintf(`{"big":"%s"}`, strings.Repeat("b", 3*firstReadWindow))
		}
		at := t0.Add(time.Duration(i)*time.Second + time.Duration(i*i*1237)) // nanoseconds with and without trailing zeros
		evs[i] = NewEvent{Type: fmt.Sprintf("t%d", i%3), At: at, Data: json.RawMessage(data)}
	}
	if _, err := s.Create(ctx, "r", Change{State: []byte(`{}`), Events: evs}); err != nil {
		t.Fatal(err)
	}
	want := make([]Event, n)
	for i := range want {
		e, err := s.Event(ctx, "r", int64(i+1))
		if err != nil {
			t.Fatal(err)
		}
		want[i] = e
	}
	return want
}

// TestEventsOwnTheirMemory: the events of a page stay as they were while
// later reads reuse the buffer the page was read into, and appending to
// one event's data changes no other event.
func TestEventsOwnTheirMemory(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, nil)
	const n = 60
	want := pagedRun(t, s, n)
	var kept [][]Event
	for _, read := range []struct{ after, limit int }{{0, 10}, {10, 25}, {35, 0}, {0, 0}, {20, 5}, {59, 0}} {
		page, err := s.Events(ctx, "r", int64(read.after), read.limit)
		if err != nil {
			t.Fatal(err)
		}
		kept = append(kept, page)
	}
	for _, page := range kept {
		for _, e := range page {
			if !sameEvent(e, want[e.Seq-1]) {
				t.Fatalf("event %d changed after later reads: %s, want %s", e.Seq, e.Data, want[e.Seq-1].Data)
			}
		}
	}
	page := kept[0]
	before := bytes.Clone(page[1].Data)
	_ = append(page[0].Data, strings.Repeat("x", 64)...)
	if !bytes.Equal(page[1].Data, before) {
		t.Errorf("appending to event 1's data changed event 2's: %s", page[1].Data)
	}
}

// TestEventsPagesAgree: every way of paging through a run (forwards
// through the index, forwards with the index gone, backwards from the
// head, in pages of every size from 1) gives the events Event gives.
func TestEventsPagesAgree(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, nil)
	const n = 45
	want := pagedRun(t, s, n)
	for _, index := range []bool{true, false} {
		if !index {
			os.Remove(s.runPath("r", indexFile))
		}
		for _, limit := range []int{1, 2, 7, 16, 44, 45, 0} {
			var got []Event
			for after := 0; after < n; {
				page, err := s.Events(ctx, "r", int64(after), limit)
				if err != nil || len(page) == 0 {
					t.Fatalf("index %v, limit %d, after %d: %d events, %v", index, limit, after, len(page), err)
				}
				got = append(got, page...)
				after = int(page[len(page)-1].Seq)
			}
			if len(got) != n {
				t.Fatalf("index %v, limit %d: %d events", index, limit, len(got))
			}
			for i := range got {
				if !sameEvent(got[i], want[i]) {
					t.Fatalf("index %v, limit %d: event %d is %+v, want %+v", index, limit, i+1, got[i], want[i])
				}
			}
		}
	}
}

// TestEventIndexWrong: an index that points where it should not (inside
// a line, at the line after, across two lines, past the end, nowhere)
// changes nothing Event and Events return: what it points at is checked,
// and the log bisected instead.
func TestEventIndexWrong(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, nil)
	const n = 30
	want := pagedRun(t, s, n)
	path := s.runPath("r", indexFile)
	good, err := os.ReadFile(path)
	if err != nil || len(good) != n*indexEntrySize {
		t.Fatalf("index: %d bytes, %v", len(good), err)
	}
	entry := func(idx []byte, seq int) int64 {
		return int64(binary.LittleEndian.Uint64(idx[(seq-1)*indexEntrySize:]))
	}
	set := func(idx []byte, seq int, off int64) {
		binary.LittleEndian.PutUint64(idx[(seq-1)*indexEntrySize:], uint64(off))
	}
	for name, change := range map[string]func(idx []byte) []byte{
		"starts inside a line": func(idx []byte) []byte {
			for seq := 2; seq <= n; seq++ {
				set(idx, seq, entry(idx, seq)+5)
			}
			return idx
		},
		"ends inside a line": func(idx []byte) []byte {
			for seq := 2; seq <= n; seq++ {
				set(idx, seq, entry(idx, seq)-5)
			}
			return idx
		},
		"one line on": func(idx []byte) []byte {
			return append(idx[indexEntrySize:], make([]byte, indexEntrySize)...)
		},
		"across two lines": func(idx []byte) []byte {
			for seq := 2; seq < n; seq += 2 {
				set(idx, seq, entry(idx, seq+1))
			}
			return idx
		},
		"past the end":  func(idx []byte) []byte { return bytes.Repeat([]byte{0x7f}, len(idx)) },
		"short":         func(idx []byte) []byte { return idx[:len(idx)/2] },
		"empty":         func([]byte) []byte { return nil },
		"all zero":      func(idx []byte) []byte { return make([]byte, len(idx)) },
		"as it is, too": func(idx []byte) []byte { return idx },
	} {
		if err := os.WriteFile(path, change(bytes.Clone(good)), 0o600); err != nil {
			t.Fatal(err)
		}
		for seq := 1; seq <= n; seq++ {
			e, err := s.Event(ctx, "r", int64(seq))
			if err != nil || !sameEvent(e, want[seq-1]) {
				t.Fatalf("%s: Event(%d) = %+v, %v, want %+v", name, seq, e, err, want[seq-1])
			}
		}
		for after := 0; after < n; after += 7 {
			page, err := s.Events(ctx, "r", int64(after), 7)
			if err != nil {
				t.Fatalf("%s: Events after %d: %v", name, after, err)
			}
			for _, e := range page {
				if !sameEvent(e, want[e.Seq-1]) {
					t.Fatalf("%s: Events after %d: event %d is %+v", name, after, e.Seq, e)
				}
			}
		}
	}
}
