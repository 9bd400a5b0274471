package engine

import (
	"encoding/binary"
	"encoding/json"
	"math/bits"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"
	"unsafe"
)

// summarySamples are summaries of the shapes the engine writes.
func summarySamples() []storedSummary {
	at := time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC)
	return []storedSummary{
		{Format: summaryFormat, RunSummary: RunSummary{RunID: "r1", Flow: "main", Status: StatusRunning, CreatedAt: at, UpdatedAt: at.Add(time.Second), Steps: 4, Current: "first"}},
		{Format: summaryFormat, RunSummary: RunSummary{RunID: "r2", Flow: "main", Status: StatusRunning, CreatedAt: at, UpdatedAt: at, Rounds: 2, Steps: 4, Done: 1, Current: "review", GateWaits: true,
			Waiting: []Waiting{{StepID: "review", Kind: WaitGate}, {StepID: "fan", Kind: WaitFanout, Paused: "not logged in"}}},
			Gates: []WaitingGate{{RunID: "r2", Flow: "main", StepID: "review", Kind: WaitGate, GateToken: "tok", OnApprove: "a", OnRevise: "first", OnKill: "", Round: 2, MaxRounds: 5, RevisesLeft: 3, Digest: "d"}}},
		{Format: summaryFormat, RunSummary: RunSummary{RunID: "r3", Flow: "ünïcode ✓", Status: StatusFailed, CreatedAt: at, UpdatedAt: at, FailureCause: CauseGateKilled, Steps: -1, Done: 0}, CancelRequested: true, Background: true, More: true},
		{Format: summaryFormat, RunSummary: RunSummary{RunID: "r4", Status: StatusCancelled, Error: "boom"}},
		{Format: 2, RunSummary: RunSummary{RunID: "r5"}},
	}
}

// The hand-written decoder reads every shape the engine writes, and
// gives what was written.
func TestFastSummaryReadsWhatTheEngineWrites(t *testing.T) {
	for _, want := range summarySamples() {
		raw, err := json.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := fastSummary(raw)
		if !ok {
			t.Errorf("fastSummary refused %s", raw)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("fastSummary(%s)\n got %+v\nwant %+v", raw, got, want)
		}
		checkListDecode(t, raw, want.RunID)
	}
}

// A listing's decoder reads what decodeSummary reads, less the gates.
func checkListDecode(t *testing.T, raw []byte, id string) {
	t.Helper()
	want, wantOK := decodeSummary(raw)
	var d listDecoder
	var got storedSummary
	if ok := d.decode(raw, id, &got); ok != wantOK {
		t.Fatalf("listDecoder.decode(%q) ok %v, decodeSummary ok %v", raw, ok, wantOK)
	}
	if !wantOK {
		return
	}
	want.Gates = nil
	if !reflect.DeepEqual(got, *want) {
		t.Fatalf("listDecoder.decode(%q)\n got %+v\nwant %+v", raw, got, *want)
	}
}

// The listing's decoder shares the strings that repeat and takes the
// run's id from the store's listing: decoding the same summary twice
// makes no new string.
func TestListDecoderSharesStrings(t *testing.T) {
	s := summarySamples()[1]
	raw, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	id := string([]byte(s.RunID)) // not the string the summary was made from
	var d listDecoder
	var first, second storedSummary
	if !d.decode(raw, id, &first) || !d.decode(raw, id, &second) {
		t.Fatalf("decode refused %s", raw)
	}
	same := func(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }
	if !same(first.RunID, id) || !same(second.RunID, id) {
		t.Errorf("the run id is a copy, not the listing's id")
	}
	for name, pair := range map[string][2]string{
		"flow": {first.Flow, second.Flow}, "status": {string(first.Status), string(second.Status)}, "current": {first.Current, second.Current},
		"waiting step": {first.Waiting[0].StepID, second.Waiting[0].StepID}, "waiting kind": {string(first.Waiting[0].Kind), string(second.Waiting[0].Kind)},
	} {
		if !same(pair[0], pair[1]) {
			t.Errorf("%s: two strings %q for one", name, pair[0])
		}
	}
	if first.Gates != nil {
		t.Errorf("gates kept: %+v", first.Gates)
	}
	var again storedSummary
	allocs := testing.AllocsPerRun(100, func() {
		again = storedSummary{}
		d.decode(raw, id, &again)
	})
	if allocs > 2 { // the Waiting slice, as it grows to two
		t.Errorf("decode makes %v allocations, want at most 2", allocs)
	}
}

// newestFirst orders as a stable sort by creation time, newest first,
// does, with and without runs gone.
func TestNewestFirst(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 2, 3, 10, 100, 1000} {
		for _, spread := range []int{1, 3, 1000000} { // 1: every time equal
			for _, goneOne := range []int{0, 3} { // every third run gone, or none
				all := make([]RunSummary, n)
				gone := make([]bool, n)
				for i := range all {
					all[i] = RunSummary{RunID: string(rune('a'+i%26)) + time.Duration(i).String(),
						CreatedAt: at.Add(time.Duration(rng.IntN(spread)) * time.Nanosecond * 997)}
					gone[i] = goneOne > 0 && i%goneOne == 1
				}
				var want []RunSummary
				for i := range all {
					if !gone[i] {
						want = append(want, all[i])
					}
				}
				slices.SortStableFunc(want, func(a, b RunSummary) int { return b.CreatedAt.Compare(a.CreatedAt) })
				got := newestFirst(slices.Clone(all), gone)
				if len(got) != len(want) || (len(want) > 0 && !reflect.DeepEqual(got, want)) {
					t.Fatalf("%d runs, spread %d, gone every %d: got %v\nwant %v", n, spread, goneOne, ids(got), ids(want))
				}
			}
		}
	}
}

func ids(rs []RunSummary) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.RunID)
	}
	return out
}

// Wherever the hand-written decoder answers, encoding/json says the same.
func FuzzFastSummary(f *testing.F) {
	for _, s := range summarySamples() {
		raw, _ := json.Marshal(s)
		f.Add(raw)
	}
	for _, s := range []string{
		`{}`, `{"v":1,"v":1}`, `{"v":1.0}`, `{"v":01}`, `{"v":-0}`, `{"V":1}`, `{"v":1} `, ` {"v":1}`,
		`{"runId":"a\"b"}`, `{"runId":"\u00e9"}`, `{"flow":"\xff"}`, `{"createdAt":"2026-01-02T03:04:05+01:00"}`,
		`{"createdAt":"2026-01-02T03:04:05Z"}`, `{"waiting":null}`, `{"waiting":[],"gates":[]}`, `{"waiting":[{}]}`, `{"waiting":[{"stepId":"a","stepId":"b"}]}`,
		`{"gates":[{"round":9223372036854775808}]}`, `{"gateWaits":tru}`, `{"more":false,}`, `{"steps":1e2}`,
		`{"steps":9223372036854775807}`, `{"steps":-9223372036854775808}`, `{"steps":-9223372036854775809}`, `{"steps":12345678901234567890}`,
		`{"steps":00}`, `{"steps":-}`, `{"steps":-01}`, `{"v":1,"runId":"r2","gates":[{"runId":"\u0072"}]}`, `{"v":1,"runId":"r2","gates":[{"x":1}]}`,
		"{\"v\":1,\"runId\":\"r2\",\"gates\":[{\"gateToken\":\"a\x01b\"}]}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		checkListDecode(t, raw, "r2")
		got, ok := fastSummary(raw)
		if !ok {
			return
		}
		var want storedSummary
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatalf("fastSummary accepted %q, encoding/json refuses it: %v", raw, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("fastSummary(%q)\n got %+v\nwant %+v", raw, got, want)
		}
	})
}

// special is exact where it must be: for every byte at every place of
// a word of plain bytes, it marks the word when the byte is one a string
// may not hold as it is, and its lowest mark is that byte's, whatever
// follows it.
func TestSpecial(t *testing.T) {
	for _, fill := range []byte{'a', 0x20, 0x21, 0x7f, 0x5b, 0x5d, 0x23} {
		for pos := range 8 {
			for c := range 256 {
				for _, after := range []byte{fill, 0, '"', '\\', 0xff} {
					w := make([]byte, 8)
					for i := range w {
						w[i] = fill
						if i > pos {
							w[i] = after
						}
					}
					w[pos] = byte(c)
					m := special(binary.LittleEndian.Uint64(w))
					bad := c < 0x20 || c >= 0x80 || c == '"' || c == '\\'
					switch {
					case bad && (m == 0 || bits.TrailingZeros64(m)/8 != pos):
						t.Fatalf("special(%q) = %#x: byte %d not the first marked", w, m, pos)
					case !bad && after == fill && m != 0:
						t.Fatalf("special(%q) = %#x, want 0", w, m)
					case !bad && m != 0 && bits.TrailingZeros64(m)/8 <= pos:
						t.Fatalf("special(%q) = %#x: marks byte %d or before", w, m, pos)
					}
				}
			}
		}
	}
}

// utcTime reads every time it accepts as time.Time.UnmarshalText does.
func FuzzUTCTime(f *testing.F) {
	for _, s := range []string{"2026-01-02T03:04:05Z", "2026-01-02T03:04:05.1Z", "2026-01-02T03:04:05.123456789Z", "2026-01-02T03:04:05.1234567891Z",
		"2024-02-29T00:00:00Z", "2023-02-29T00:00:00Z", "2000-02-29T23:59:59Z", "1900-02-29T00:00:00Z", "0000-01-01T00:00:00Z", "9999-12-31T23:59:59.999999999Z",
		"2026-13-01T00:00:00Z", "2026-00-01T00:00:00Z", "2026-04-31T00:00:00Z", "2026-01-02T24:00:00Z", "2026-01-02T03:60:00Z", "2026-01-02T03:04:60Z",
		"2026-01-02T03:04:05.Z", "2026-01-02T03:04:05,1Z", "2026-01-02t03:04:05Z", "+026-01-02T03:04:05Z", "2026-1-02T03:04:05Z", "2026-01-02T03:04:05.-1Z"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, s []byte) {
		got, ok := utcTime(s)
		if !ok {
			return
		}
		var want time.Time
		if err := want.UnmarshalText(s); err != nil {
			t.Fatalf("utcTime(%q) = %v, UnmarshalText refuses it: %v", s, got, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("utcTime(%q) = %#v, UnmarshalText %#v", s, got, want)
		}
	})
}
