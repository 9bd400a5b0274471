package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stratum-go/stratum/store"
)

// format2Spec is the flow of testdata/format2: outputs whose keys are not
// in sorted order (nested, in arrays), an attempt rejected by its ensure
// (its result kept only in the attempt), a subflow, a gate, and a flow
// output taken from the last step.
const format2Spec = `version: 1
contracts:
  V: {v: string}
  A: {z: number, k: string, m: object}
  W: {w: string}
flows:
  entry: main
  sub:
    input: {}
    output: {from: "${c.output}", contract: V}
    steps:
      - {id: c, do: c, out: V}
  main:
    input: {}
    output: {from: "${d.output}", contract: W}
    steps:
      - id: a
        do: a
        out: A
        ensure:
          - expr: "result.z == 1"
      - id: w
        after: [a]
        run: sub
        with: {}
      - id: review
        after: [w]
        gate: {on_approve: null, on_revise: null, on_kill: null}
      - id: d
        after: [review]
        do: "last after ${a.output.k}"
        out: W
`

// format2Run is the run of testdata/format2.
const format2Run = "00000000-0000-4000-8000-000000000001"

// writeFormat2Run plans and drives the format2 run up to its gate.
func writeFormat2Run(h *harness) {
	r := h.plan(format2Spec, map[string]any{})
	r = h.ok(r, "a", `{"z":2,"k":"first","m":{}}`)
	r = h.ok(r, "a", `{"z":1,"k":"a-out","m":{"y":[{"q":1,"b":"<&>"}],"c":"x"}}`)
	r = h.ok(r, "w/c", `{"v":"c-out"}`)
	wantStatus(h.t, r, StatusRunning)
}

// finishFormat2Run approves the gate and reports d.
func finishFormat2Run(t *testing.T, h *harness) *Response {
	t.Helper()
	gates, err := h.e.ListGates(h.ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(gates) != 1 || gates[0].StepID != "review" {
		t.Fatalf("gates %s", dump(gates))
	}
	r, err := h.e.ResolveGate(h.ctx, GateRequest{RunID: format2Run, StepID: "review", Decision: DecisionApprove, GateToken: gates[0].GateToken, ResolvedBy: "human"})
	if err != nil {
		t.Fatal(err)
	}
	en := entry(t, r, "d")
	if en.Do != "last after a-out" {
		t.Fatalf("d's task %q: a's output was not read back", en.Do)
	}
	r, err = h.e.StepDone(h.ctx, StepDoneRequest{RunID: format2Run, StepID: "d", DispatchToken: en.DispatchToken,
		Result: StepResult{Output: json.RawMessage(`{"w":"done"}`)}})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, r, StatusCompleted)
	return r
}

// hashes blanks the event hashes of an audit document: a run continued by
// a later version writes its own records, so its chain differs while what
// the audit shows does not.
var hashes = regexp.MustCompile(`"hash": "[0-9a-f]{64}"`)

func auditJSON(t *testing.T, h *harness, blankHashes bool) []byte {
	t.Helper()
	b, err := json.MarshalIndent(h.audit(format2Run), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if blankHashes {
		b = hashes.ReplaceAll(b, []byte(`"hash": ""`))
	}
	return append(b, '\n')
}

// openFormat2 copies testdata/format2's run into a fresh file store.
func openFormat2(t *testing.T) (*harness, *store.FileStore) {
	t.Helper()
	root := filepath.Join(t.TempDir(), "flows")
	if err := os.CopyFS(root, os.DirFS(filepath.Join("testdata", "format2", "flows"))); err != nil {
		t.Fatal(err)
	}
	fs, err := store.NewFileStore(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	return newHarnessOn(t, Options{}, fs, fs), fs
}

// A run written by the engine before results were stored once
// (testdata/format2: every output in full in its result event, its
// completed event and its step records, the records JSON strings) audits
// exactly as it did, continues, finishes with the audit that engine gave,
// and its log verifies.
func TestFormat2RunContinues(t *testing.T) {
	h, fs := openFormat2(t)
	want, err := os.ReadFile(filepath.Join("testdata", "format2", "audit-at-gate.json"))
	if err != nil {
		t.Fatal(err)
	}
	if got := auditJSON(t, h, false); !bytes.Equal(got, want) {
		t.Fatalf("audit of the run at its gate differs from testdata/format2/audit-at-gate.json:\n%s", got)
	}
	// Another process (no cached records) reads the same.
	fresh := &harness{t: t, ctx: h.ctx, store: fs, e: h.reopen(Options{})}
	if got := auditJSON(t, fresh, false); !bytes.Equal(got, want) {
		t.Fatalf("audit by a fresh process differs:\n%s", got)
	}
	finishFormat2Run(t, h)
	want, err = os.ReadFile(filepath.Join("testdata", "format2", "audit-finished.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []*harness{h, {t: t, ctx: h.ctx, store: fs, e: h.reopen(Options{})}} {
		if got := auditJSON(t, e, true); !bytes.Equal(got, want) {
			t.Fatalf("audit of the finished run differs from testdata/format2/audit-finished.json:\n%s", got)
		}
	}
	if _, err := fs.Verify(h.ctx, format2Run, store.VerifyOptions{}); err != nil {
		t.Fatal(err)
	}
	// Continued, the run is written as v2: an engine that knows only v1
	// refuses it instead of reading its refs as missing outputs.
	snap, err := fs.Load(h.ctx, format2Run)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(snap.State, []byte(`"format":"`+stateFormat+`"`)) {
		t.Fatalf("continued run's state is not %s: %.200s", stateFormat, snap.State)
	}
}

// A state document of a format this engine does not know (a later
// release's) is refused, saying so, never read as if it were known.
func TestUnknownStateFormatRefused(t *testing.T) {
	_, err := decodeDoc("r", []byte(`{"format":"stratum.engine.run.v3","id":"r","steps":{}}`))
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "a later release of stratum may have written it") {
		t.Fatalf("unknown format: %v", err)
	}
	st, err := decodeDoc("r", []byte(`{"format":"stratum.engine.run.v1","id":"r","steps":{}}`))
	if err != nil || st.Format != stateFormat {
		t.Fatalf("a v1 document: %v, format %q", err, st.Format)
	}
}
