package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// checkBases are the lines the cases of TestCheckLineCases change: one
// with nanoseconds, one beginning a write with a time of tenths, one on a
// whole second.
func checkBases(t testing.TB) map[string][]byte {
	bases := map[string][]byte{}
	for name, ev := range map[string]struct {
		seq   int64
		e     NewEvent
		begin bool
	}{
		"nanos":  {7, NewEvent{Type: "result", At: vectorAt, Data: json.RawMessage(vectorData)}, false},
		"tenths": {8, NewEvent{Type: "engine.step_state", At: time.Date(2026, 3, 4, 5, 6, 7, 500000000, time.UTC), Data: json.RawMessage(`{"a":[1,"x"],"b":{"c":null}}`)}, true},
		"second": {12, NewEvent{Type: "ready", At: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC), Data: json.RawMessage(`"s"`)}, false},
		// Longer than bodyHasher.small.
		"long": {13, NewEvent{Type: "result", At: time.Date(2026, 3, 4, 5, 6, 7, 8, time.UTC), Data: json.RawMessage(`{"long":"` + strings.Repeat("l", 1500) + `"}`)}, false},
	} {
		line, _, err := encodeEvent(ev.seq, vectorGenesis, ev.e, ev.begin)
		if err != nil {
			t.Fatal(err)
		}
		bases[name] = line
	}
	return bases
}

// withBodyHash gives line the hash of its body (the line without its hash
// member, wherever it is), so that what refuses a changed line is the
// canonical check and not the hash. A line without a hash member is
// returned as it is.
func withBodyHash(line []byte) []byte {
	i := bytes.Index(line, []byte(`,"hash":"`))
	if i < 0 || len(line) < i+hashMemberLen || line[i+hashMemberLen-1] != '"' {
		return line
	}
	body := slicesConcat(line[:i], line[i+hashMemberLen:])
	sum := sha256.Sum256(body)
	out := bytes.Clone(line)
	hex.Encode(out[i+len(`,"hash":"`):], sum[:])
	return out
}

// sameEvent compares two events field by field, the time by its
// representation (the same instant in the same location).
func sameEvent(a, b Event) bool {
	return a.Seq == b.Seq && a.Type == b.Type && a.At == b.At && bytes.Equal(a.Data, b.Data) &&
		a.PrevHash == b.PrevHash && a.Hash == b.Hash && a.Begin == b.Begin
}

type checkCase struct {
	name, base string
	change     func(string) string
	rehash     bool   // give the changed line the hash of its body
	want       string // the start of the error ("" when the line is good)
	fast       bool   // for a good line: checkLineFast is sure of it
}

func replace(old, new string) func(string) string {
	return func(s string) string {
		if !strings.Contains(s, old) {
			panic(fmt.Sprintf("%q not in %s", old, s))
		}
		return strings.Replace(s, old, new, 1)
	}
}

// checkCases each change one thing that the comparison with the rebuilt
// line catches (or the hash, or encoding/json), with the error the
// rebuild gives; and a few good lines the fast check is unsure of.
func checkCases() []checkCase {
	const (
		canon    = "event line is not in canonical form"
		invalid  = "not a valid event line: "
		hexes    = "hash or prevHash is not 64 lowercase hex digits"
		mismatch = "hash mismatch: stored "
		badTime  = "bad event time: "
		badType  = "bad event type "
	)
	upper := func(field string) func(string) string {
		return func(s string) string {
			i := strings.Index(s, field) + len(field)
			return s[:i] + strings.ToUpper(s[i:i+hashHexLen]) + s[i+hashHexLen:]
		}
	}
	return []checkCase{
		{"as encoded", "nanos", nil, false, "", true},
		{"as encoded, begin", "tenths", nil, false, "", true},
		{"as encoded, whole second", "second", nil, false, "", true},
		{"as encoded, long", "long", nil, false, "", true},
		{"long, data changed", "long", replace(`"llll`, `"lllL`), false, mismatch, false},
		{"long, type changed", "long", replace(`"type":"result"`, `"type":"resulT"`), false, mismatch, false},
		{"long, begin added", "long", replace(`,"data"`, `,"begin":true,"data"`), false, mismatch, false},
		{"seq 0", "second", replace(`"seq":12,`, `"seq":0,`), true, "", true},
		{"largest seq", "second", replace(`"seq":12,`, `"seq":9223372036854775807,`), true, "", true},
		{"year 1", "second", replace(`"at":"2026-`, `"at":"0001-`), true, "", true},
		{"year 0", "second", replace(`"at":"2026-`, `"at":"0000-`), true, "", true},

		// Good lines only the rebuild accepts.
		{"data with a control character", "second", replace(`"data":"s"`, `"data":"\u0001"`), true, "", false},
		{"data with an escaped U+2028", "second", replace(`"data":"s"`, `"data":"\u2028"`), true, "", false},
		{"data key with an escape", "second", replace(`"data":"s"`, `"data":{"a\"b":1}`), true, "", false},
		{"data nested deeper than the scan goes", "second", replace(`"data":"s"`, `"data":`+strings.Repeat("[", 600)+strings.Repeat("]", 600)), true, "", false},
		{"negative seq", "second", replace(`"seq":12,`, `"seq":-12,`), true, "", false},

		{"plus in seq", "second", replace(`"seq":12,`, `"seq":+12,`), true, canon, false},
		{"leading zero in seq", "second", replace(`"seq":12,`, `"seq":012,`), true, invalid, false},
		{"zero written 00", "second", replace(`"seq":12,`, `"seq":00,`), true, invalid, false},
		{"seq with an exponent", "second", replace(`"seq":12,`, `"seq":1.2e1,`), true, invalid, false},
		{"seq with a fraction", "second", replace(`"seq":12,`, `"seq":12.0,`), true, invalid, false},
		{"seq beyond int64", "second", replace(`"seq":12,`, `"seq":9223372036854775808,`), true, invalid, false},
		{"seq beyond uint64", "second", replace(`"seq":12,`, `"seq":99999999999999999999,`), true, invalid, false},
		{"seq as a string", "second", replace(`"seq":12,`, `"seq":"12",`), true, invalid, false},
		{"time +00:00", "nanos", replace(`789Z"`, `789+00:00"`), true, canon, false},
		{"time in another zone", "nanos", replace(`T03:04:05.123456789Z"`, `T04:04:05.123456789+01:00"`), true, canon, false},
		{"time with a trailing zero", "tenths", replace(`07.5Z"`, `07.50Z"`), true, canon, false},
		{"time with nine zeros", "second", replace(`07Z"`, `07.000000000Z"`), true, canon, false},
		{"time with a bare point", "second", replace(`07Z"`, `07.Z"`), true, badTime, false},
		{"time with ten digits", "nanos", replace(`789Z"`, `7890Z"`), true, canon, false},
		{"time with a lowercase z", "second", replace(`07Z"`, `07z"`), true, badTime, false},
		{"time with a lowercase t", "second", replace(`04T05`, `04t05`), true, badTime, false},
		{"time with a space", "second", replace(`04T05`, `04 05`), true, badTime, false},
		{"time a leap second", "second", replace(`05:06:07Z`, `05:06:60Z`), true, badTime, false},
		{"time in month 13", "second", replace(`2026-03-04`, `2026-13-04`), true, badTime, false},
		{"time on February 30", "second", replace(`2026-03-04`, `2026-02-30`), true, badTime, false},
		{"time at hour 24", "second", replace(`T05:06:07`, `T24:06:07`), true, badTime, false},
		{"time with a five-digit year", "second", replace(`"at":"2026-`, `"at":"12026-`), true, badTime, false},
		{"time without seconds", "second", replace(`05:06:07Z`, `05:06Z`), true, badTime, false},
		{"time as a number", "second", replace(`"at":"2026-03-04T05:06:07Z"`, `"at":1`), true, invalid, false},
		{"space after {", "nanos", replace(`{"at"`, `{ "at"`), true, canon, false},
		{"space before a colon", "nanos", replace(`"seq":7`, `"seq" :7`), true, canon, false},
		{"space after a comma", "nanos", replace(`,"type"`, `, "type"`), true, canon, false},
		{"space at the end", "nanos", func(s string) string { return s + " " }, true, canon, false},
		{"space in data", "tenths", replace(`[1,"x"]`, `[1, "x"]`), true, canon, false},
		{"newline in data", "tenths", replace(`[1,"x"]`, "[1,\n\"x\"]"), true, canon, false},
		{"uppercase hex in the hash", "nanos", upper(`"hash":"`), false, hexes, false},
		{"uppercase hex in the prevHash", "nanos", upper(`"prevHash":"`), true, hexes, false},
		{"hash one digit short", "nanos", func(s string) string {
			i := strings.Index(s, `"hash":"`) + len(`"hash":"`)
			return s[:i] + s[i+1:]
		}, false, hexes, false},
		{"prevHash one digit short", "nanos", replace(vectorGenesis, vectorGenesis[1:]), true, hexes, false},
		{"hash escaped", "nanos", func(s string) string {
			i := strings.Index(s, `"hash":"`) + len(`"hash":"`)
			return s[:i] + `\u00` + hex.EncodeToString([]byte{s[i]}) + s[i+1:]
		}, false, canon, false},
		{"seq and type swapped", "nanos", replace(`"seq":7,"type":"result"`, `"type":"result","seq":7`), true, canon, false},
		{"at and data swapped", "second", replace(`"at":"2026-03-04T05:06:07Z","data":"s"`, `"data":"s","at":"2026-03-04T05:06:07Z"`), true, canon, false},
		{"hash after prevHash", "nanos", func(s string) string {
			i := strings.Index(s, `,"hash":"`)
			h := s[i : i+hashMemberLen]
			s = s[:i] + s[i+hashMemberLen:]
			j := strings.Index(s, `,"seq":`)
			return s[:j] + h + s[j:]
		}, false, canon, false},
		{"hash of another body", "nanos", func(s string) string {
			return strings.Replace(s, s[strings.Index(s, `"hash":"`)+8:][:hashHexLen], strings.Repeat("ab", 32), 1)
		}, false, mismatch, false},
		{"hash of the line with begin", "nanos", replace(`,"data"`, `,"begin":true,"data"`), false, mismatch, false},
		{"begin false written out", "nanos", replace(`,"data"`, `,"begin":false,"data"`), true, canon, false},
		{"begin false replacing true", "tenths", replace(`"begin":true`, `"begin":false`), true, canon, false},
		{"begin as 1", "tenths", replace(`"begin":true`, `"begin":1`), true, invalid, false},
		{"begin after data", "tenths", func(s string) string {
			s = strings.Replace(s, `"begin":true,`, ``, 1)
			return strings.Replace(s, `,"hash"`, `,"begin":true,"hash"`, 1)
		}, true, canon, false},
		{"data keys unsorted", "tenths", replace(`{"a":[1,"x"],"b":{"c":null}}`, `{"b":{"c":null},"a":[1,"x"]}`), true, canon, false},
		{"data key twice", "tenths", replace(`"b":{"c":null}}`, `"b":{"c":null},"b":1}`), true, canon, false},
		{"data with é escaped", "second", replace(`"data":"s"`, `"data":"\u00e9"`), true, canon, false},
		{"data with a slash escaped", "second", replace(`"data":"s"`, `"data":"\/"`), true, canon, false},
		{"data HTML-escaped", "second", replace(`"data":"s"`, `"data":"\u003c"`), true, canon, false},
		{"data with a raw U+2028", "second", replace(`"data":"s"`, "\"data\":\"\u2028\""), true, canon, false},
		{"data not UTF-8", "second", replace(`"data":"s"`, "\"data\":\"\xff\""), true, canon, false},
		{"data number with a plus exponent", "second", replace(`"data":"s"`, `"data":1E+2`), true, "", true},
		{"data not JSON", "second", replace(`"data":"s"`, `"data":01`), true, invalid, false},
		{"data missing", "second", replace(`,"data":"s"`, ``), true, "event has no data member", false},
		{"an extra member", "nanos", replace(`"type":"result"}`, `"type":"result","x":1}`), true, canon, false},
		{"at twice", "second", replace(`,"data"`, `,"at":"2026-03-04T05:06:07Z","data"`), true, canon, false},
		{"type with a space", "nanos", replace(`"type":"result"`, `"type":"re sult"`), true, badType, false},
		{"type escaped", "nanos", replace(`"type":"result"`, `"type":"re\u0073ult"`), true, badType, false},
		{"type too long", "nanos", replace(`"type":"result"`, `"type":"`+strings.Repeat("t", 65)+`"`), true, badType, false},
		{"type empty", "nanos", replace(`"type":"result"`, `"type":""`), true, badType, false},
		{"type missing", "nanos", replace(`,"type":"result"`, ``), true, badType, false},
		{"empty line", "nanos", func(string) string { return "" }, false, invalid, false},
		{"not an object", "nanos", func(string) string { return "[]" }, false, invalid, false},
	}
}

// TestCheckLineCases: every change the rebuild comparison catches is
// refused by decodeEvent and by the checks of a page (forwards and back)
// with the rebuild's error (testdata/golden/check-cases.txt holds the
// texts); the fast check is never sure of a bad line; good lines give the
// event the rebuild gives.
func TestCheckLineCases(t *testing.T) {
	bases := checkBases(t)
	var golden_ strings.Builder
	for _, tc := range checkCases() {
		line := bases[tc.base]
		if tc.change != nil {
			line = []byte(tc.change(string(line)))
		}
		if tc.rehash {
			line = withBodyHash(line)
		}
		ref, refErr := decodeEventRebuilt(line)
		ev, err := decodeEvent(line)
		_, fast := checkLineFast(line, new(bodyHasher))
		if tc.want == "" {
			if refErr != nil || err != nil {
				t.Errorf("%s: refused: %v (rebuild: %v): %s", tc.name, err, refErr, line)
				continue
			}
			if !sameEvent(ev, ref) {
				t.Errorf("%s: decoded %+v, the rebuild %+v", tc.name, ev, ref)
			}
			if fast != tc.fast {
				t.Errorf("%s: fast check sure = %v, want %v", tc.name, fast, tc.fast)
			}
			checkPageAgrees(t, tc.name, line, ref, nil)
			continue
		}
		switch {
		case err == nil:
			t.Errorf("%s: accepted: %s", tc.name, line)
			continue
		case refErr == nil || err.Error() != refErr.Error():
			t.Errorf("%s: error %q, the rebuild's %v", tc.name, err, refErr)
		case !strings.HasPrefix(err.Error(), tc.want):
			t.Errorf("%s: error %q, want it to begin %q", tc.name, err, tc.want)
		}
		if fast {
			t.Errorf("%s: the fast check is sure of a bad line: %s", tc.name, line)
		}
		checkPageAgrees(t, tc.name, line, Event{}, err)
		fmt.Fprintf(&golden_, "%s: %v\n", tc.name, err)
	}
	golden(t, "check-cases.txt", []byte(golden_.String()))
}

// checkPageAgrees reads line as a page of one event, forwards and back,
// and checks the page says what decodeEvent says: the event want, or a
// corruption whose reason is the text of wantErr.
func checkPageAgrees(t *testing.T, name string, line []byte, want Event, wantErr error) {
	t.Helper()
	lines := []logLine{{text: line, offset: 10}}
	seq, prev, head := want.Seq, want.PrevHash, want.Hash
	if wantErr != nil {
		seq, prev, head = 7, vectorGenesis, vectorHash1
	}
	fwd, ferr := checkChainForward(vectorRunID, lines, seq, prev)
	back, berr := checkChainBack(vectorRunID, lines, seq, head)
	if wantErr != nil {
		for dir, cerr := range map[string]*CorruptError{"forward": ferr, "back": berr} {
			if cerr == nil || cerr.Reason != wantErr.Error() || cerr.Seq != 7 || cerr.Offset != 10 {
				t.Errorf("%s: %s page error %v, want reason %q", name, dir, cerr, wantErr)
			}
		}
		return
	}
	if ferr != nil || len(fwd) != 1 || !sameEvent(fwd[0], want) {
		t.Errorf("%s: forward page %+v, %v, want %+v", name, fwd, ferr, want)
	}
	// A page read back that holds event 1 checks the genesis hash, which
	// these lines were not given.
	if want.Seq == 1 {
		return
	}
	if berr != nil || len(back) != 1 || !sameEvent(back[0], want) {
		t.Errorf("%s: backward page %+v, %v, want %+v", name, back, berr, want)
	}
}

// TestCheckChainPages checks pages of several events, some of which take
// the rebuild: each event is the one decodeEvent gives, and every link
// broken on purpose is refused with the text it always had.
func TestCheckChainPages(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 8, time.UTC)
	datas := []string{`{"i":1}`, `"\u0001"`, `null`, `{"a\"b":[1,2]}`, `{"i":5,"s":"x"}`}
	var lines []logLine
	var want []Event
	prev, off := genesisHash(vectorRunID), int64(0)
	for i, d := range datas {
		ev, line, err := encodeStored(int64(i+1), prev, NewEvent{Type: "t" + fmt.Sprint(i%2), At: at, Data: json.RawMessage(d)}, i == 0)
		if err != nil {
			t.Fatal(err)
		}
		lines, want, prev = append(lines, logLine{text: line, offset: off}), append(want, ev), ev.Hash
		off += int64(len(line)) + 1
	}
	fwd, ferr := checkChainForward(vectorRunID, lines, 1, genesisHash(vectorRunID))
	back, berr := checkChainBack(vectorRunID, lines, int64(len(lines)), prev)
	if ferr != nil || berr != nil {
		t.Fatal(ferr, berr)
	}
	for i := range want {
		if !sameEvent(fwd[i], want[i]) || !sameEvent(back[i], want[i]) {
			t.Errorf("event %d: forward %+v, back %+v, want %+v", i+1, fwd[i], back[i], want[i])
		}
	}
	// Page 2..5 after event 1; page 1..4 before event 5.
	if evs, cerr := checkChainForward(vectorRunID, lines[1:], 2, want[0].Hash); cerr != nil || !sameEvent(evs[0], want[1]) || !sameEvent(evs[3], want[4]) {
		t.Errorf("forward page after 1: %v", cerr)
	}
	if evs, cerr := checkChainBack(vectorRunID, lines[:4], 4, want[3].Hash); cerr != nil || !sameEvent(evs[0], want[0]) || !sameEvent(evs[3], want[3]) {
		t.Errorf("back page before 5: %v", cerr)
	}

	swapped := []logLine{lines[0], lines[2], lines[1], lines[3]}
	forged1 := relinked(t, lines[1], want[1], "f")
	for _, tc := range []struct {
		name string
		got  *CorruptError
		want string
	}{
		{"forward, wrong first prevHash", second(checkChainForward(vectorRunID, lines[1:], 2, want[1].Hash)),
			fmt.Sprintf("prevHash %s is not the previous event's hash %s: the chain is broken", want[0].Hash, want[1].Hash)},
		{"forward, event 1 not linked to genesis", second(checkChainForward("other", lines, 1, genesisHash("other"))),
			"the first event's prevHash is not this run's genesis hash"},
		{"forward, seq skipped", second(checkChainForward(vectorRunID, lines[2:], 2, want[0].Hash)), "line holds seq 3"},
		{"forward, swapped", second(checkChainForward(vectorRunID, []logLine{lines[0], lines[1], lines[3]}, 1, genesisHash(vectorRunID))), "line holds seq 4"},
		{"forward, interior event forged", second(checkChainForward(vectorRunID, []logLine{lines[0], forged1[0], lines[2]}, 1, genesisHash(vectorRunID))),
			fmt.Sprintf("prevHash %s is not the previous event's hash %s: the chain is broken", want[1].Hash, mustHash(t, forged1[0].text))},
		{"back, not the head", second(checkChainBack(vectorRunID, lines, 5, want[3].Hash)),
			fmt.Sprintf("hash %s is not the head %s recorded in the state", want[4].Hash, want[3].Hash)},
		{"back, swapped", second(checkChainBack(vectorRunID, swapped, 4, want[3].Hash)), "line holds seq 2"},
		{"back, event 1 of another run", second(checkChainBack("other", lines, 5, want[4].Hash)), "the first event's prevHash is not this run's genesis hash"},
	} {
		if tc.got == nil || tc.want != "" && tc.got.Reason != tc.want {
			t.Errorf("%s: %v, want %q", tc.name, tc.got, tc.want)
		}
	}
	// An interior event replaced by a validly hashed forgery breaks the
	// link after it, reading back.
	forged := relinked(t, lines[2], want[2], "f")
	_, cerr := checkChainBack(vectorRunID, []logLine{lines[0], lines[1], forged[0], lines[3]}, 4, want[3].Hash)
	if wantReason := fmt.Sprintf("hash %s is not the next event's prevHash %s: the chain is broken", mustHash(t, forged[0].text), want[2].Hash); cerr == nil || cerr.Reason != wantReason || cerr.Seq != 3 {
		t.Errorf("back, forged interior event: %v, want %q", cerr, wantReason)
	}
}

func second[T any](_ T, e *CorruptError) *CorruptError { return e }

// relinked is line's event with another type, validly hashed.
func relinked(t *testing.T, l logLine, ev Event, typ string) []logLine {
	line, _, err := encodeEvent(ev.Seq, ev.PrevHash, NewEvent{Type: typ, At: ev.At, Data: ev.Data}, ev.Begin)
	if err != nil {
		t.Fatal(err)
	}
	return []logLine{{text: line, offset: l.offset}}
}

func mustHash(t *testing.T, line []byte) string {
	h, err := lineHash(line)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestCheckLineEveryByte replaces every byte of the base lines by every
// other value, and inserts before every byte each byte that means
// something in a line, each time with the hash of the changed body put
// in: the fast check and decodeEvent must say exactly what the rebuild
// says of each.
func TestCheckLineEveryByte(t *testing.T) {
	inserts := []byte("\x00\x1f \"\\+-.019:,[]{}aefgAEFTtZz\x7f\x80\xe2\xff")
	h := new(bodyHasher)
	for name, base := range checkBases(t) {
		if name == "long" {
			continue // as the others, at five times the cost
		}
		changed := make([]byte, 0, len(base)+1)
		for i := 0; i <= len(base); i++ {
			for v := range 256 {
				if i < len(base) && byte(v) != base[i] {
					changed = append(append(append(changed[:0], base[:i]...), byte(v)), base[i+1:]...)
					agreesWithRebuild(t, withBodyHash(changed), h, false)
				}
			}
			for _, v := range inserts {
				changed = append(append(append(changed[:0], base[:i]...), v), base[i:]...)
				agreesWithRebuild(t, withBodyHash(changed), h, false)
			}
			if t.Failed() {
				t.Fatalf("%s: stopped at byte %d", name, i)
			}
		}
	}
}

// agreesWithRebuild checks that the fast check, decodeEvent and (with
// pages) pages of one line, forwards and back, say of line what the
// rebuild says.
func agreesWithRebuild(t *testing.T, line []byte, h *bodyHasher, pages bool) {
	t.Helper()
	ref, refErr := decodeEventRebuilt(line)
	p, ok := checkLineFast(line, h)
	if ok {
		if refErr != nil {
			t.Fatalf("fast check sure of %q, the rebuild refuses it: %v", line, refErr)
		}
		got := Event{Seq: p.seq, Type: string(p.typ), At: p.at, Data: p.data, PrevHash: string(p.prevHash), Hash: string(p.hash), Begin: p.begin}
		if !sameEvent(got, ref) {
			t.Fatalf("fast check of %q gives %+v, the rebuild %+v", line, got, ref)
		}
	}
	ev, err := decodeEvent(line)
	switch {
	case (err == nil) != (refErr == nil) || err != nil && err.Error() != refErr.Error():
		t.Fatalf("decodeEvent(%q): %v, the rebuild %v", line, err, refErr)
	case err == nil && !sameEvent(ev, ref):
		t.Fatalf("decodeEvent(%q) = %+v, the rebuild %+v", line, ev, ref)
	}
	if !pages {
		return
	}
	seq := ref.Seq
	if refErr != nil || seq == 1 {
		seq = 2 // not event 1, whose prevHash is checked against the genesis hash
	}
	fwd, ferr := checkChainForward(vectorRunID, []logLine{{text: line}}, seq, ref.PrevHash)
	back, berr := checkChainBack(vectorRunID, []logLine{{text: line}}, seq, ref.Hash)
	switch {
	case refErr != nil:
		if ferr == nil || ferr.Reason != refErr.Error() || berr == nil || berr.Reason != refErr.Error() {
			t.Fatalf("pages of %q: %v, %v; the rebuild %v", line, ferr, berr, refErr)
		}
	case ref.Seq == seq:
		if ferr != nil || berr != nil || !sameEvent(fwd[0], ref) || !sameEvent(back[0], ref) {
			t.Fatalf("pages of %q: %+v %v, %+v %v; the rebuild %+v", line, fwd, ferr, back, berr, ref)
		}
	}
}

// FuzzCheckLineFast holds the fast check to the rebuild on arbitrary
// lines, as they are and with the hash of their body put in (so the
// canonical checks, not the hash, decide): whatever the fast check is
// sure of, the rebuild accepts as the same event; decodeEvent and a page
// of one line say exactly what the rebuild says.
func FuzzCheckLineFast(f *testing.F) {
	for _, line := range checkBases(f) {
		f.Add(line)
	}
	bases := checkBases(f)
	for _, tc := range checkCases() {
		if tc.change != nil {
			f.Add([]byte(tc.change(string(bases[tc.base]))))
		}
	}
	f.Add([]byte(`{"at":"0000-01-01T00:00:00Z","data":0,"hash":"` + strings.Repeat("0", 64) + `","prevHash":"` + strings.Repeat("0", 64) + `","seq":0,"type":"-"}`))
	h := new(bodyHasher)
	f.Fuzz(func(t *testing.T, b []byte) {
		agreesWithRebuild(t, b, h, true)
		agreesWithRebuild(t, withBodyHash(b), h, true)
	})
}
