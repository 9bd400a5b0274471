package engine

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

const fuzzSpec = `
version: 1
contracts:
  R: {v: string, n: number, tags: "string[]", opt: "integer?"}
flows:
  entry: main
  main:
    input:
      items: string[]
    output: {from: "${a.output}", contract: R}
    budget: {usd: 100, tokens: 1000000}
    steps:
      - id: a
        do: a
        out: R
        attempts: 3
        ensure:
          - expr: "result.n >= 0 && len(result.tags) < 5"
      - id: fan
        fanout:
          over: "${input.items}"
          concurrency: 1
          isolation: none
          require: any
          merge: sequential
          dispatch: consumer
          steps:
            - do: "x ${item}"
              out: R
`

// FuzzStepDone reports hostile values (output, usage, telemetry, failure)
// for a do step and a consumer item. Whatever they are, StepDone never
// panics and never fails with an internal error, the ledgers stay finite,
// and a fresh process reads back exactly the state the engine holds.
func FuzzStepDone(f *testing.F) {
	deep := strings.Repeat("[", 1500) + strings.Repeat("]", 1500)
	for _, seed := range [][4]string{
		{`{"v":"x","n":1,"tags":[]}`, ``, ``, ``},
		{`{"v":"x","n":1,"tags":[],"opt":null}`, `{"usd":0.5,"tokens":10}`, `{"durationMs":3,"model":"m"}`, ``},
		{`{"v":"x","n":1.5,"tags":["a"],"opt":1.5}`, `{"dispatches":1}`, `{"durationMs":-1,"model":"m"}`, ``},
		{`{"v":"x","n":-1,"tags":[]}`, `{"usd":1e308}`, `{"model":""}`, ``},
		{`{"v":"x","n":1,"tags":[],"extra":true}`, `{"usd":"1"}`, `[]`, `gave up`},
		{`{"v":"\ud800","n":1e400,"tags":[]}`, `{"tokens":1e15}`, `{"durationMs":1,"model":"m","effort":""}`, ``},
		{`{"v":"x","v":"y","n":0,"tags":[1]}`, `{"ms":1,"usd":-0}`, `{"durationMs":1,"model":"m","x":1}`, ""},
		{deep, `{}`, `null`, ``},
		{`null`, `null`, `{}`, "\x00"},
		{`{"v":"x","n":1,"tags":[]} trailing`, `{"usd":1}`, `{"durationMs":1,"model":"m"}`, ``},
		{"\xff\xfe", `{"usd":1e16}`, `{"durationMs":1e16,"model":"m"}`, ``},
		{`{"v":"` + strings.Repeat("é", 500) + `","n":1,"tags":[]}`, ``, ``, ``},
	} {
		f.Add(seed[0], seed[1], seed[2], seed[3])
	}
	f.Fuzz(func(t *testing.T, output, usage, telemetry, failure string) {
		h := newHarness(t, Options{})
		r := h.plan(fuzzSpec, map[string]any{"items": []any{"i"}})
		raw := func(s string) json.RawMessage {
			if s == "" {
				return nil
			}
			return json.RawMessage(s)
		}
		res := StepResult{Output: raw(output), Usage: raw(usage), Telemetry: raw(telemetry), Failure: failure}
		if output == "" {
			res.Output = json.RawMessage("null")
		}
		for _, id := range []string{"a", "fan/0"} {
			en := entry(t, r, id)
			out, err := h.e.StepDone(h.ctx, StepDoneRequest{RunID: r.RunID, StepID: id, DispatchToken: en.DispatchToken, Result: res})
			if err != nil {
				t.Fatalf("%s: %v (code %s)", id, err, CodeOf(err))
			}
			for _, v := range []float64{out.Ledger.Spent.USD, out.Ledger.Spent.Tokens, out.Ledger.Spent.MS} {
				if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
					t.Fatalf("ledger %v", out.Ledger.Spent)
				}
			}
			if _, err := json.Marshal(out); err != nil {
				t.Fatalf("response does not encode: %v", err)
			}
			if out.Status != StatusReady {
				break // a flow budget breach ended the run
			}
			r = out
		}
		a1, err := h.e.Audit(h.ctx, r.RunID)
		if err != nil {
			t.Fatal(err)
		}
		a2, err := h.reopen(Options{}).Audit(h.ctx, r.RunID)
		if err != nil {
			t.Fatal(err)
		}
		if dump(a1) != dump(a2) {
			t.Fatalf("processes disagree:\n%s\n%s", dump(a1), dump(a2))
		}
	})
}
