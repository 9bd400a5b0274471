package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stratum-go/stratum/store"
)

// The benchmarks of background runs measure the two targets of
// docs/mcp.md, "Background flows": how long a dead holder's run waits
// before another server drives it (against the lease ttl), and what a
// background flow costs per step beyond the agent's own time (against
// `stratum run`). Both use the real binary and the fake agents of
// testdata/fakeagent.

// benchProc is a `stratum mcp` child process of a benchmark.
type benchProc struct {
	b      *testing.B
	cmd    *exec.Cmd
	cs     *sdk.ClientSession
	stderr *syncWriter
}

// benchEnviron is the environment of bgEnv for a benchmark.
func benchEnviron(b *testing.B, home, ttl string) []string {
	env := append(os.Environ(), "STRATUM_HOME="+home, "STRATUM_STATE_ROOT=", "STRATUM_AGENTS_DIR=",
		"PATH="+buildFakeAgents(b)+string(os.PathListSeparator)+os.Getenv("PATH"), "FAKE_LOG="+filepath.Join(home, "agents.log"))
	if ttl != "" {
		env = append(env, "STRATUM_LEASE_TTL="+ttl)
	}
	return env
}

func startBenchServer(b *testing.B, home, ttl string) *benchProc {
	b.Helper()
	bin, _ := buildBinaries(b)
	cmd := exec.Command(bin, "mcp", "--allow-agents")
	cmd.Env = benchEnviron(b, home, ttl)
	cmd.Dir = home
	stderr := &syncWriter{w: &bytes.Buffer{}}
	cmd.Stderr = stderr
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "0"}, nil).
		Connect(context.Background(), &sdk.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second}, nil)
	if err != nil {
		b.Fatalf("start stratum mcp: %v\n%s", err, stderr.String())
	}
	return &benchProc{b: b, cmd: cmd, cs: cs, stderr: stderr}
}

// call calls a tool and decodes its structured answer.
func (p *benchProc) call(name string, args any) map[string]any {
	p.b.Helper()
	res, err := p.cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		p.b.Fatalf("%s: %v\n%s", name, err, p.stderr.String())
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		p.b.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		p.b.Fatal(err)
	}
	if res.IsError {
		p.b.Fatalf("%s refused: %s\n%s", name, raw, p.stderr.String())
	}
	return m
}

// owner is the server's lease owner id, read from its log.
func (p *benchProc) owner() string {
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if m := ownerRe.FindStringSubmatch(p.stderr.String()); m != nil {
			return m[1]
		}
	}
	p.b.Fatalf("no leaseOwner in the log:\n%s", p.stderr.String())
	return ""
}

func (p *benchProc) kill() {
	_ = p.cmd.Process.Kill()
	_ = p.cs.Close()
}

func bgDriver(m map[string]any) any {
	bg, _ := m["bg"].(map[string]any)
	return bg["driver"]
}

// BenchmarkBackgroundTakeOver: the time from a SIGKILL of the server
// driving a background run to the moment a second server, already
// running on the same state root, drives it (bg.driver names it), with a
// lease ttl of 1 s. Reported as ms per take-over and as a multiple of the
// ttl (the target is at most 2).
func BenchmarkBackgroundTakeOver(b *testing.B) {
	const ttl = time.Second
	var total time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		home := b.TempDir()
		a := startBenchServer(b, home, ttl.String())
		r := a.call("stratum_flow_run_bg", map[string]any{"spec": chainSpec(4, 2000), "input": map[string]any{"items": []string{"x"}}})
		run, _ := r["runId"].(string)
		other := startBenchServer(b, home, ttl.String())
		ownerB := other.owner()
		for bgDriver(other.call("stratum_flow_bg_poll", map[string]any{"runId": run})) == nil {
			time.Sleep(5 * time.Millisecond)
		}
		b.StartTimer()
		start := time.Now()
		a.kill()
		for bgDriver(other.call("stratum_flow_bg_poll", map[string]any{"runId": run})) != ownerB {
			time.Sleep(5 * time.Millisecond)
		}
		took := time.Since(start)
		b.StopTimer()
		total += took
		other.call("stratum_flow_cancel_bg", map[string]any{"runId": run})
		other.kill()
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/takeover")
	b.ReportMetric(float64(total)/float64(b.N)/float64(ttl), "x-ttl")
	b.ReportMetric(0, "ns/op")
}

// linearAgentSpec is a flow of n do steps the fake agent answers at once.
func linearAgentSpec(n int) string {
	var s strings.Builder
	s.WriteString("version: 1\ncontracts:\n  Out: {v: integer}\nflows:\n  entry: main\n  main:\n    input: {}\n")
	fmt.Fprintf(&s, "    output: {from: \"${s%d.output}\", contract: Out}\n    steps:\n", n)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&s, "      - id: s%d\n", i)
		if i > 1 {
			fmt.Fprintf(&s, "        after: [s%d]\n", i-1)
		}
		fmt.Fprintf(&s, "        out: Out\n        agent: codex\n        do: 'Step %d. ANSWER: {\"v\": %d}'\n", i, i)
	}
	return s.String()
}

// runSpan is the time from a run's first event to its last, from the
// store (the same clock and the same boundaries for both drivers).
func runSpan(b *testing.B, home string) time.Duration {
	b.Helper()
	st, err := store.NewFileStore(filepath.Join(home, "flows"), nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	runs, err := st.List(ctx)
	if err != nil || len(runs) != 1 {
		b.Fatalf("runs %v: %v", runs, err)
	}
	evs, err := st.Events(ctx, runs[0].ID, 0, 0)
	if err != nil || len(evs) == 0 {
		b.Fatalf("events: %v", err)
	}
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Type == "completed" {
			return evs[i].At.Sub(evs[0].At)
		}
	}
	b.Fatalf("run %s did not complete", runs[0].ID)
	return 0
}

// BenchmarkBackgroundStepOverhead: a flow of 20 do steps driven by
// stratum_flow_run_bg and by `stratum run`, each step answered at once by
// the fake codex; reported per step from the run's own event times,
// beside the time of one fake codex process alone (the agent's own
// time). The target: (bg - agent) within 1.5x of (run - agent).
func BenchmarkBackgroundStepOverhead(b *testing.B) {
	const steps = 20
	spec := linearAgentSpec(steps)
	bin, _ := buildBinaries(b)
	agentsDir := buildFakeAgents(b)
	perStep := func(d time.Duration) float64 { return float64(d.Microseconds()) / steps }

	b.Run("bg", func(b *testing.B) {
		var total time.Duration
		for i := 0; i < b.N; i++ {
			home := b.TempDir()
			p := startBenchServer(b, home, "")
			r := p.call("stratum_flow_run_bg", map[string]any{"spec": spec, "input": map[string]any{}})
			run, _ := r["runId"].(string)
			for r["status"] == "running" {
				time.Sleep(250 * time.Millisecond)
				r = p.call("stratum_flow_bg_poll", map[string]any{"runId": run})
			}
			if r["status"] != "completed" {
				b.Fatalf("run %s: %v", run, r)
			}
			p.kill()
			total += runSpan(b, home)
		}
		b.ReportMetric(perStep(total)/float64(b.N), "us/step")
		b.ReportMetric(0, "ns/op")
	})
	b.Run("run", func(b *testing.B) {
		var total time.Duration
		for i := 0; i < b.N; i++ {
			home := b.TempDir()
			path := filepath.Join(home, "flow.stratum.yaml")
			if err := os.WriteFile(path, []byte(spec), 0o644); err != nil {
				b.Fatal(err)
			}
			cmd := exec.Command(bin, "run", path, "--input-json", "{}", "--gate", "stop")
			cmd.Env, cmd.Dir = benchEnviron(b, home, ""), home
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("stratum run: %v\n%s", err, out)
			}
			total += runSpan(b, home)
		}
		b.ReportMetric(perStep(total)/float64(b.N), "us/step")
		b.ReportMetric(0, "ns/op")
	})
	b.Run("agent", func(b *testing.B) {
		// One fake codex exec as the connector starts it, answering at once.
		home := b.TempDir()
		start := time.Now()
		for i := 0; i < b.N; i++ {
			cmd := exec.Command(filepath.Join(agentsDir, "codex"), "exec", "--json", "--sandbox", "read-only", "--skip-git-repo-check",
				"--output-last-message", filepath.Join(home, "last"), `Step 1. ANSWER: {"v": 1}`)
			cmd.Env, cmd.Dir = benchEnviron(b, home, ""), home
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("fake codex: %v\n%s", err, out)
			}
		}
		b.ReportMetric(float64(time.Since(start).Microseconds())/float64(b.N), "us/step")
		b.ReportMetric(0, "ns/op")
	})
}
