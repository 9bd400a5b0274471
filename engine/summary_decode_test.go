package engine

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
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
	}
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
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
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
