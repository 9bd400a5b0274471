package engine

// A damaged state document is refused, never guessed at.

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stratum-go/stratum/store"
)

// A state document that decodes but does not fit the run's plan (damaged
// or edited by hand) is reported as corrupt, never a panic.
func TestCorruptStateDocument(t *testing.T) {
	h := newHarness(t, Options{})
	h.e.verifyWrites = false
	for _, tc := range []struct{ name, from, to string }{
		{"unknown flow", `"flowName":"main"`, `"flowName":"nope"`},
		{"null step", `"steps":{"a":{`, `"steps":{"b":null,"a":{`},
		{"item stage out of range", `"steps":{"a":{`, `"steps":{"b":{"status":"running","attempts":[],"spent":{},"fanout":{"over":[1],"items":[{"index":0,"status":"ready","generation":1,"stage":7,"attempts":[]}]}},"a":{`},
		{"subflow on a do step", `"steps":{"a":{`, `"steps":{"b":{"status":"running","attempts":[],"spent":{},"sub":{"input":{},"steps":{"x":null}}},"a":{`},
		{"control: untouched", `"steps":{"a":{`, `"steps":{"a":{`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := h.plan(twoSteps, map[string]any{"x": "X"})
			snap, err := h.store.Load(h.ctx, r.RunID)
			if err != nil {
				t.Fatal(err)
			}
			bad := strings.Replace(string(snap.State), tc.from, tc.to, 1)
			if bad == string(snap.State) && tc.from != tc.to {
				t.Fatalf("no %s in %s", tc.from, snap.State)
			}
			if _, err := h.store.Update(h.ctx, r.RunID, func(*store.Snapshot) (*store.Change, error) {
				return &store.Change{State: []byte(bad)}, nil
			}); err != nil {
				t.Fatal(err)
			}
			for _, e := range []*Engine{h.e, h.reopen(Options{})} {
				if tc.from == tc.to {
					if _, err := e.Audit(h.ctx, r.RunID); err != nil {
						t.Fatal(err)
					}
					continue
				}
				_, err = e.StepDone(h.ctx, StepDoneRequest{RunID: r.RunID, StepID: "a", DispatchToken: entry(t, r, "a").DispatchToken,
					Result: StepResult{Output: json.RawMessage(`{"v":"A"}`)}})
				wantCode(t, err, ErrCorrupt)
				_, err = e.Audit(h.ctx, r.RunID)
				wantCode(t, err, ErrCorrupt)
				_, err = e.Status(h.ctx, r.RunID)
				wantCode(t, err, ErrCorrupt)
			}
		})
	}
}
