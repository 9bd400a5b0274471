package eventtext

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
)

// benchEvents is the mix of a long run's log (a ready and a result per
// step) and one of each rarer kind.
func benchEvents() []engine.Event {
	ev := func(typ engine.EventType, step, detail string) engine.Event {
		return engine.Event{Seq: 1, At: time.Unix(0, 0), Type: typ, StepID: step, Detail: json.RawMessage(detail)}
	}
	var evs []engine.Event
	for i := 0; i < 20; i++ {
		evs = append(evs,
			ev(engine.EventReady, "s12", `{"attempt":1}`),
			ev(engine.EventResult, "s12", `{"attempt":1,"result":{"v":"a result of some length for s12"}}`))
	}
	return append(evs,
		ev(engine.EventPlanned, "", `{"flow":"main","revisionDigest":"b823fe1f098be6159c156c3745597c096fc0daff55dd84d6495c37cf25b733db"}`),
		ev(engine.EventResult, "fix", `{"attempt":2,"failure":{"attempt":2,"reason":"ensure failed:\n  result.ok"},"result":{"ok":false}}`),
		ev(engine.EventAttemptStarted, "fix", `{"attempt":1,"by":"stratum run (agent claude)"}`),
		ev(engine.EventGateResolved, "review", `{"decision":"approve","digest":"776452cc65f1aa","resolvedBy":"ann","rationale":"fine"}`),
		ev(engine.EventFanoutAttemptResult, "fan", `{"attempt":1,"itemIndex":2,"stage":0,"success":true}`),
		ev(engine.EventCompleted, "", `{"output":{"v":"x"}}`),
	)
}

func BenchmarkDescribe(b *testing.B) {
	evs := benchEvents()
	b.ReportAllocs()
	for b.Loop() {
		for _, ev := range evs {
			Describe(ev)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(evs)), "ns/event")
}

// attemptDetails are details plainAttempt reads (the first ones) and
// leaves to json.Unmarshal (the rest).
var attemptDetails = []string{
	`{"attempt":1}`, `{"attempt":0}`, `{"attempt":123456789012345678}`,
	`{"attempt":2,"result":{"v":"x"}}`, `{"attempt":3,"result":null}`, `{"attempt":4,"result":[1,{"attempt":9}]}`,
	`{"attempt":5,"result":"a } \" , \"attempt\":7"}`, `{"attempt":6,"result": {"spaced" : 1 } }`,
	``, `{}`, `{"attempt":-1}`, `{"attempt":01}`, `{"attempt":1.0}`, `{"attempt":1e3}`, `{"attempt":1234567890123456789}`,
	`{"attempt":1,"result":}`, `{"attempt":1,"result":1,"attempt":2}`, `{"attempt":1,"failure":{"reason":"r"},"result":1}`,
	`{"attempt":1,"iterate":{"iteration":1,"max":3}}`, `{"attempt":1 }`, `{"Attempt":1}`, `{"attempt":"1"}`, `{"attempt":1,"result":[}`,
	`{"attempt":1}}`, `{"attempt":}`,
}

// TestPlainAttempt: what plainAttempt reads is what json.Unmarshal reads
// into the engine's ready and result details, and a result it reads is
// an accepted one.
func TestPlainAttempt(t *testing.T) {
	read := 0
	for _, d := range attemptDetails {
		if checkPlainAttempt(t, []byte(d)) {
			read++
		}
	}
	if read != 8 {
		t.Errorf("plainAttempt read %d of the details, want the first 8", read)
	}
}

func checkPlainAttempt(t *testing.T, detail []byte) bool {
	t.Helper()
	n, ok := plainAttempt(detail)
	if !ok {
		return false
	}
	var ready engine.ReadyDetail
	if err := json.Unmarshal(detail, &ready); err != nil || ready.Attempt != n {
		t.Errorf("plainAttempt(%s) = %d; json.Unmarshal reads %d, %v", detail, n, ready.Attempt, err)
	}
	var res engine.ResultDetail
	_ = json.Unmarshal(detail, &res) // a result the value model refuses is an error, after the attempt
	if res.Attempt != n || res.Failure != nil || res.Iterate != nil {
		t.Errorf("plainAttempt(%s) = %d; json.Unmarshal reads %+v", detail, n, res)
	}
	return true
}

// TestDescribeAttempts: ready and result events read by plainAttempt or
// by json.Unmarshal describe the same.
func TestDescribeAttempts(t *testing.T) {
	for _, c := range []struct {
		typ    engine.EventType
		detail string
		want   string
	}{
		{engine.EventReady, `{"attempt":1}`, "s: ready (attempt 1)"},
		{engine.EventReady, `{"attempt":12,"result":1}`, "s: ready (attempt 12)"},
		{engine.EventReady, `{ "attempt": 3 }`, "s: ready (attempt 3)"},
		{engine.EventReady, ``, "s: ready (attempt 0)"},
		{engine.EventResult, `{"attempt":2,"result":{"v":"x"}}`, "s: attempt 2 accepted"},
		{engine.EventResult, `{"attempt":2}`, "s: attempt 2 accepted"},
		{engine.EventResult, `{"attempt":2,"failure":{"attempt":2,"reason":"no\ngood"},"result":{}}`, "s: attempt 2 rejected: no good"},
		{engine.EventResult, `{"attempt":3,"iterate":{"iteration":1,"max":4},"result":1}`, "s: attempt 3 accepted (iteration 1 of at most 4)"},
		{engine.EventEvaluateStarted, `{"attempt":4}`, "s: evaluate command started (attempt 4)"},
		{engine.EventEffectInterrupted, `{"attempt":5}`, "s: its command (attempt 5) was interrupted: the process running it died; it runs again"},
	} {
		if got := Describe(engine.Event{Type: c.typ, StepID: "s", Detail: json.RawMessage(c.detail)}); got != c.want {
			t.Errorf("Describe(%s %s) = %q, want %q", c.typ, c.detail, got, c.want)
		}
	}
}

// FuzzPlainAttempt holds plainAttempt to json.Unmarshal on any detail.
func FuzzPlainAttempt(f *testing.F) {
	for _, d := range attemptDetails {
		f.Add([]byte(d))
	}
	f.Fuzz(func(t *testing.T, detail []byte) {
		checkPlainAttempt(t, detail)
	})
}
