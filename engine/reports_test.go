package engine

// What a report may hold and how it is checked: hostile values, invalid UTF-8, the order of the checks, default attempts, quoted reasons, copied caller values.

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stratum-go/stratum/expr"
)

// Hostile values in a report are failed attempts, never internal errors:
// an amount large enough to overflow the ledgers, an output nested deep
// enough to be unstorable.
func TestHostileReportValues(t *testing.T) {
	deep := func(n int) json.RawMessage {
		return json.RawMessage(strings.Repeat("[", n) + strings.Repeat("]", n))
	}
	for _, tc := range []struct {
		name   string
		first  StepResult
		second StepResult
		reason string
	}{
		{"usage overflow",
			StepResult{Output: json.RawMessage(`{"v":1}`), Usage: json.RawMessage(`{"usd":1e308}`)},
			StepResult{Output: json.RawMessage(`{"v":2}`), Usage: json.RawMessage(`{"usd":1e308}`)},
			"invalid usage ledger entry"},
		{"tokens overflow",
			StepResult{Output: json.RawMessage(`{"v":1}`), Usage: js(map[string]any{"tokens": 1.7e308})},
			StepResult{Output: json.RawMessage(`{"v":2}`), Usage: js(map[string]any{"tokens": 1.7e308})},
			"invalid usage ledger entry"},
		{"deep output", StepResult{Output: js(deep(9999))}, StepResult{Output: js(deep(10000))}, "nested deeper than"},
		{"deep telemetry", StepResult{Output: json.RawMessage(`{"v":"x"}`), Telemetry: json.RawMessage(`{"model":` + string(deep(9999)) + `,"durationMs":1}`)},
			StepResult{Output: json.RawMessage(`{"v":"x"}`), Telemetry: js(map[string]any{"model": "m", "durationMs": 1, "effort": []any{[]any{}}})}, "invalid connector telemetry"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Options{})
			r := h.plan(strings.Replace(twoSteps, "attempts: 3", "attempts: 4", 1), map[string]any{"x": "X"})
			for i, res := range []StepResult{tc.first, tc.second} {
				en := entry(t, r, "a")
				var err error
				r, err = h.e.StepDone(h.ctx, StepDoneRequest{RunID: r.RunID, StepID: "a", DispatchToken: en.DispatchToken, Result: res})
				if err != nil {
					t.Fatalf("report %d: %v (code %s)", i+1, err, CodeOf(err))
				}
			}
			en := entry(t, r, "a")
			if en.PreviousFailure == nil || !strings.Contains(en.PreviousFailure.Reason, tc.reason) {
				t.Fatalf("entry %s, want a failure containing %q", dump(en), tc.reason)
			}
			if _, err := h.reopen(Options{}).Audit(h.ctx, r.RunID); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Text that is not valid UTF-8 cannot be stored as JSON as it is: free
// text (failure reasons, command stderr) is stored with U+FFFD and must be
// held in memory the same way, and identifiers (receipt ids, labels) are
// refused, or a second process would not recognise them.
func TestInvalidUTF8(t *testing.T) {
	h := newHarness(t, Options{})
	r := h.plan(twoSteps, map[string]any{"x": "X"})
	r = h.report(r, "a", StepResult{Failure: "bad \xce byte"})
	if en := entry(t, r, "a"); en.PreviousFailure.Reason != "bad \ufffd byte" {
		t.Fatalf("reason %q", en.PreviousFailure.Reason)
	}
	r = h.report(r, "a", StepResult{Output: js(map[string]any{"v": "x\xff"}), Telemetry: js(map[string]any{"model": "m\xff", "durationMs": 1})})
	if st := h.stepState(r.RunID, "a"); jsonOf(t, st.Output.Data) != "{\"v\":\"x\ufffd\"}" || st.Attempts[1].Model != "m\ufffd" {
		t.Fatalf("a %s", dump(st))
	}
	a1 := h.audit(r.RunID)
	a2, err := h.reopen(Options{}).Audit(h.ctx, r.RunID)
	if err != nil || dump(a1) != dump(a2) {
		t.Fatalf("processes disagree: %v\n%s\n%s", err, dump(a1.Steps), dump(a2.Steps))
	}
	_, err = h.e.UsageReport(h.ctx, r.RunID, Receipt{DispatchID: "d\xff", Source: "s", Usage: js(map[string]any{"tokens": 1})})
	wantCode(t, err, ErrInvalidReceipt)
	_, err = h.e.Commit(h.ctx, r.RunID, "l\xff")
	wantCode(t, err, ErrInvalidLabel)

	cmd := `printf 'broken \377 stderr' >&2; exit 1`
	r = h.plan(evaluateSpec(cmd, 5000), map[string]any{"n": 1})
	wantFailure(t, r, StatusFailed, "broken \ufffd stderr")
}

// The step_done checks in the order of docs/engine.md, "Step results and
// failure context": each case breaks
// two rules at once and the earlier one must be the reason; what is
// recorded (usage) follows from where the pipeline stopped.
func TestStepDoneCheckOrder(t *testing.T) {
	spec := `
version: 1
contracts:
  R: {v: string, n: number, opt: "integer?"}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${a.output}", contract: R}
    budget: {usd: 10}
    steps:
      - id: a
        do: a
        out: R
        attempts: 5
        budget: {tokens: 100}
        ensure:
          - expr: "result.n > 0"
          - expr: "result.n > 10"
`
	good := json.RawMessage(`{"v":"x","n":50}`)
	tele := map[string]any{"durationMs": 1, "model": "m"}
	for _, tc := range []struct {
		name   string
		res    StepResult
		reason string // the whole failure reason
		spent  Ledger // flow spend after the report (1 dispatch each issuance)
	}{
		{"telemetry before usage", StepResult{Output: js(good), Telemetry: js(map[string]any{"model": "m"}), Usage: js(map[string]any{"usd": -1})},
			"invalid connector telemetry (nothing recorded): telemetry needs both durationMs and model", Ledger{Dispatches: 2}},
		{"usage shape before budget", StepResult{Output: js(good), Usage: js(map[string]any{"usd": 1, "tokens": "9"})},
			`invalid usage ledger entry (nothing recorded): usage.tokens must be a number from 0 to 1e+15 (or null when not known), not "9"`, Ledger{Dispatches: 2}},
		{"task budget before dispatches and failure", StepResult{Failure: "no", Usage: js(map[string]any{"tokens": 101, "dispatches": 1}), Telemetry: js(tele)},
			"task budget exhausted", Ledger{Tokens: 101, Dispatches: 1}},
		{"dispatches before failure", StepResult{Failure: "no", Usage: js(map[string]any{"tokens": 5, "dispatches": 1})},
			"dispatches are engine-accounted; do not report them in usage (other keys were recorded)", Ledger{Tokens: 5, Dispatches: 2}},
		{"failure before contract", StepResult{Failure: "could not", Output: json.RawMessage(`{"v":1}`)},
			"could not", Ledger{Dispatches: 2}},
		{"contract before ensures", StepResult{Output: json.RawMessage(`{"v":"x","n":-1,"opt":1.5}`)},
			"output failed the R contract: result.opt: expected an integer, got 1.5", Ledger{Dispatches: 2}},
		{"first ensure first", StepResult{Output: json.RawMessage(`{"v":"x","n":-1,"opt":null}`)},
			`ensure "result.n > 0" failed: evaluated to false on result {"v":"x","n":-1,"opt":null}`, Ledger{Dispatches: 2}},
		{"second ensure", StepResult{Output: json.RawMessage(`{"v":"x","n":5}`)},
			`ensure "result.n > 10" failed: evaluated to false on result {"v":"x","n":5}`, Ledger{Dispatches: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Options{})
			r := h.report(h.plan(spec, map[string]any{}), "a", tc.res)
			st := h.stepState(r.RunID, "a")
			if st.Failure == nil || st.Failure.Reason != tc.reason {
				t.Fatalf("reason %s\nwant %q", dump(st.Failure), tc.reason)
			}
			if r.Ledger.Spent != tc.spent {
				t.Fatalf("spent %s, want %s", dump(r.Ledger.Spent), dump(tc.spent))
			}
		})
	}
}

// attempts defaults to 2: the second failure of a step that declares no
// attempts is final.
func TestDefaultAttempts(t *testing.T) {
	h := newHarness(t, Options{})
	r := h.plan(twoSteps, map[string]any{"x": "X"})
	r = h.ok(r, "a", `{"v":"A"}`)
	r = h.report(r, "b", StepResult{Failure: "one"})
	if en := entry(t, r, "b"); en.Attempt != 2 {
		t.Fatalf("b %s", dump(en))
	}
	r = h.report(r, "b", StepResult{Failure: "two"})
	wantFailure(t, r, StatusFailed, "two")
	if r.Failure.Attempt != 2 {
		t.Fatalf("failure %s", dump(r.Failure))
	}
}

func fmtAny(v any) string { s, _ := v.(string); return s }

// Failure reasons quote expressions as JSON strings (docs/engine.md, "Step
// results and failure context"),
// not as Go literals: control characters are \u escapes, other characters
// are kept.
func TestReasonQuotesJSON(t *testing.T) {
	for in, want := range map[string]string{
		"result.v == \"a\"": `"result.v == \"a\""`,
		"x\x01y":            `"x\u0001y"`,
		"x\u2028y\u200bz":   "\"x\u2028y\u200bz\"",
		"tab\there":         `"tab\there"`,
	} {
		if got := quote(in); got != want {
			t.Errorf("quote(%q) = %s, want %s", in, got, want)
		}
	}
}

// Values a Go caller hands over are copied: changing them after the call
// returns changes nothing in the run (docs/engine.md, "Go API (for front
// ends)").
func TestCallerValuesCopied(t *testing.T) {
	h := newHarness(t, Options{})
	in := expr.NewObject(1)
	in.Set("x", "X")
	r := h.plan(twoSteps, in)
	out := expr.NewObject(1)
	out.Set("v", "A")
	r = h.report(r, "a", StepResult{Output: js(out)})
	in.Set("x", "changed")
	out.Set("v", "changed")
	r = h.ok(r, "b", `{"v":"B"}`) // verifyWrites compares memory with the store
	wantStatus(t, r, StatusCompleted)
	a := h.audit(r.RunID)
	if jsonOf(t, a.Input.Data) != `{"x":"X"}` || jsonOf(t, a.Steps["a"].Output.Data) != `{"v":"A"}` {
		t.Fatalf("input %s, a %s", jsonOf(t, a.Input.Data), jsonOf(t, a.Steps["a"].Output.Data))
	}
}
