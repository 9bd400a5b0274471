package guard

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// errDiskFull is what the fault seam makes a write return.
var errDiskFull = errors.New("no space left on device (injected)")

// failNth makes the nth write of op fail (without writing anything).
func (f *fixture) failNth(op writeOp, nth int) {
	count := 0
	f.g.fault = func(w writeOp, path string) error {
		if w != op {
			return nil
		}
		if count++; count == nth {
			return errDiskFull
		}
		return nil
	}
}

// TestWriteFailureAtEachStep makes each durable write of a mutation fail
// in turn, through the guard's own file layer: the registry's pending
// mark, the ledger append (the commit point), the registry's new head.
// Before the commit point the answer is an error and nothing is recorded
// (a retry with the same key evaluates afresh); after it the answer is the
// outcome with a warning, and the next load rolls the head forward. Either
// way the resource verifies, and the next mutation leaves no warning.
func TestWriteFailureAtEachStep(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name    string
		op      writeOp
		nth     int
		applied bool
	}{
		{"pending mark", opRegistry, 1, false},
		{"ledger append", opLedger, 1, false},
		{"new head", opRegistry, 2, true},
	}
	for _, c := range cases {
		t.Run("transition, "+c.name, func(t *testing.T) {
			f := newFixture(t)
			f.register(f.featureRequest("r"))
			f.write("plan.md", "approved")
			f.failNth(c.op, c.nth)
			res, err := f.transition("r", "draft", "review", withKey("k"))
			f.g.fault = nil
			h := f.history("r")
			if c.applied {
				if err != nil || res.Status != "applied" || !strings.Contains(res.Warning, "could not record it as the head") {
					t.Fatalf("answer %+v %v, want applied with a warning", res, err)
				}
				if len(h.Ledger) != 1 || h.CurrentState != "review" || h.Ledger[0].EntryDigest != res.LedgerRef {
					t.Fatalf("told applied, history %+v", h)
				}
				vr, err := f.verify("r")
				if err != nil || len(vr.Warnings) != 1 || !strings.Contains(vr.Warnings[0], "stopped after its ledger entry 1") {
					t.Fatalf("verify after the failed head write: %+v %v", vr, err)
				}
				if r := f.mustTransition("r", "draft", "review", withKey("k")); r.Status != "replayed" {
					t.Fatalf("retry: %s", r.Status)
				}
			} else {
				wantCode(t, err, CodeInternal, "nothing was recorded", "injected")
				if len(h.Ledger) != 0 || h.CurrentState != "draft" {
					t.Fatalf("told not applied, history %+v", h)
				}
				if _, err := f.verify("r"); err != nil {
					t.Fatal(err)
				}
				if r := f.mustTransition("r", "draft", "review", withKey("k")); r.Status != "applied" || r.Warning != "" {
					t.Fatalf("retry: %+v", r)
				}
			}
			f.mustTransition("r", "review", "draft")
			if vr, err := f.verify("r"); err != nil || len(vr.Warnings) != 0 || vr.Entries != 2 {
				t.Fatalf("verify after the next mutation: %+v %v", vr, err)
			}
		})
		t.Run("upgrade, "+c.name, func(t *testing.T) {
			f := newFixture(t)
			req := f.featureRequest("r")
			f.register(req)
			grown := UpgradeRequest{ResourceID: "r", NewGraph: obj(t, `{"draft":["review","parked"],"review":["done","draft"],"done":[],"parked":[]}`),
				NewEdgePredicates: req.EdgePredicates, NewTerminal: req.Terminal, NewStakes: req.Stakes, Rationale: "park"}
			f.failNth(c.op, c.nth)
			res, err := f.g.Upgrade(ctx, grown)
			f.g.fault = nil
			h := f.history("r")
			if c.applied != (err == nil) {
				t.Fatalf("answer %+v %v, want applied=%v", res, err, c.applied)
			}
			if c.applied {
				if res.Status != "migrated" || res.Warning == "" || h.GraphVersion != 2 || len(h.Ledger) != 1 {
					t.Fatalf("answer %+v, history %+v", res, h)
				}
				// The new policy is in force although registry.json still
				// holds the old one with the new one as pending.
				if r := f.mustTransition("r", "draft", "parked"); r.Status != "applied" {
					t.Fatalf("the new edge after a roll-forward: %s", r.Status)
				}
			} else {
				wantCode(t, err, CodeInternal, "nothing was recorded")
				if h.GraphVersion != 1 || len(h.Ledger) != 0 {
					t.Fatalf("told not applied, history %+v", h)
				}
				_, err := f.transition("r", "draft", "parked")
				wantCode(t, err, CodeIllegalEdge)
			}
			if vr, err := f.verify("r"); err != nil || len(vr.Warnings) != 0 {
				t.Fatalf("verify: %+v %v", vr, err)
			}
		})
	}
}
