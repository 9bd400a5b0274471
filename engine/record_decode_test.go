package engine

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// recordSamples are step records as the engine writes them, of the
// shapes fastStepRecord reads.
func recordSamples(t testing.TB) [][]byte {
	at := time.Date(2026, 12, 1, 19, 41, 55, 424274237, time.UTC)
	stage, dur := 2, 1234.5
	out, _ := json.Marshal(map[string]any{"v": "a <result> & \"quoted\"\n", "n": 1.5, "list": []any{true, nil, "x"}})
	var output Value
	if err := output.UnmarshalJSON(out); err != nil {
		t.Fatal(err)
	}
	states := []*stepState{
		{Status: StepSucceeded, AcceptedDispatchToken: "9e15e56a", Spent: Ledger{Dispatches: 1},
			Attempts: []Attempt{{Attempt: 1, At: at, Task: "step one", resultRef: &valueRef{Seq: 5, data: output.Data}, Result: output}},
			Output:   output, outputRef: &valueRef{Seq: 5, data: output.Data}},
		{Status: StepSucceeded, Epoch: 2, Iterations: 3, FanoutEpoch: 1, Task: "line one\nline <two>\u2028", GateToken: "g", GateDigest: "d",
			PastGateTokens: []string{"a", "b"}, Decision: "approve", Spent: Ledger{USD: 0.25, Tokens: 1200, Dispatches: 2, MS: 3.5e3},
			Attempts: []Attempt{
				{Attempt: 1, At: at, Stage: &stage, Result: output, FailureKind: "ensure", Usage: &Ledger{Tokens: 7}, DurationMs: &dur,
					Model: "m", Effort: "high", Stderr: "oops\t\"x\"", Task: "é ü \\ /"},
				{Attempt: 2, At: at.Add(time.Second), Task: "again"},
			},
			Output: output},
		{Status: StepSkipped, Attempts: []Attempt{}},
		{Status: StepPending},
	}
	var raws [][]byte
	for _, ss := range states {
		raw, err := encodeStepRecord(ss)
		if err != nil {
			t.Fatal(err)
		}
		raws = append(raws, raw)
	}
	return raws
}

// decodeRecordJSON is the reference: the record as encoding/json reads it.
func decodeRecordJSON(raw []byte) (stepRecord, error) {
	rec := stepRecord{stepState: &stepState{}}
	err := json.Unmarshal(raw, &rec)
	return rec, err
}

// wantSameRecord checks that fastStepRecord reads raw, and as
// encoding/json does.
func wantSameRecord(t *testing.T, raw []byte) {
	t.Helper()
	got := stepRecord{stepState: &stepState{}}
	if !fastStepRecord(raw, &got) {
		t.Errorf("fastStepRecord refused %s", raw)
		return
	}
	want, err := decodeRecordJSON(raw)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(got.stepState, want.stepState) {
		t.Errorf("fastStepRecord(%s)\n got %+v %+v\nwant %+v %+v", raw, got, got.stepState, want, want.stepState)
	}
}

func TestFastStepRecordReadsWhatTheEngineWrites(t *testing.T) {
	for _, raw := range recordSamples(t) {
		wantSameRecord(t, raw)
	}
	// Escapes and invalid UTF-8 decode as encoding/json decodes them.
	for _, task := range []string{`plain`, `a\"b`, `\u003chtml\u003e`, `\ud83d\ude00`, `\ud83d`, "\xff\xfe", `\/`, `tab\there`} {
		wantSameRecord(t, []byte(`{"task":"`+task+`"}`))
	}
}

func TestFastStepRecordLeavesTheRestToEncodingJSON(t *testing.T) {
	for _, raw := range []string{
		`{"status":"succeeded","status":"failed"}`,      // repeated
		`{"Status":"succeeded"}`,                        // encoding/json matches keys case-insensitively
		`{"status":"succeeded","failure":{"kind":"x"}}`, // a member it does not read
		`{"status":null}`,
		`{"output":null}`,
		`{"epoch":1.0}`,
		`{"epoch":01}`,
		`{"spent":{"usd":01}}`,
		`{"spent":{"usd":1.}}`,
		`{"spent":{"usd":.5}}`,
		`{"spent":{"usd":1e}}`,
		`{"spent":{"usd":+1}}`,
		`{"spent":{"usd":1e999}}`,
		`{"outputRef":{"seq":5,"order":{"k":["b","a"]}}}`,
		`{"attempts":[{"attempt":1,"at":"2026-01-02T03:04:05+01:00"}]}`,
		`{"attempts":[{"attempt":1,"attempt":2}]}`,
		`{"task":"a` + "\x01" + `"}`,
		`{"task":"\x"}`,
		`{"task":"unterminated}`,
		` {"status":"succeeded"}`,
		`{"status":"succeeded"} `,
		`{"status" :"succeeded"}`,
		`{"output":tru}`,
		`{"output":{"a":1,}}`,
		`{"attempts":[{"result":"`, // truncated: must be refused, not read past its end
		`{"output":"\\`,
	} {
		rec := stepRecord{stepState: &stepState{}}
		if fastStepRecord([]byte(raw), &rec) {
			t.Errorf("fastStepRecord accepted %s", raw)
		}
	}
}

func FuzzFastStepRecord(f *testing.F) {
	for _, raw := range recordSamples(f) {
		f.Add(raw)
	}
	for _, s := range []string{
		`{}`, `{"epoch":-0}`, `{"epoch":-1}`, `{"spent":{"usd":-0.5e-3}}`, `{"spent":{"usd":0}}`, `{"spent":{}}`,
		`{"attempts":[]}`, `{"attempts":[{}]}`, `{"pastGateTokens":[]}`, `{"output":[1,{"a":[]}]}`, `{"output":"x"}`,
		`{"attempts":[{"result":{"b":1,"a":2}}]}`, `{"attempts":[{"result":"`, `{"output":"\\`, `{"output":"ab`, `{"outputRef":{"seq":9223372036854775807}}`, `{"attempts":[{"stage":0,"durationMs":1E+2}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got := stepRecord{stepState: &stepState{}}
		if !fastStepRecord(raw, &got) {
			return
		}
		want, err := decodeRecordJSON(raw)
		if err != nil {
			t.Fatalf("fastStepRecord accepted %q, encoding/json refuses it: %v", raw, err)
		}
		if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(got.stepState, want.stepState) {
			t.Fatalf("fastStepRecord(%q)\n got %+v %+v\nwant %+v %+v", raw, got, got.stepState, want, want.stepState)
		}
	})
}

// BenchmarkFastStepRecord decodes the everyday record of a finished step,
// as an audit does for each one.
func BenchmarkFastStepRecord(b *testing.B) {
	raw := []byte(`{"status":"succeeded","acceptedDispatchToken":"9e15e56a-5f3c-460a-86f0-458d4a679bb7","spent":{"dispatches":1},"attempts":[{"attempt":1,"at":"2026-12-01T19:41:55.424274237Z","task":"step 2 after a result of some length for s1","resultRef":{"seq":8}}],"outputRef":{"seq":8}}`)
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		rec := stepRecord{stepState: &stepState{}}
		if !fastStepRecord(raw, &rec) {
			b.Fatal("refused")
		}
	}
}
