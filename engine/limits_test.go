package engine

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// An oversized output or failure text is refused before anything is
// recorded, with a message that says the limit and what to do; the
// dispatch token stays valid for a smaller report.
func TestStepDoneSizeLimits(t *testing.T) {
	big := json.RawMessage(`{"v":"` + strings.Repeat("x", MaxOutputBytes) + `"}`)
	cases := []struct {
		name string
		res  StepResult
		want string
	}{
		{"output", StepResult{Output: big}, "result.output is 1048584 bytes, over the limit of 1048576 bytes for a step output"},
		{"failure", StepResult{Failure: strings.Repeat("e", MaxFailureBytes+1)}, "result.failure is 65537 bytes, over the limit of 65536 bytes for a failure text"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Options{})
			r := h.plan(twoSteps, map[string]any{"x": "X"})
			tok := entry(t, r, "a").DispatchToken
			events := len(h.audit(r.RunID).Events)
			_, err := h.e.StepDone(h.ctx, StepDoneRequest{RunID: r.RunID, StepID: "a", DispatchToken: tok, Result: tc.res})
			var ee *Error
			if !errors.As(err, &ee) || ee.Code() != CodeInvalidInput || !strings.Contains(ee.Message, tc.want) ||
				!strings.Contains(ee.Message, "the dispatch token is still valid") || len(ee.Details) != 1 || ee.Details[0].Path != "result."+tc.name {
				t.Fatalf("oversized %s: %v", tc.name, err)
			}
			if n := len(h.audit(r.RunID).Events); n != events {
				t.Fatalf("the refused report recorded %d events", n-events)
			}
			// The same token takes a report within the limits.
			r = h.report(r, "a", StepResult{Output: json.RawMessage(`{"v":"small"}`)})
			entry(t, r, "b")
		})
	}
}

// The tool schemas advertise null for a usage amount that is not known;
// the engine takes it as not reported (not as a malformed ledger), and
// says exactly what is wrong with an amount it refuses.
func TestUsageNullAndReasons(t *testing.T) {
	h := newHarness(t, Options{})
	r := h.plan(twoSteps, map[string]any{"x": "X"})
	r = h.report(r, "a", StepResult{Output: json.RawMessage(`{"v":"ok"}`), Usage: json.RawMessage(`{"usd":null,"tokens":12,"ms":null}`)})
	entry(t, r, "b")
	if got := h.stepState(r.RunID, "a").Spent; got.Tokens != 12 || got.USD != 0 {
		t.Fatalf("spent %s, want 12 tokens", dump(got))
	}
	for _, tc := range []struct{ usage, telemetry, want string }{
		{`{"usd":-1}`, "", "usage.usd must be a number from 0 to 1e+15 (or null when not known), not -1"},
		{`{"usd":"1"}`, "", `usage.usd must be a number from 0 to 1e+15 (or null when not known), not "1"`},
		{`{"dollars":1}`, "", `usage has no field "dollars"`},
		{`[1]`, "", "usage must be an object {usd?, tokens?, ms?}, not an array"},
		{"", `{"durationMs":-5,"model":"m"}`, "telemetry.durationMs must be a number from 0 to 1e+15, not -5"},
		{"", `{"durationMs":5,"model":""}`, `telemetry.model must be a non-empty string, not ""`},
		{"", `{"durationMs":5,"model":"m","effort":null}`, "telemetry.effort must be a non-empty string, not null"},
	} {
		r := h.plan(twoSteps, map[string]any{"x": "X"})
		res := StepResult{Output: json.RawMessage(`{"v":"ok"}`)}
		if tc.usage != "" {
			res.Usage = json.RawMessage(tc.usage)
		}
		if tc.telemetry != "" {
			res.Telemetry = json.RawMessage(tc.telemetry)
		}
		r = h.report(r, "a", res)
		if en := entry(t, r, "a"); en.PreviousFailure == nil || !strings.Contains(en.PreviousFailure.Reason, tc.want) {
			t.Errorf("usage %s telemetry %s: previous failure %s, want %q", tc.usage, tc.telemetry, dump(en.PreviousFailure), tc.want)
		}
	}
}
