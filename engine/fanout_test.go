package engine

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

func consumerSpec(require string, stages string) string {
	return fmt.Sprintf(`
version: 1
contracts:
  V: {value: string}
flows:
  entry: main
  main:
    input:
      items: string[]
    output: {from: "${after.output}", contract: V}
    steps:
      - id: fan
        fanout:
          over: "${input.items}"
          concurrency: 2
          isolation: none
          require: %s
          merge: sequential
          dispatch: consumer
          steps:
%s
        on_fail: rescue
      - id: after
        after: [fan]
        do: "after ${fan.output}"
        out: V
      - id: rescue
        do: rescue
        out: V
`, require, stages)
}

const oneStage = `            - do: "Inspect ${item}"
              out: V
              attempts: 1
              ensure:
                - expr: "result.value != 'bad'"`

func TestConsumerFanoutAll(t *testing.T) {
	h := newHarness(t, Options{})
	r := h.plan(consumerSpec("all", oneStage), map[string]any{"items": []any{"a", "b", "c"}})
	if ids := readyIDs(r); !slices.Equal(ids, []string{"fan/0", "fan/1"}) {
		t.Fatalf("ready %v (concurrency 2)", ids)
	}
	raw, _ := json.Marshal(r.Ready[0])
	var en map[string]any
	_ = json.Unmarshal(raw, &en)
	for _, k := range []string{"flow", "step", "stage", "isFinalStage", "itemIndex", "item", "generation", "contract", "contractDigest", "policy", "revisionDigest"} {
		if _, ok := en[k]; !ok {
			t.Fatalf("consumer descriptor lacks %q: %s", k, raw)
		}
	}
	if en["do"] != "Inspect a" || en["item"] != "a" || en["isFinalStage"] != true {
		t.Fatalf("descriptor %s", raw)
	}
	r = h.ok(r, "fan/1", `{"value":"B"}`)
	if ids := readyIDs(r); !slices.Equal(ids, []string{"fan/0", "fan/2"}) {
		t.Fatalf("ready %v", ids)
	}
	r = h.ok(r, "fan/0", `{"value":"A"}`)
	r = h.ok(r, "fan/2", `{"value":"C"}`)
	en2 := entry(t, r, "after")
	if en2.Do != `after [{"value":"A"},{"value":"B"},{"value":"C"}]` {
		t.Fatalf("after do %q", en2.Do)
	}
	if r.Ledger.Spent.Dispatches != 4 {
		t.Fatalf("ledger %s", dump(r.Ledger))
	}
	// Missing item token is refused.
	_, err := h.e.StepDone(h.ctx, StepDoneRequest{RunID: r.RunID, StepID: "fan/0"})
	wantCode(t, err, ErrStaleToken)
}

func TestConsumerFanoutRequire(t *testing.T) {
	for _, tc := range []struct {
		require  string
		outs     []string
		complete bool
		reason   string
	}{
		{"any", []string{`{"value":"bad"}`, `{"value":"ok"}`, `{"value":"bad"}`}, true, ""},
		{"any", []string{`{"value":"bad"}`, `{"value":"bad"}`, `{"value":"bad"}`}, false, "fanout require any not met (0/3 succeeded); item 0: ensure \"result.value != 'bad'\" failed"},
		{"2", []string{`{"value":"ok"}`, `{"value":"bad"}`, `{"value":"ok"}`}, true, ""},
		{"2", []string{`{"value":"ok"}`, `{"value":"bad"}`, `{"value":"bad"}`}, false, "fanout require 2 not met (1/3 succeeded)"},
		{"all", []string{`{"value":"ok"}`, `{"value":"ok"}`, `{"value":"bad"}`}, false, "fanout require all not met (2/3 succeeded)"},
	} {
		t.Run(tc.require+"/"+fmt.Sprint(tc.complete), func(t *testing.T) {
			h := newHarness(t, Options{})
			r := h.plan(consumerSpec(tc.require, oneStage), map[string]any{"items": []any{"a", "b", "c"}})
			for i := 0; r.Status == StatusReady && strings.HasPrefix(r.Ready[0].ID, "fan/"); i++ {
				id := r.Ready[0].ID
				n := int(id[len(id)-1] - '0')
				r = h.ok(r, id, tc.outs[n])
			}
			if tc.complete {
				r = h.ok(r, "after", `{"value":"done"}`)
				wantStatus(t, r, StatusCompleted)
				return
			}
			// on_fail routes to rescue; after is skipped (docs/engine.md, "Scheduling").
			en := entry(t, r, "rescue")
			if en.PreviousFailure == nil || !strings.Contains(en.PreviousFailure.Reason, tc.reason) {
				t.Fatalf("rescue %s, want %q", dump(en), tc.reason)
			}
			r = h.ok(r, "rescue", `{"value":"r"}`)
			// The flow output comes from `after`, which was skipped.
			wantFailure(t, r, StatusFailed, "flow output ${after.output} is unavailable")
		})
	}
}

func TestConsumerFanoutStages(t *testing.T) {
	stages := `            - do: "first ${item}"
              out: V
            - do: "second ${item} after ${prev}"
              when: "prev.value != 'skip'"
              out: V`
	h := newHarness(t, Options{})
	spec := strings.Replace(consumerSpec("any", stages), "concurrency: 2", "concurrency: 1", 1)
	r := h.plan(spec, map[string]any{"items": []any{"x", "y"}})
	r = h.ok(r, "fan/0", `{"value":"one"}`)
	en := entry(t, r, "fan/0")
	if en.Do != `second x after {"value":"one"}` || en.Attempt != 2 {
		t.Fatalf("stage 2 entry %s", dump(en))
	}
	r = h.report(r, "fan/0", StepResult{Failure: "flaky"})
	en = entry(t, r, "fan/0")
	if en.PreviousFailure == nil || en.PreviousFailure.Reason != "flaky" {
		t.Fatalf("retry %s", dump(en))
	}
	r = h.ok(r, "fan/0", `{"value":"two"}`)
	// item 1: its second stage is skipped by `when`, so the item is skipped.
	r = h.ok(r, "fan/1", `{"value":"skip"}`)
	r = h.ok(r, "after", `{"value":"done"}`)
	wantStatus(t, r, StatusCompleted)
	fan := h.stepState(r.RunID, "fan")
	if fan.Fanout.Items[0].Status != StepSucceeded || fan.Fanout.Items[1].Status != StepSkipped {
		t.Fatalf("items %s", dump(fan.Fanout.Items))
	}
	if jsonOf(t, fan.Output.Data) != `[{"value":"two"},null]` {
		t.Fatalf("fanout output %s", jsonOf(t, fan.Output.Data))
	}
}

func TestEngineFanoutWithoutDispatcher(t *testing.T) {
	h := newHarness(t, Options{})
	spec := strings.Replace(consumerSpec("all", oneStage), "dispatch: consumer", "dispatch: engine", 1)
	r := h.plan(spec, map[string]any{"items": []any{"a"}})
	wantFailure(t, r, StatusFailed, "engine dispatch is not configured")
}

// A fanout item's output is held to its stage's contract like a do
// step's: an item reporting the wrong type fails its attempt (kind
// contract, naming the field), and the fanout's require counts it.
func TestConsumerFanoutItemContract(t *testing.T) {
	h := newHarness(t, Options{})
	r := h.plan(consumerSpec("2", oneStage), map[string]any{"items": []any{"a", "b", "c"}})
	r = h.ok(r, "fan/0", `{"value":5}`)
	r = h.ok(r, "fan/1", `{"value":"B"}`)
	r = h.ok(r, "fan/2", `{"value":"C"}`)
	en := entry(t, r, "after")
	if !strings.Contains(en.Do, `{"value":"B"}`) || strings.Contains(en.Do, `5`) {
		t.Fatalf("after do %q", en.Do)
	}
	item := h.stepState(r.RunID, "fan").Fanout.Items[0]
	if item.Status != StepFailed || len(item.Attempts) != 1 || item.Attempts[0].FailureKind != "contract" ||
		item.Failure == nil || !strings.Contains(item.Failure.Reason, "value") {
		t.Fatalf("item 0 with a number for a string: %s", dump(item))
	}
}

// A fanout's failure names why its first failed items failed, and how
// many more did.
func TestItemFailures(t *testing.T) {
	item := func(i int, status StepStatus, reason string) *itemState {
		it := &itemState{Index: i, Status: status}
		if reason != "" {
			it.Failure = &Failure{Reason: reason}
		}
		return it
	}
	long := strings.Repeat("é", 200)
	for _, tc := range []struct {
		items []*itemState
		want  string
	}{
		{nil, ""},
		{[]*itemState{item(0, StepSucceeded, "")}, ""},
		{[]*itemState{item(0, StepFailed, "boom"), item(1, StepSucceeded, ""), item(2, StepFailed, "")}, "; item 0: boom; item 2: failed"},
		{[]*itemState{item(0, StepFailed, "a"), item(1, StepFailed, "b"), item(2, StepFailed, "c"), item(3, StepFailed, "d"), item(4, StepFailed, "e")},
			"; item 0: a; item 1: b; item 2: c; and 2 more failed"},
		{[]*itemState{item(7, StepFailed, long)}, "; item 7: " + strings.Repeat("é", 150) + "…"},
	} {
		if got := itemFailures(tc.items); got != tc.want {
			t.Errorf("itemFailures = %q, want %q", got, tc.want)
		}
	}
}
