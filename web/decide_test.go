package web

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/stratum-go/stratum/engine"
)

// TestDecideKill: a kill from the form ends the run (its failure says a
// gate's kill, at the gate), and a second decision on the ended run is
// refused as such.
func TestDecideKill(t *testing.T) {
	h := newHarness(t)
	runID := h.plan(gateSpec, `{"topic": "t"}`)
	done := h.drive(runID)
	g := h.waitGate(runID, "")
	form := url.Values{"run": {runID}, "step": {"review"}, "token": {g.GateToken}, "digest": {g.Digest}, "kind": {"gate"},
		"decision": {"kill"}, "by": {"Ada"}, "note": {"not this"}, "from": {"run"}}
	code, body := h.post("/decide", form)
	if code != 200 || !strings.Contains(body, "Decided kill on review of run "+runID+", as Ada. The run is failed.") {
		t.Fatalf("kill: %d\n%s", code, body)
	}
	<-done
	a, err := h.eng.Audit(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	if a.Status != engine.StatusFailed || a.Failure == nil || a.Failure.Cause != engine.CauseGateKilled || a.Failure.Step != "review" {
		t.Fatalf("after the kill: %s, %+v", a.Status, a.Failure)
	}
	if code, body := h.post("/decide", form); code != 409 || !strings.Contains(body, "Not decided: the run is already failed.") {
		t.Errorf("a decision on the killed run: %d\n%s", code, body)
	}
}
