package engine

import (
	"strings"
	"testing"
)

// A spec's text may hold characters that YAML refuses raw or reads as
// line breaks (DEL, C1 controls, NEL, U+2028, U+2029, U+FEFF, U+FFFE,
// U+FFFF). The run's spec snapshot is JSON read back through the spec
// loader, which reads it as YAML: another process must load the run and
// see the same text, never find the run corrupt.
func TestSnapshotKeepsCharactersYAMLRefusesRaw(t *testing.T) {
	chars := []struct{ name, yaml, raw string }{
		{"DEL", `\x7f`, "\x7f"},
		{"C1 control", `\x80`, "\u0080"},
		{"NEL", `\x85`, "\u0085"},
		{"line separator", `\u2028`, "\u2028"},
		{"paragraph separator", `\u2029`, "\u2029"},
		{"byte order mark", `\ufeff`, "\ufeff"},
		{"U+FFFE", `\ufffe`, "\ufffe"},
		{"U+FFFF", `\uffff`, "\uffff"},
	}
	for _, c := range chars {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, Options{})
			spec := strings.Replace(`version: 1
contracts:
  R: {v: string}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${s.output}", contract: R}
    steps:
      - id: s
        do: "before CHAR after"
        out: R
`, "CHAR", c.yaml, 1)
			r := h.plan(spec, map[string]any{})
			e2 := h.reopen(Options{}) // another process reads the snapshot
			p, err := e2.RunPlan(h.ctx, r.RunID)
			if err != nil {
				t.Fatalf("another process loads the run: %v", err)
			}
			if got, want := p.Flow("main").Step("s").Do.Text, "before "+c.raw+" after"; got != want {
				t.Fatalf("do read back as %q, want %q", got, want)
			}
			if _, err := e2.Audit(h.ctx, r.RunID); err != nil {
				t.Fatalf("another process audits the run: %v", err)
			}
		})
	}
}

// A snapshot written raw, as before snapshots were escaped, is escaped
// again when it is read: the run loads with the text it was written with.
func TestRawSnapshotOfAnEarlierReleaseLoads(t *testing.T) {
	raw := []byte("{\"version\":1,\"x\":\"a\x7fb\u2028c\"}")
	if got, want := string(yamlSafeJSON(raw)), `{"version":1,"x":"a\u007fb\u2028c"}`; got != want {
		t.Fatalf("yamlSafeJSON = %s, want %s", got, want)
	}
	if plain := []byte(`{"a":"é ✓"}`); &yamlSafeJSON(plain)[0] != &plain[0] {
		t.Fatal("a snapshot with nothing to escape is copied")
	}
}
