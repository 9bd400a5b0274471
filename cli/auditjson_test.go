package cli

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/expr"
)

// TestAuditJSONFields: the engine types the audit writes by hand have the
// fields auditjsonfields.go lists. When this fails, the engine changed
// one of them: update appendEvent/appendStep/appendAttempt/ledger and the
// lists (until then the audit writes that type with encoding/json).
func TestAuditJSONFields(t *testing.T) {
	if !eventFieldsKnown() {
		t.Error("engine.Event's fields are not the ones appendEvent writes (auditjsonfields.go)")
	}
	if !stepFieldsKnown() {
		t.Error("engine.StepView's, engine.Attempt's or engine.Ledger's fields are not the ones appendStep writes (auditjsonfields.go)")
	}
}

// TestAuditJSONFieldsCheck: the check sees a type that is not the list.
func TestAuditJSONFieldsCheck(t *testing.T) {
	type renamed struct {
		Seq int64 `json:"sequence"`
	}
	type more struct {
		Seq   int64 `json:"seq"`
		Extra int
	}
	type exact struct {
		Seq    int64 `json:"seq"`
		hidden int
	}
	want := []jsonField{field[int64]("Seq", "seq")}
	if fieldsAre[renamed](want) || fieldsAre[more](want) || !fieldsAre[exact](want) {
		t.Error("fieldsAre does not tell a renamed or added field from the list")
	}
	if !marshals[time.Time]() || marshals[engine.Ledger]() || !plainStrings[engine.StepStatus]() || plainStrings[engine.Ledger]() {
		t.Error("marshals misreads a type's JSON methods")
	}
}

func jsonValue(t testing.TB, src string) engine.Value {
	t.Helper()
	v, err := expr.DecodeJSON([]byte(src))
	if err != nil {
		t.Fatalf("DecodeJSON(%s): %v", src, err)
	}
	return engine.Some(v)
}

var auditTime = time.Date(2026, 3, 4, 5, 6, 7, 890123000, time.UTC)

func auditEvents(t testing.TB) []engine.Event {
	zone := time.FixedZone("x", -(3*3600 + 30*60))
	return []engine.Event{
		{Seq: 1, At: auditTime, Type: engine.EventPlanned, Hash: "ab12"},
		{Seq: 2, At: auditTime.Truncate(time.Second), Type: engine.EventReady, StepID: "s1", Detail: json.RawMessage(`{"attempt":1}`), Hash: "cd"},
		{Seq: 3, At: auditTime.In(zone), Type: engine.EventResult, StepID: "s<1>&", Detail: json.RawMessage(`{"attempt":1,"result":{"v":"<a & b>\u2028 \"q\" \\","n":[1,-2.5e-7,{},[]],"e":{}}}`), Hash: "ef"},
		{Seq: 4, At: time.Time{}, Type: "odd \"type\"\n", StepID: "tab\there\u2028\xff", Detail: json.RawMessage(` { "spaced" : [ true , null ] } `), Hash: ""},
		{Seq: math.MaxInt64, At: auditTime, Type: engine.EventCompleted, Detail: json.RawMessage(`"just a string"`), Hash: "h"},
		{Seq: -1, At: auditTime, Type: engine.EventFailed, Detail: json.RawMessage(`[]`), Hash: "h"},
	}
}

// TestAuditJSONEvents: appendEvent writes each event as writeJSON does.
func TestAuditJSONEvents(t *testing.T) {
	aj := newAuditJSON()
	for _, ev := range auditEvents(t) {
		checkAuditEvent(t, aj, ev)
	}
}

// checkAuditEvent compares the hand writer with encoding/json on ev: the
// same bytes, or both an error.
func checkAuditEvent(t *testing.T, aj *auditJSON, ev engine.Event) {
	t.Helper()
	want, wantErr := indentedJSON(ev, auditItemPrefix)
	got, err := aj.appendEvent([]byte("x"), ev)
	switch {
	case wantErr != nil && err == nil:
		t.Errorf("event %+v: appendEvent wrote %s, encoding/json fails: %v", ev, got, wantErr)
	case wantErr == nil && err != nil:
		t.Errorf("event %+v: appendEvent: %v, encoding/json writes %s", ev, err, want)
	case wantErr == nil && string(got) != "x"+want:
		t.Errorf("event %+v:\n got %s\nwant x%s", ev, got, want)
	}
	// What the audit writes, the fallback included.
	b, err := aj.event([]byte("x"), ev)
	if (err != nil) != (wantErr != nil) || wantErr == nil && string(b) != "x"+want {
		t.Errorf("event %+v: event() = %s, %v; want x%s, %v", ev, b, err, want, wantErr)
	}
}

// TestAuditJSONEventErrors: what encoding/json refuses is refused, with
// encoding/json's error.
func TestAuditJSONEventErrors(t *testing.T) {
	aj := newAuditJSON()
	for _, ev := range []engine.Event{
		{Seq: 1, At: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), Type: "t"},
		{Seq: 1, At: time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC), Type: "t"},
		{Seq: 1, At: auditTime, Type: "t", Detail: json.RawMessage{}},
		{Seq: 1, At: auditTime, Type: "t", Detail: json.RawMessage(`{"open":`)},
	} {
		checkAuditEvent(t, aj, ev)
		_, want := indentedJSON(ev, auditItemPrefix)
		if _, err := aj.event(nil, ev); err == nil || err.Error() != want.Error() {
			t.Errorf("event %+v: error %v, want %v", ev, err, want)
		}
	}
}

func intp(n int) *int           { return &n }
func floatp(f float64) *float64 { return &f }

func auditSteps(t testing.TB) []*engine.StepView {
	full := engine.Attempt{
		Attempt: 2, At: auditTime, Stage: intp(0), Result: jsonValue(t, `{"v":"<b>","list":[1,2,{"x":[]}]}`),
		Failure: &engine.Failure{Attempt: 2, Reason: "ensure failed: <x> & \"y\"\n"}, FailureKind: "ensure",
		Usage: &engine.Ledger{USD: 0.0125, Tokens: 1500, MS: 1e21}, DurationMs: floatp(5120.5), Model: "claude", Effort: "high",
		Task: "do the thing\nwith <html> & \u2028", Stderr: "\x1b[31mred\x1b[0m",
		Changes: &engine.Changes{HeadBefore: "a", HeadAfter: "b", TreeBefore: "c", TreeAfter: "d", Stat: " f | 2 +-\n", PatchBytes: 12},
	}
	return []*engine.StepView{
		{Status: engine.StepPending},
		{Status: engine.StepPending, Attempts: []engine.Attempt{}},
		{Status: engine.StepSucceeded, Attempts: []engine.Attempt{{Attempt: 1, At: auditTime, Result: jsonValue(t, `{"v":"x"}`), Task: "step one"}},
			Output: jsonValue(t, `{"v":"x"}`), Spent: engine.Ledger{Dispatches: 1}},
		{Status: engine.StepFailed, Attempts: []engine.Attempt{full, {Attempt: 3, At: auditTime, DurationMs: floatp(1e-7), Usage: &engine.Ledger{}}},
			Epoch: 2, DispatchToken: "tok", Task: "t", GateToken: "g", Decision: engine.Decision("approve"), Output: jsonValue(t, `null`),
			Failure: &engine.Failure{Attempt: 3, Reason: "r", Cause: engine.CauseStepFailed, Step: "s"}, Routed: &engine.Failure{Reason: "routed"},
			Skip: &engine.SkipInfo{Reason: "because", Source: "a"}, Iterations: 4,
			Fanout:   &engine.FanoutView{Over: jsonValue(t, `[1,2]`), Items: []engine.ItemView{{Index: 0, Status: engine.StepSucceeded, Attempts: []engine.Attempt{full}, Output: jsonValue(t, `"o"`)}}, Merged: intp(1)},
			Sub:      &engine.SubflowView{Input: jsonValue(t, `{}`), Steps: map[string]*engine.StepView{"b": {Status: engine.StepPending}, "a": {Status: engine.StepSucceeded}}},
			Spent:    engine.Ledger{USD: 123456789.125, Tokens: -0.5, Dispatches: 3, MS: 0.000001},
			Revision: &engine.Revision{Gate: "review", Round: 1, Note: "redo <it>"}, Started: &engine.AttemptStart{At: auditTime, By: "stratum run"},
			Interrupted: &engine.AttemptStart{At: auditTime}},
		{Status: engine.StepSkipped, Output: jsonValue(t, `[]`), Spent: engine.Ledger{USD: math.Copysign(0, -1), Tokens: 5e-324}},
	}
}

// TestAuditJSONSteps: appendStep writes each step as writeJSON does.
func TestAuditJSONSteps(t *testing.T) {
	aj := newAuditJSON()
	for _, sv := range auditSteps(t) {
		checkAuditStep(t, aj, sv)
	}
}

func checkAuditStep(t *testing.T, aj *auditJSON, sv *engine.StepView) {
	t.Helper()
	want, wantErr := indentedJSON(sv, auditItemPrefix)
	got, err := aj.appendStep([]byte("x"), sv)
	switch {
	case wantErr != nil && err == nil:
		t.Errorf("step %+v: appendStep wrote %s, encoding/json fails: %v", sv, got, wantErr)
	case wantErr == nil && err != nil:
		t.Errorf("step %+v: appendStep: %v, encoding/json writes %s", sv, err, want)
	case wantErr == nil && string(got) != "x"+want:
		t.Errorf("step %+v:\n got %s\nwant x%s", sv, got, want)
	}
	b, err := aj.step([]byte("x"), sv)
	if (err != nil) != (wantErr != nil) || wantErr == nil && string(b) != "x"+want {
		t.Errorf("step %+v: step() = %s, %v; want x%s, %v", sv, b, err, want, wantErr)
	}
}

// TestAuditJSONStepErrors: a number JSON cannot hold is refused, with
// encoding/json's error.
func TestAuditJSONStepErrors(t *testing.T) {
	aj := newAuditJSON()
	for _, sv := range []*engine.StepView{
		{Status: engine.StepFailed, Spent: engine.Ledger{USD: math.NaN()}},
		{Status: engine.StepFailed, Attempts: []engine.Attempt{{Attempt: 1, At: auditTime, DurationMs: floatp(math.Inf(1))}}},
		{Status: engine.StepFailed, Attempts: []engine.Attempt{{Attempt: 1, At: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}}},
		{Status: engine.StepFailed, Output: engine.Some(math.Inf(-1))},
	} {
		checkAuditStep(t, aj, sv)
		_, want := indentedJSON(sv, auditItemPrefix)
		if _, err := aj.step(nil, sv); err == nil || err.Error() != want.Error() {
			t.Errorf("step %+v: error %v, want %v", sv, err, want)
		}
	}
}

// FuzzAuditJSONEvent holds appendEvent to encoding/json over events of
// any content.
func FuzzAuditJSONEvent(f *testing.F) {
	for _, ev := range auditEvents(f) {
		_, off := ev.At.Zone()
		f.Add(ev.Seq, ev.At.UnixNano(), off, string(ev.Type), ev.StepID, []byte(ev.Detail), ev.Hash)
	}
	aj := newAuditJSON()
	f.Fuzz(func(t *testing.T, seq, nanos int64, offset int, typ, stepID string, detail []byte, hash string) {
		if detail != nil && !json.Valid(detail) {
			// Details are valid JSON: the store checks every event it reads.
			return
		}
		at := time.Unix(0, nanos).In(time.FixedZone("z", offset%(100*3600)))
		checkAuditEvent(t, aj, engine.Event{Seq: seq, At: at, Type: engine.EventType(typ), StepID: stepID, Detail: detail, Hash: hash})
	})
}

// FuzzAuditJSONStep holds appendStep to encoding/json over steps of any
// text, numbers and recorded values.
func FuzzAuditJSONStep(f *testing.F) {
	f.Add("succeeded", "task <x>", 1, 0.5, 5120.0, []byte(`{"v":"x"}`), "model")
	f.Add("", "", 0, 0.0, 1e-9, []byte(`[]`), "")
	f.Add("\u2028", "\n", -3, 1e300, -0.0, []byte(`"\u00e9\ud800"`), "\xff")
	aj := newAuditJSON()
	f.Fuzz(func(t *testing.T, status, text string, n int, amount, duration float64, value []byte, model string) {
		v, err := expr.DecodeJSON(value)
		if err != nil {
			return
		}
		at := engine.Attempt{Attempt: n, At: auditTime.Add(time.Duration(n) * time.Millisecond), Stage: &n, Result: engine.Some(v),
			FailureKind: text, Usage: &engine.Ledger{USD: amount, MS: duration}, DurationMs: &duration, Model: model, Task: text, Stderr: text}
		checkAuditStep(t, aj, &engine.StepView{Status: engine.StepStatus(status), Attempts: []engine.Attempt{at, {At: auditTime}},
			Epoch: n, Task: text, Decision: engine.Decision(model), Output: engine.Some(v), Iterations: n,
			Spent: engine.Ledger{USD: amount, Tokens: duration, Dispatches: float64(n)}, Failure: &engine.Failure{Reason: text}})
	})
}
