package store

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// headFormat names the layout of a head record.
const headFormat = "stratum.run-head.v1"

// headRecord is a run's independent head record: which write (Rev) the
// run is at and the head that write left, plus the run's summary so that
// List reads nothing else. It is kept apart from the run's state and log
// (for the file store, outside the run directory) and written after them
// in every write, so a state or log rolled back, or a run removed, no
// longer matches it (docs/storage.md, "The head record").
type headRecord struct {
	RunID   string
	Rev     int64
	Seq     int64
	Hash    string
	SavedAt time.Time
	// State is the check of the state file that write left.
	State   string
	Summary []byte // compacted object, nil when none
}

func (r headRecord) head() Head { return Head{Seq: r.Seq, Hash: r.Hash} }

// recordOf is the head record of the write that produced env.
func recordOf(env envelope) headRecord {
	return headRecord{RunID: env.RunID, Rev: env.Rev, Seq: env.Seq, Hash: env.Head, SavedAt: env.SavedAt, State: env.Check, Summary: env.Summary}
}

// encodeHeadRecord renders a record as one line:
//
//	{"check":C,"format":F,"hash":H,"rev":R,"runId":ID,"savedAt":T,"seq":S,"state":SC,"summary":SUM}\n
//
// with C computed as for the state file (docs/storage.md).
func encodeHeadRecord(r headRecord) []byte {
	rest := make([]byte, 0, len(r.Summary)+len(r.RunID)+hashHexLen+128)
	rest = append(rest, `"format":"`+headFormat+`","hash":"`...)
	rest = append(rest, r.Hash...)
	rest = append(rest, `","rev":`...)
	rest = strconv.AppendInt(rest, r.Rev, 10)
	rest = append(rest, `,"runId":"`...)
	rest = append(rest, r.RunID...)
	rest = append(rest, `","savedAt":"`...)
	rest = r.SavedAt.UTC().AppendFormat(rest, time.RFC3339Nano)
	rest = append(rest, `","seq":`...)
	rest = strconv.AppendInt(rest, r.Seq, 10)
	rest = append(rest, `,"state":"`...)
	rest = append(rest, r.State...)
	rest = append(rest, `","summary":`...)
	if r.Summary == nil {
		rest = append(rest, "null"...)
	} else {
		rest = append(rest, r.Summary...)
	}
	rest = append(rest, "}\n"...)
	return withCheck(rest)
}

// decodeHeadRecord checks and parses one record line (newline included).
func decodeHeadRecord(data []byte) (headRecord, error) {
	var r headRecord
	at, err := verifyCheck(data, "head record")
	if err != nil {
		return r, err
	}
	p := layoutParser{data: data, pos: at}
	p.literal(`"format":"` + headFormat + `","hash":"`)
	r.Hash = p.until('"')
	p.literal(`","rev":`)
	r.Rev = p.integer()
	p.literal(`,"runId":"`)
	r.RunID = p.until('"')
	p.literal(`","savedAt":"`)
	r.SavedAt = p.time()
	p.literal(`","seq":`)
	r.Seq = p.integer()
	p.literal(`,"state":"`)
	r.State = p.until('"')
	p.literal(`","summary":`)
	r.Summary = p.jsonValue()
	p.literal("}\n")
	if p.err == nil && p.pos != len(data) {
		p.err = errors.New("data after the record")
	}
	if p.err != nil {
		return headRecord{}, fmt.Errorf("bad head record layout at byte %d: %v", p.pos, p.err)
	}
	if string(r.Summary) == "null" {
		r.Summary = nil
	}
	if !isHashHex(r.Hash) || !isHashHex(r.State) {
		return headRecord{}, errors.New("head record hash or state check is not 64 lowercase hex digits")
	}
	if err := ValidateRunID(r.RunID); err != nil {
		return headRecord{}, fmt.Errorf("head record names a bad run id: %v", err)
	}
	return r, nil
}

// newestRecord picks the record of a two-slot head file (docs/storage.md):
// the valid slot with the higher rev. A slot that fails its check is what
// an interrupted overwrite leaves; only both failing is an error. Empty
// slots (never written) count as absent.
//
// The slot whose record claims the higher rev is checked first, and the
// other only when that one fails: a valid record's rev is the one it
// claims, so the other cannot beat it. List reads thousands of records,
// and this halves the checksums it computes.
func newestRecord(slots [2][]byte) (headRecord, bool, error) {
	order := [2]int{0, 1}
	if claimedRev(slots[1]) > claimedRev(slots[0]) {
		order = [2]int{1, 0}
	}
	var errs [2]error
	for _, i := range order {
		if len(slots[i]) == 0 {
			continue
		}
		r, err := decodeHeadRecord(slots[i])
		if err == nil {
			return r, true, nil
		}
		errs[i] = err
	}
	var msgs []string
	for i, err := range errs {
		if err != nil {
			msgs = append(msgs, fmt.Sprintf("slot %d: %v", i, err))
		}
	}
	if len(msgs) > 0 {
		return headRecord{}, false, errors.New("no valid slot: " + fmt.Sprint(msgs))
	}
	return headRecord{}, false, nil
}

// claimedRev is the rev a record line claims, unchecked, read where the
// layout puts it; -1 when the line is not of that layout (an empty slot,
// or one that will fail its check).
func claimedRev(line []byte) int64 {
	const before = `","format":"` + headFormat + `","hash":"`
	at := len(checkPrefix) + hashHexLen
	if len(line) < at+len(before)+hashHexLen || string(line[at:at+len(before)]) != before {
		return -1
	}
	at += len(before) + hashHexLen
	if !bytes.HasPrefix(line[at:], []byte(`","rev":`)) {
		return -1
	}
	at += len(`","rev":`)
	end := at
	for end < len(line) && line[end] >= '0' && line[end] <= '9' {
		end++
	}
	rev, err := strconv.ParseInt(string(line[at:end]), 10, 64)
	if err != nil {
		return -1
	}
	return rev
}
