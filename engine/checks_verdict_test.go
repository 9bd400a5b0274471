package engine

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Checks that cost more than the work allowed under the lock give the
// verdicts they always gave, word for word: a failing regex ensure, file
// predicates read through the workspace jail, and an iterate condition
// within the same budget.
func TestCostlyChecksGiveTheSameVerdicts(t *testing.T) {
	h := newHarness(t, Options{})
	outside := 0
	h.e.checkHook = func(_ context.Context, mode string) {
		if mode == checksOutside {
			outside++
		}
	}
	spec := `
version: 1
contracts:
  R: {s: string}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${a.output}", contract: R}
    steps:
      - id: a
        do: "a"
        out: R
        attempts: 5
        iterate: {max: 5, until: "!matches(result.s, '.{300}z')"}
        ensure:
          - expr: "!matches(result.s, '.{300}x1')"
          - file_exists: out/report.txt
          - file_contains: {path: out/report.txt, text: PASS}
`
	long := strings.Repeat("a", 2000) // the outputs differ after the evidence quoted
	r := h.plan(spec, map[string]any{})
	steps := []struct {
		output, file, reason string
	}{
		{long + "x1", "", `ensure "!matches(result.s, '.{300}x1')" failed: evaluated to false on result {"s":"` + long[:294] + `…`},
		{long + "b", "", `ensure "file_exists(\"out/report.txt\")" failed: evaluated to false on result {"s":"` + long[:294] + `…; file_exists("out/report.txt") looked up ` +
			filepath.Join(h.ws, "out/report.txt") + ` in workspace root ` + h.ws + `: found nothing`},
		{long + "c", "FAIL", `ensure "file_contains(\"out/report.txt\", \"PASS\")" failed: evaluated to false on result {"s":"` + long[:294] + `…; file_contains("out/report.txt", "PASS") looked up ` +
			filepath.Join(h.ws, "out/report.txt") + ` in workspace root ` + h.ws + `: found a regular file of 4 bytes that does not contain the text`},
		{long + "z", "PASS", `iterate until "!matches(result.s, '.{300}z')" failed: evaluated to false on result {"s":"` + long[:294] + `…`},
	}
	for i, s := range steps {
		if s.file != "" {
			if err := os.MkdirAll(filepath.Join(h.ws, "out"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(h.ws, "out", "report.txt"), []byte(s.file), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		r = h.ok(r, "a", `{"s":"`+s.output+`"}`)
		en := entry(t, r, "a")
		if en.PreviousFailure == nil || en.PreviousFailure.Reason != s.reason {
			t.Fatalf("report %d: previous failure %s\nwant reason %s", i, dump(en.PreviousFailure), s.reason)
		}
	}
	r = h.ok(r, "a", `{"s":"`+long+`d"}`)
	wantStatus(t, r, StatusCompleted)
	if outside != len(steps)+1 {
		t.Fatalf("%d reports' checks were evaluated outside the lock, want all %d", outside, len(steps)+1)
	}
}
