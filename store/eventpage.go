package store

import "strings"

// eventPage assembles the events checked from one read (a page of Events,
// a head line) so that they own their memory with three allocations in
// all rather than several per event: the events, one block holding
// every event's data and one string holding every hash; types are
// interned ([eventType]) and each prevHash is the hash before it. Nothing
// of the events aliases the lines read, so the buffer they were read
// into can be reused ([getReadBuffer]) while callers keep the events, as
// the Store contract lets them.
type eventPage struct {
	events  []Event
	hashes  strings.Builder // the hashes, in the order the lines were checked
	dataLen int
	hasher  bodyHasher
}

func newEventPage(n int) *eventPage {
	pg := &eventPage{events: make([]Event, n)}
	pg.hashes.Grow((n + 1) * hashHexLen)
	return pg
}

// check checks one line completely, as [decodeEvent] does.
func (pg *eventPage) check(line []byte) (lineParts, error) {
	p, ok := checkLineFast(line, &pg.hasher)
	if ok {
		return p, nil
	}
	ev, err := decodeEventRebuilt(line)
	if err != nil {
		return lineParts{}, err
	}
	return lineParts{seq: ev.Seq, at: ev.At, begin: ev.Begin, typ: []byte(ev.Type), data: ev.Data, hash: []byte(ev.Hash), prevHash: []byte(ev.PrevHash)}, nil
}

// add makes p, checked, event i of the page (its data still aliasing the
// line, its hashes unset) and records its hash.
func (pg *eventPage) add(i int, p lineParts) {
	pg.events[i] = Event{Seq: p.seq, Type: eventType(p.typ), At: p.at, Data: p.data, Begin: p.begin}
	pg.hashes.Write(p.hash)
	pg.dataLen += len(p.data)
}

// own copies the events' data into one block of their own and returns
// the hashes recorded, for the caller to hand out.
func (pg *eventPage) own() string {
	block := make([]byte, pg.dataLen)
	for i := range pg.events {
		n := copy(block, pg.events[i].Data)
		pg.events[i].Data, block = block[:n:n], block[n:]
	}
	return pg.hashes.String()
}
