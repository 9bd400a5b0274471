package store

import (
	"bytes"
	"context"
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
