package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stratum-go/stratum/mcp"
)

// TestWireSameKeysInBothFrontEnds asks the same questions of one run
// through the CLI (--json) and through the MCP tools, and requires the
// two answers to have the same keys at every level: the engine owns the
// wire, and neither front end renames, drops or adds a field.
func TestWireSameKeysInBothFrontEnds(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	spec := filepath.Join(dir, "gate.yaml")
	agent := filepath.Join(dir, "agent.sh")
	write(t, spec, `version: 1
contracts:
  Draft:
    text: string
flows:
  entry: main
  main:
    input: { topic: string }
    max_rounds: 2
    output: { contract: Draft, from: "${write.output}" }
    steps:
      - id: write
        do: "Write about ${input.topic}"
        out: Draft
      - id: review
        after: [write]
        gate:
          on_approve: null
          on_revise: write
          on_kill: null
`)
	write(t, agent, "#!/bin/sh\ncat >/dev/null\necho '{\"text\": \"draft\"}'\n")
	if err := os.Chmod(agent, 0o755); err != nil {
		t.Fatal(err)
	}
	env := func() (*Env, *bytes.Buffer) {
		var out bytes.Buffer
		return &Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &bytes.Buffer{},
			Getenv: func(k string) string {
				if k == "STRATUM_HOME" {
					return home
				}
				return ""
			}}, &out
	}
	ctx := context.Background()
	e, out := env()
	if code := run(ctx, e, []string{"run", spec, "--input", "topic=x", "--agent", agent, "--gate", "stop", "--json", "--workspace", dir}); code != ExitGate {
		t.Fatalf("stratum run exited %d: %s", code, e.Stderr)
	}
	runID, _ := decode(t, out.Bytes())["runId"].(string)

	// The same question (continue the run) through both front ends.
	e, out = env()
	if code := run(ctx, e, []string{"run", "--resume", runID, "--agent", agent, "--gate", "stop", "--json"}); code != ExitGate {
		t.Fatalf("stratum run --resume exited %d: %s", code, e.Stderr)
	}
	cliRun := decode(t, out.Bytes())

	e, out = env()
	if code := run(ctx, e, []string{"audit", runID, "--json"}); code != 0 {
		t.Fatalf("stratum audit exited %d: %s", code, e.Stderr)
	}
	cliAudit := decode(t, out.Bytes())

	sys, err := openSystem(e, systemConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Close()
	srv, err := mcp.NewServer(mcp.Deps{Engine: sys.engine, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	st, ct := sdk.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call := func(tool string) map[string]any {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: map[string]any{"runId": runID}})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", tool, err, res)
		}
		b, _ := json.Marshal(res.StructuredContent)
		return decode(t, b)
	}
	for _, pair := range []struct {
		name     string
		cli, mcp map[string]any
	}{
		{"run state (stratum run --resume --json, stratum_resume)", cliRun, call("stratum_resume")},
		{"audit (stratum audit --json, stratum_audit)", cliAudit, call("stratum_audit")},
	} {
		if a, b := keyPaths(pair.cli, ""), keyPaths(pair.mcp, ""); strings.Join(a, "\n") != strings.Join(b, "\n") {
			t.Errorf("%s: the front ends disagree on the keys:\nCLI: %v\nMCP: %v", pair.name, a, b)
		}
	}
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return m
}

// keyPaths lists every object key path of v ("a.b", arrays as "a[]"),
// sorted.
func keyPaths(v any, prefix string) []string {
	seen := map[string]bool{}
	var walk func(v any, p string)
	walk = func(v any, p string) {
		switch x := v.(type) {
		case map[string]any:
			for k, c := range x {
				kp := p + "." + k
				if p == "" {
					kp = k
				}
				// Step ids, run ids and contract names are data, not keys of
				// the wire's vocabulary; their values' keys still count.
				seen[kp] = true
				walk(c, kp)
			}
		case []any:
			for _, c := range x {
				walk(c, p+"[]")
			}
		}
	}
	walk(v, prefix)
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
