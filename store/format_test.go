package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// The fixed vector. Its hashes were computed independently of this package
// (Python's hashlib over the byte strings docs/storage.md defines).
const (
	vectorRunID   = "run-1"
	vectorGenesis = "591d29f0a476336336c85fd4bb582f7c9dd7c647ebbed8f9213bb5db80b1aa21"
	vectorHash1   = "eaac5abb14410640fac8ed41185dcf8979f87c949aa78e4eef41b3b0783307f9"
	vectorCheck   = "faafb6217d78889880abf59ff198bc1a4d4b9954c6951ab1303bc1f1fdac53c3"
	vectorData    = `{ "z": 1, "a": {"y": [1, 2.50, "<&>"], "b": null}, "m": "\u00e9\n" }`
	vectorCanon   = `{"a":{"b":null,"y":[1,2.50,"<&>"]},"m":"é\n","z":1}`
)

var vectorAt = time.Date(2026, 1, 2, 4, 4, 5, 123456789, time.FixedZone("CET", 3600))

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from golden:\n got %q\nwant %q", name, got, want)
	}
}

func TestCanonicalJSON(t *testing.T) {
	tests := []struct{ in, want string }{
		{vectorData, vectorCanon},
		{`null`, `null`},
		{` "a<b>&c" `, `"a<b>&c"`},
		{`[1e3, -0, 0.10, 12345678901234567890123]`, `[1e3,-0,0.10,12345678901234567890123]`},
		{`{"b":1,"a":2,"b":3}`, `{"a":2,"b":3}`},
		{`{"\u00e9":1,"e":2,"E":3}`, `{"E":3,"e":2,"é":1}`},
		{`"\u2028\t\u0001"`, `"\u2028\t\u0001"`},
	}
	for _, tc := range tests {
		got, err := canonicalJSON([]byte(tc.in))
		if err != nil {
			t.Errorf("canonicalJSON(%s): %v", tc.in, err)
			continue
		}
		if string(got) != tc.want {
			t.Errorf("canonicalJSON(%s) = %s, want %s", tc.in, got, tc.want)
		}
		again, err := canonicalJSON(got)
		if err != nil || !bytes.Equal(again, got) {
			t.Errorf("canonicalJSON not idempotent on %s: %s, %v", got, again, err)
		}
	}
	for _, bad := range []string{``, `{`, `{"a":1} x`, `[1,]`, `01`, `NaN`} {
		if _, err := canonicalJSON([]byte(bad)); err == nil {
			t.Errorf("canonicalJSON(%q) accepted invalid JSON", bad)
		}
	}
}

func TestEventVector(t *testing.T) {
	if g := genesisHash(vectorRunID); g != vectorGenesis {
		t.Fatalf("genesis = %s, want %s", g, vectorGenesis)
	}
	line, hash, err := encodeEvent(1, vectorGenesis, NewEvent{Type: "step_done", At: vectorAt, Data: json.RawMessage(vectorData)}, false)
	if err != nil {
		t.Fatal(err)
	}
	if hash != vectorHash1 {
		t.Errorf("hash = %s, want %s", hash, vectorHash1)
	}
	golden(t, "event.jsonl", append(line, '\n'))

	ev, err := decodeEvent(line)
	if err != nil {
		t.Fatal(err)
	}
	want := Event{Seq: 1, Type: "step_done", At: vectorAt.UTC(), Data: json.RawMessage(vectorCanon), PrevHash: vectorGenesis, Hash: vectorHash1}
	if ev.Seq != want.Seq || ev.Type != want.Type || !ev.At.Equal(want.At) || string(ev.Data) != string(want.Data) || ev.PrevHash != want.PrevHash || ev.Hash != want.Hash {
		t.Errorf("decoded %+v, want %+v", ev, want)
	}
	// The documented shortcut: the hash input is the line minus its hash member.
	body := strings.Replace(string(line), `"hash":"`+vectorHash1+`",`, "", 1)
	if hashBody([]byte(body)) != vectorHash1 {
		t.Error("hash is not the SHA-256 of the line without its hash member")
	}
}

func TestEncodeEventRejects(t *testing.T) {
	at := time.Unix(1, 0)
	tests := []struct {
		name string
		ev   NewEvent
	}{
		{"empty type", NewEvent{At: at}},
		{"type with space", NewEvent{Type: "a b", At: at}},
		{"type with quote", NewEvent{Type: `a"`, At: at}},
		{"long type", NewEvent{Type: strings.Repeat("x", 65), At: at}},
		{"zero time", NewEvent{Type: "x"}},
		{"year 10000", NewEvent{Type: "x", At: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}},
		{"bad data", NewEvent{Type: "x", At: at, Data: json.RawMessage(`{"a":`)}},
	}
	for _, tc := range tests {
		if _, _, err := encodeEvent(1, vectorGenesis, tc.ev, false); !errors.Is(err, ErrInvalidInput) {
			t.Errorf("%s: err = %v, want ErrInvalidInput", tc.name, err)
		}
	}
	line, _, err := encodeEvent(1, vectorGenesis, NewEvent{Type: "planned", At: at}, false)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(line), `"data":null`) {
		t.Errorf("nil data not stored as null: %s", line)
	}
}

// TestDecodeEventEveryByte flips every byte of a line in turn: each
// variant must be refused (never decoded as a valid event).
func TestDecodeEventEveryByte(t *testing.T) {
	line, _, err := encodeEvent(7, vectorGenesis, NewEvent{Type: "result", At: vectorAt, Data: json.RawMessage(vectorData)}, false)
	if err != nil {
		t.Fatal(err)
	}
	for i := range line {
		for _, flip := range []byte{0x01, 0x20, 0x80} {
			bad := bytes.Clone(line)
			bad[i] ^= flip
			if _, err := decodeEvent(bad); err == nil {
				t.Fatalf("flipping byte %d (^%#x) of %s was accepted: %s", i, flip, line, bad)
			}
		}
	}
	for _, bad := range []string{
		strings.Replace(string(line), `{"at"`, `{ "at"`, 1),                            // whitespace
		strings.Replace(string(line), `"seq":7`, `"seq":7.0`, 1),                       // number spelling
		strings.Replace(string(line), `"type":"result"}`, `"type":"result","x":1}`, 1), // extra member
		strings.Replace(string(line), `.123456789Z`, `.123456789+00:00`, 1),            // time spelling
	} {
		if _, err := decodeEvent([]byte(bad)); err == nil {
			t.Errorf("non-canonical line accepted: %s", bad)
		}
	}
}

// The v2 vectors: an event that begins a write, the state file and the
// head record of a run created with it. Hashes from Python's hashlib over
// the byte strings docs/storage.md defines.
const (
	vectorHashBegin = "043abd591af44c5f25020753b3bc617a1ad1f4892603f9a344c0293e78b6cf79"
	vectorCheckV2   = "23a102d5cb9518fe9660d9a4760f93ae299764bd703e36b1cf58994506f0569e"
	vectorHeadCheck = "c2546d7b4468d8d54257bab53e46892e718b7adc9b95c9c9b6a46ee3079edbdf"
)

func TestEventVectorBegin(t *testing.T) {
	line, hash, err := encodeEvent(1, vectorGenesis, NewEvent{Type: "step_done", At: vectorAt, Data: json.RawMessage(vectorData)}, true)
	if err != nil {
		t.Fatal(err)
	}
	if hash != vectorHashBegin {
		t.Errorf("hash = %s, want %s", hash, vectorHashBegin)
	}
	golden(t, "event-begin.jsonl", append(line, '\n'))
	ev, err := decodeEvent(line)
	if err != nil || !ev.Begin || ev.Hash != vectorHashBegin {
		t.Errorf("decoded %+v, %v", ev, err)
	}
	// An explicit false is not canonical: absent is.
	bad := strings.Replace(string(line), `"begin":true`, `"begin":false`, 1)
	if _, err := decodeEvent([]byte(bad)); err == nil {
		t.Error(`"begin":false was accepted`)
	}
}

func TestEnvelopeVector(t *testing.T) {
	line, _, _ := encodeEvent(1, vectorGenesis, NewEvent{Type: "step_done", At: vectorAt, Data: json.RawMessage(vectorData)}, true)
	env := envelope{Version: 2, RunID: vectorRunID, Seq: 1, Head: vectorHashBegin, LogSize: int64(len(line) + 1), Rev: 1,
		Summary: []byte(`{"status":"running"}`), SavedAt: vectorAt.UTC(), State: []byte(`{"status":"running"}`)}
	data := sealEnvelope(&env)
	if env.Check != vectorCheckV2 {
		t.Errorf("check = %s, want %s", env.Check, vectorCheckV2)
	}
	golden(t, "state.json", data)
	var generic map[string]any
	if err := json.Unmarshal(data, &generic); err != nil {
		t.Errorf("state file is not valid JSON: %v", err)
	}
	got, err := decodeEnvelope(data)
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != 2 || got.RunID != env.RunID || got.Seq != env.Seq || got.Head != env.Head || got.LogSize != env.LogSize || got.Rev != 1 ||
		string(got.State) != string(env.State) || string(got.Summary) != string(env.Summary) || !got.SavedAt.Equal(env.SavedAt) || got.Check != vectorCheckV2 {
		t.Errorf("decoded %+v, want %+v", got, env)
	}

	rec := recordOf(got)
	hb := encodeHeadRecord(rec)
	if !bytes.HasPrefix(hb, []byte(`{"check":"`+vectorHeadCheck+`",`)) {
		t.Errorf("head record check wrong: %s", hb)
	}
	golden(t, "head.json", hb)
	back, err := decodeHeadRecord(hb)
	if err != nil || back.Rev != 1 || back.State != vectorCheckV2 || back.Hash != vectorHashBegin || string(back.Summary) != `{"status":"running"}` {
		t.Errorf("head record decoded %+v, %v", back, err)
	}
}

// TestEnvelopeV1 reads a state file of the first format, which runs
// written before format v2 still have.
func TestEnvelopeV1(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "golden", "state-v1.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(data, []byte(`{"check":"`+vectorCheck+`",`)) {
		t.Fatalf("v1 vector changed: %s", data[:80])
	}
	got, err := decodeEnvelope(data)
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != 1 || got.RunID != vectorRunID || got.Seq != 1 || got.Head != vectorHash1 || got.LogSize != 279 || got.Rev != 0 || got.Summary != nil || string(got.State) != `{"status":"running"}` {
		t.Errorf("decoded %+v", got)
	}
}

func TestDecodeEnvelopeEveryByte(t *testing.T) {
	data := encodeEnvelope(envelope{RunID: "r", Seq: 3, Head: vectorHash1, LogSize: 900, Rev: 4, Summary: []byte(`{"s":"x"}`), SavedAt: vectorAt, State: []byte(`{"a":[1,2,3]}`)})
	for i := range data {
		bad := bytes.Clone(data)
		bad[i] ^= 0x01
		if _, err := decodeEnvelope(bad); err == nil {
			t.Fatalf("flipping byte %d of the state file was accepted", i)
		}
	}
	for _, n := range []int{0, 1, 10, 76, len(data) / 2, len(data) - 1} {
		if _, err := decodeEnvelope(data[:n]); err == nil {
			t.Errorf("state file truncated to %d bytes was accepted", n)
		}
	}
}

func TestLastLines(t *testing.T) {
	var log []byte
	var offsets []int64
	for i := range 50 {
		offsets = append(offsets, int64(len(log)))
		// Line lengths from a few bytes to beyond the first read window.
		log = append(log, strings.Repeat(string(rune('a'+i%26)), 1+i*i*7)...)
		log = append(log, '\n')
	}
	r := bytes.NewReader(log)
	for _, n := range []int64{1, 2, 17, 49, 50, 51, 100} {
		lines, _, err := lastLines(r, int64(len(log)), n)
		if err != nil {
			t.Fatal(err)
		}
		want := min(n, 50)
		if int64(len(lines)) != want {
			t.Fatalf("n=%d: got %d lines", n, len(lines))
		}
		for j, l := range lines {
			idx := 50 - int(want) + j
			if l.offset != offsets[idx] || len(l.text) != 1+idx*idx*7 {
				t.Fatalf("n=%d line %d: offset %d len %d, want %d, %d", n, j, l.offset, len(l.text), offsets[idx], 1+idx*idx*7)
			}
		}
	}
	if _, _, err := lastLines(r, int64(len(log)-1), 1); err == nil {
		t.Error("an end inside a line was accepted")
	}
}

func FuzzDecodeEvent(f *testing.F) {
	line, _, _ := encodeEvent(1, vectorGenesis, NewEvent{Type: "step_done", At: vectorAt, Data: json.RawMessage(vectorData)}, false)
	f.Add(line)
	f.Add([]byte(`{"at":"x","data":null}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		ev, err := decodeEvent(b)
		if err != nil {
			return
		}
		// Whatever is accepted must re-encode to exactly the same line.
		again, hash, err := encodeEvent(ev.Seq, ev.PrevHash, NewEvent{Type: ev.Type, At: ev.At, Data: ev.Data}, ev.Begin)
		if err != nil || !bytes.Equal(again, b) || hash != ev.Hash {
			t.Fatalf("accepted line does not round-trip: %q -> %q (%v)", b, again, err)
		}
	})
}

func FuzzDecodeEnvelope(f *testing.F) {
	f.Add(encodeEnvelope(envelope{RunID: "r", Seq: 1, Head: vectorHash1, LogSize: 10, Rev: 2, Summary: []byte(`{"a":"}"}`), SavedAt: vectorAt, State: []byte(`{}`)}))
	f.Add([]byte(`{"check":"`))
	f.Fuzz(func(t *testing.T, b []byte) {
		env, err := decodeEnvelope(b)
		if err != nil {
			return
		}
		if again := encodeEnvelope(env); env.Version == 2 && !bytes.Equal(again, b) {
			t.Fatalf("accepted state file does not round-trip: %q -> %q", b, again)
		}
	})
}

func FuzzCanonicalJSON(f *testing.F) {
	for _, s := range []string{vectorData, `[]`, `"\ud800"`, `{"a":{"a":{"a":1e9999}}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := canonicalJSON(b)
		if err != nil {
			return
		}
		if !json.Valid(c) {
			t.Fatalf("canonical form of %q is not valid JSON: %q", b, c)
		}
		again, err := canonicalJSON(c)
		if err != nil || !bytes.Equal(again, c) {
			t.Fatalf("not idempotent: %q -> %q -> %q (%v)", b, c, again, err)
		}
	})
}

// TestEncodeStoredMatchesDecode: the memory store keeps the event that
// encoding produced instead of decoding its line again; both must be the
// same event.
func TestEncodeStoredMatchesDecode(t *testing.T) {
	at := time.Date(2026, 5, 6, 7, 8, 9, 123400000, time.FixedZone("X", -7200))
	for i, e := range []NewEvent{
		{Type: "step_done", At: vectorAt, Data: json.RawMessage(vectorData)},
		{Type: "null", At: at},
		{Type: "n", At: at.Add(time.Nanosecond), Data: json.RawMessage(`[1e3, "\u00e9", {"b":1,"a":2}]`)},
	} {
		for _, begin := range []bool{false, true} {
			ev, line, err := encodeStored(int64(i+1), vectorGenesis, e, begin)
			if err != nil {
				t.Fatal(err)
			}
			back, err := decodeEvent(line)
			if err != nil {
				t.Fatal(err)
			}
			if ev.Seq != back.Seq || ev.Type != back.Type || !ev.At.Equal(back.At) || ev.At.Location() != back.At.Location() ||
				string(ev.Data) != string(back.Data) || ev.PrevHash != back.PrevHash || ev.Hash != back.Hash || ev.Begin != back.Begin {
				t.Errorf("encoded %+v, decoded %+v", ev, back)
			}
		}
	}
}

func TestIsCanonical(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{`{}`, true}, {`[]`, true}, {`null`, true}, {`true`, true}, {`false`, true}, {`0`, true}, {`-0.5e+10`, true}, {`2.50`, true},
		{`{"a":1,"b":[1,"x",{"c":null}]}`, true}, {`"é\n\t\r\"\\"`, true}, {`{"":1,"a":2}`, true},
		{`{"b":1,"a":2}`, false}, {`{"a":1,"a":2}`, false}, {`{ "a":1}`, false}, {`[1, 2]`, false}, {`"\u00e9"`, false},
		{`"\/"`, false}, {`"<\u003e"`, false}, {"\"\x01\"", false}, {"\"\xff\"", false}, {"\"\u2028\"", false},
		{`01`, false}, {`1.`, false}, {`.5`, false}, {`1e`, false}, {`+1`, false}, {`tru`, false}, {`{}x`, false}, {``, false},
		{`{"a\"b":1}`, false}, {`{"a":}`, false}, {`[1,]`, false}, {`{"a":1,}`, false}, {`"abc`, false},
	} {
		if got := isCanonical([]byte(tc.in)); got != tc.want {
			t.Errorf("isCanonical(%q) = %v, want %v", tc.in, got, tc.want)
		}
		if tc.want {
			if c, err := canonicalJSON([]byte(tc.in)); err != nil || string(c) != tc.in {
				t.Errorf("canonicalJSON(%q) = %q, %v: the case is wrong", tc.in, c, err)
			}
		}
	}
}

// FuzzIsCanonical holds the fast check to the slow one: whatever it calls
// canonical, canonicalJSON leaves unchanged.
func FuzzIsCanonical(f *testing.F) {
	for _, s := range []string{vectorData, `{"a":[1,2.5e3,"x\n"],"b":{}}`, `"é"`, `{"b":1,"a":2}`, `-0`, `[[[]]]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !isCanonical(b) {
			return
		}
		c, err := canonicalJSON(b)
		if err != nil || !bytes.Equal(c, b) {
			t.Fatalf("isCanonical(%q), but canonicalJSON gives %q, %v", b, c, err)
		}
	})
}

// TestSplitLineAgrees: the fast reading of a line gives the fields
// encoding/json gives.
func TestSplitLineAgrees(t *testing.T) {
	for i, data := range []string{vectorData, `null`, `{"x":"\"type\":\"a\"}"}`, `"}"`} {
		line, _, err := encodeEvent(int64(i+1), vectorGenesis, NewEvent{Type: "step_done", At: vectorAt, Data: json.RawMessage(data)}, i%2 == 0)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := splitLine(line)
		var want wireEvent
		if err := json.Unmarshal(line, &want); err != nil || !ok {
			t.Fatalf("%s: split %v, decode %v", line, ok, err)
		}
		if got.At != want.At || got.Begin != want.Begin || !bytes.Equal(got.Data, want.Data) || got.Hash != want.Hash ||
			got.PrevHash != want.PrevHash || got.Seq != want.Seq || got.Type != want.Type {
			t.Errorf("splitLine(%s) = %+v, want %+v", line, got, want)
		}
	}
}
