package engine

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stratum-go/stratum/store"
)

// A run written by the released version before this one (state document
// format with a map of finished steps, store envelope v1: testdata/format1,
// made by that version's engine) is listed, resolved and finished by this
// one, and its log still verifies.
func TestFormat1RunContinues(t *testing.T) {
	root := filepath.Join(t.TempDir(), "flows")
	if err := os.CopyFS(root, os.DirFS(filepath.Join("testdata", "format1"))); err != nil {
		t.Fatal(err)
	}
	fs, err := store.NewFileStore(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := newHarnessOn(t, Options{}, fs, fs)
	const id = "00000000-0000-4000-8000-000000000001"

	runs, err := h.e.ListRuns(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 || runs[0].RunID != id || runs[0].Status != StatusRunning || runs[0].Done != 3 || runs[0].Steps != 5 ||
		runs[0].Current != "review" || !runs[0].GateWaits {
		t.Fatalf("listing %s", dump(runs))
	}
	gates, err := h.e.ListGates(h.ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(gates) != 1 || gates[0].StepID != "review" {
		t.Fatalf("gates %s", dump(gates))
	}
	r, err := h.e.ResolveGate(h.ctx, GateRequest{RunID: id, StepID: "review", Decision: DecisionApprove, GateToken: gates[0].GateToken, ResolvedBy: "human"})
	if err != nil {
		t.Fatal(err)
	}
	en := entry(t, r, "d")
	if en.Do != "last after c-out" {
		t.Fatalf("d's task %q: the finished steps of the old index were not read", en.Do)
	}
	r, err = h.e.StepDone(h.ctx, StepDoneRequest{RunID: id, StepID: "d", DispatchToken: en.DispatchToken, Result: StepResult{Output: js(map[string]any{"v": "done"})}})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, r, StatusCompleted)
	a := h.audit(id)
	for _, s := range []string{"a", "b", "c", "review", "d"} {
		if a.Steps[s] == nil || !a.Steps[s].Status.Terminal() {
			t.Fatalf("step %s after completion: %s", s, dump(a.Steps[s]))
		}
	}
	if _, err := fs.Verify(h.ctx, id, store.VerifyOptions{}); err != nil {
		t.Fatal(err)
	}
	runs, err = h.e.ListRuns(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if runs[0].Status != StatusCompleted || runs[0].Done != 5 || runs[0].Current != "" {
		t.Fatalf("listing after completion %s", dump(runs))
	}
}
