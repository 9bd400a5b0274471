package cli

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// TestGraphGolden draws every example in both formats and compares with
// testdata/graph/<example>.<mmd|dot> (rewritten with -update).
func TestGraphGolden(t *testing.T) {
	examples, err := filepath.Glob(filepath.Join("..", "examples", "*.stratum.yaml"))
	if err != nil || len(examples) == 0 {
		t.Fatalf("no examples found: %v", err)
	}
	for _, ex := range examples {
		name := strings.TrimSuffix(filepath.Base(ex), ".stratum.yaml")
		for _, format := range []string{"mermaid", "dot"} {
			t.Run(name+"/"+format, func(t *testing.T) {
				var stdout, stderr bytes.Buffer
				code := Main(context.Background(), []string{"graph", "--format", format, ex}, strings.NewReader(""), &stdout, &stderr)
				if code != 0 {
					t.Fatalf("exit %d: %s", code, stderr.String())
				}
				ext := map[string]string{"mermaid": ".mmd", "dot": ".dot"}[format]
				golden := filepath.Join("testdata", "graph", name+ext)
				if *update {
					if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(golden, stdout.Bytes(), 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (run go test ./cli -run TestGraphGolden -update)", err)
				}
				if got := stdout.String(); got != string(want) {
					t.Errorf("graph %s --format %s differs from %s:\n--- got\n%s\n--- want\n%s", ex, format, golden, got, want)
				}
			})
		}
	}
}

// TestGraphModel checks the drawing model edge by edge on a spec with every
// kind of edge, so that a wrong classification fails independently of the
// golden files.
func TestGraphModel(t *testing.T) {
	const spec = `version: 1
contracts:
  R:
    ok: boolean
flows:
  entry: main
  main:
    input:
      xs: string[]
    max_rounds: 2
    output:
      from: "${publish.output}"
      contract: R
    steps:
      - id: a
        do: "first"
        out: R
        on_fail: fix
      - id: b
        after: [a]
        do: "uses ${a.output.ok}"
        out: R
      - id: fix
        do: "repair"
        out: R
      - id: g
        after: [b]
        gate:
          on_approve: null
          on_revise: b
          on_kill: fix
      - id: fan
        after: [g]
        fanout:
          over: "${input.xs}"
          concurrency: 1
          isolation: none
          require: any
          merge: sequential
          steps:
            - do: "x ${item}"
              out: R
      - id: sub
        after: [fan]
        run: helper
        with: {}
      - id: publish
        after: [sub, fix]
        do: "publish"
        out: R
  helper:
    input: {}
    output:
      from: "${h.output}"
      contract: R
    steps:
      - id: h
        do: "help"
        out: R
`
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), []string{"graph", "-"}, strings.NewReader(spec), &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{
		`main__a -. after .-> main__b`, // after and data: b reads a's output
		`main__a == on_fail ==> main__fix`,
		`main__g -. revise .-> main__b`,
		`main__g -- kill --> main__fix`,
		`main__sub -. calls .-> flow1`,
		`main__publish --> main__out`,
		`main__fan{{"fan<br/>fanout over input.xs<br/>1 stage, concurrency 1, require any<br/>each item: do (claude)"}}`,
		`main__g{"g<br/>gate"}`,
		`class main__fix routeOnly`,
	} {
		if want == `main__a -. after .-> main__b` {
			// b both declares after: [a] and reads a's output: a data edge.
			if strings.Contains(out, want) || !strings.Contains(out, "main__a --> main__b") {
				t.Errorf("a -> b should be a data edge:\n%s", out)
			}
			continue
		}
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
}

func TestGraphErrors(t *testing.T) {
	tests := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"graph"}, 2, "expected one spec file"},
		{[]string{"graph", "--format", "svg", "x.yaml"}, 2, `unknown format "svg"`},
		{[]string{"graph", "missing.yaml"}, 2, "no such file"},
		{[]string{"graph", "--flow", "nope", filepath.Join("..", "examples", "minimal.stratum.yaml")}, 2, `spec has no flow "nope" (flows: classify)`},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		code := Main(context.Background(), tt.args, strings.NewReader(""), &stdout, &stderr)
		if code != tt.code || !strings.Contains(stderr.String(), tt.msg) {
			t.Errorf("%q: exit %d, stderr %q; want %d with %q", tt.args, code, stderr.String(), tt.code, tt.msg)
		}
	}
	// An invalid spec: diagnostics on stderr, exit 1.
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), []string{"graph", "-"}, strings.NewReader("version: 2\n"), &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "<stdin>:1:10: SCHEMA_INVALID") || stdout.Len() != 0 {
		t.Errorf("invalid spec: exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
}
