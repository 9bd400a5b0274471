package engine

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stratum-go/stratum/store"
)

// outlineSpec has what an audit reads of a plan: a flow budget, a run
// step whose subflow declares its steps out of alphabetical order, and a
// consumer fanout of two stages.
const outlineSpec = `
version: 1
contracts:
  V: {value: string}
flows:
  entry: main
  helper:
    input: {}
    output: {from: "${alpha.output}", contract: V}
    steps:
      - {id: zeta, do: "first", out: V}
      - {id: alpha, after: [zeta], do: "second", out: V}
  main:
    input:
      items: string[]
    output: {from: "${call.output}", contract: V}
    budget: {usd: 5, dispatches: 50}
    steps:
      - id: fan
        fanout:
          over: "${input.items}"
          concurrency: 2
          isolation: none
          require: all
          merge: sequential
          dispatch: consumer
          steps:
            - {do: "one ${item}", out: V}
            - {do: "two ${item}", out: V}
      - {id: call, after: [fan], run: helper, with: {}}
`

// An audit reads the outline of the run's plan, not the plan: a process
// that has not compiled the spec audits a run without compiling it, and
// gives the same report as the process that ran it, at every point of the
// run (a live fanout, a live subflow with a pristine step, the end).
func TestAuditWithoutCompiling(t *testing.T) {
	h := newFileHarness(t, Options{})
	r := h.plan(outlineSpec, map[string]any{"items": []string{"a", "b"}})
	same := func(when string) {
		t.Helper()
		want, err := json.Marshal(h.audit(r.RunID))
		if err != nil {
			t.Fatal(err)
		}
		fresh := h.reopen(Options{})
		a, err := fresh.Audit(h.ctx, r.RunID)
		if err != nil {
			t.Fatalf("%s: fresh audit: %v", when, err)
		}
		got, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: the audit of a process that did not compile the plan differs:\n%s\nwant:\n%s", when, got, want)
		}
		fresh.mu.Lock()
		compiled := len(fresh.plans)
		fresh.mu.Unlock()
		if compiled != 0 {
			t.Fatalf("%s: the audit compiled %d plans", when, compiled)
		}
		if a.Ledger.Budget == nil || a.Ledger.Budget.USD != 5 || a.Ledger.Budget.Dispatches != 50 {
			t.Fatalf("%s: ledger %s", when, dump(a.Ledger))
		}
	}
	r = h.ok(r, "fan/0", `{"value":"A1"}`)
	same("a fanout item at its second stage")
	for r.Status == StatusReady && r.Ready[0].ID != "call/alpha" {
		r = h.ok(r, r.Ready[0].ID, `{"value":"x"}`)
	}
	same("a subflow with a pristine step")
	if sub := h.audit(r.RunID).Steps["call"].Sub; sub == nil || sub.Steps["alpha"] == nil || sub.Steps["zeta"] == nil {
		t.Fatalf("subflow steps %s", dump(sub))
	}
	r = h.ok(r, "call/alpha", `{"value":"Y"}`)
	wantStatus(t, r, StatusCompleted)
	same("the end")
}

// A state that does not fit the outline is refused as corrupt by an
// audit, as by every other operation, in a process with the plan and in
// one without.
func TestAuditOutlineRefusesCorruptState(t *testing.T) {
	for _, tc := range []struct{ name, from, to string }{
		{"item stage out of range", `"stage":0`, `"stage":2`},
		{"subflow on the fanout", `"fanout":{`, `"sub":{"input":{},"steps":{}},"fanout":{`},
		{"fanout items on the run step", `"steps":{`, `"steps":{"call":{"status":"pending","attempts":[],"spent":{},"fanout":{"over":[],"items":[]}},`},
		{"unknown flow", `"flowName":"main"`, `"flowName":"helper"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Options{})
			h.e.verifyWrites = false
			r := h.plan(outlineSpec, map[string]any{"items": []string{"a"}})
			snap, err := h.store.Load(h.ctx, r.RunID)
			if err != nil {
				t.Fatal(err)
			}
			bad := strings.Replace(string(snap.State), tc.from, tc.to, 1)
			if bad == string(snap.State) {
				t.Fatalf("no %s in %s", tc.from, snap.State)
			}
			if _, err := h.store.Update(h.ctx, r.RunID, func(*store.Snapshot) (*store.Change, error) {
				return &store.Change{State: []byte(bad)}, nil
			}); err != nil {
				t.Fatal(err)
			}
			for _, e := range []*Engine{h.e, h.reopen(Options{})} {
				_, err := e.Audit(h.ctx, r.RunID)
				wantCode(t, err, ErrCorrupt)
				_, err = e.Status(h.ctx, r.RunID)
				wantCode(t, err, ErrCorrupt)
			}
		})
	}
}
