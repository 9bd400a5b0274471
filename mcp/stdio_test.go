package mcp

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/guard"
	"github.com/stratum-go/stratum/store"
)

// The tests in this file run the real binary: `go build` of cmd/stratum
// (and of the example agent that engine-dispatched fanouts use), then
// `stratum mcp` as a child process with a temporary STRATUM_HOME, spoken
// to over its stdin and stdout like an MCP host does.

var binaries struct {
	once           sync.Once
	dir            string
	stratum, agent string
	err            error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binaries.dir != "" {
		os.RemoveAll(binaries.dir)
	}
	os.Exit(code)
}

// buildBinaries builds stratum and the quickstart agent once per test
// binary.
func buildBinaries(t testing.TB) (stratum, agentBin string) {
	t.Helper()
	binaries.once.Do(func() {
		dir, err := os.MkdirTemp("", "stratum-mcp-e2e-")
		if err != nil {
			binaries.err = err
			return
		}
		binaries.dir = dir
		cmd := exec.Command("go", "build", "-o", dir+string(filepath.Separator), "../cmd/stratum", "../examples/agents/quickstart-agent")
		if out, err := cmd.CombinedOutput(); err != nil {
			binaries.err = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		binaries.stratum = filepath.Join(dir, "stratum")
		binaries.agent = filepath.Join(dir, "quickstart-agent")
	})
	if binaries.err != nil {
		t.Fatal(binaries.err)
	}
	return binaries.stratum, binaries.agent
}

// serverProc is one `stratum mcp` child process and its client session.
type serverProc struct {
	t      testing.TB
	cmd    *exec.Cmd
	cs     *sdk.ClientSession
	stderr *syncWriter
	strict map[string]*jsonschema.Resolved
}

// startServer starts `stratum mcp` with STRATUM_HOME=home.
func startServer(t testing.TB, home string, args ...string) *serverProc {
	t.Helper()
	bin, agentBin := buildBinaries(t)
	cmd := exec.Command(bin, append([]string{"mcp", "--agent", agentBin}, args...)...)
	cmd.Env = append(os.Environ(), "STRATUM_HOME="+home)
	cmd.Env = append(cmd.Env, "STRATUM_STATE_ROOT=") // an empty override means unset
	cmd.Dir = home
	stderr := &syncWriter{w: &bytes.Buffer{}}
	cmd.Stderr = stderr
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "e2e", Version: "0"}, nil).
		Connect(context.Background(), &sdk.CommandTransport{Command: cmd, TerminateDuration: time.Second}, nil)
	if err != nil {
		t.Fatalf("start stratum mcp: %v\nstderr:\n%s", err, stderr.String())
	}
	p := &serverProc{t: t, cmd: cmd, cs: cs, stderr: stderr}
	if tt, ok := t.(*testing.T); ok {
		g, err := guard.New(guard.Options{Root: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		p.strict = strictSchemas(tt, engine.New(mustStore(t, t.TempDir()), engine.Options{}), g)
	}
	t.Cleanup(func() { p.stop() })
	return p
}

func mustStore(t testing.TB, root string) store.Store {
	st, err := store.NewFileStore(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func (s *syncWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.String()
}

// callTimeout bounds one tool call of the stdio tests: a server that never
// answers fails its test, with the server's stderr, instead of holding the
// whole package until the test binary's own time limit.
const callTimeout = 2 * time.Minute

// call calls a tool over stdio and checks the answer like the in-memory
// tests do.
func (p *serverProc) call(name string, args any) result {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	res, err := p.cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		p.t.Fatalf("%s over stdio: %v\nserver stderr:\n%s", name, err, p.stderr.String())
	}
	return checkResult(p.t.(*testing.T), p.strict, name, res)
}

// kill ends the server abruptly (SIGKILL), as a crash or a closed
// terminal would.
func (p *serverProc) kill() {
	p.cmd.Process.Kill()
	p.cs.Close()
}

// stop closes stdin and waits for a clean exit.
func (p *serverProc) stop() {
	p.cs.Close()
}

func TestStdioExamples(t *testing.T) {
	home := t.TempDir()
	// five-constructs has an engine fanout: its agents must be allowed.
	p := startServer(t, home, "--allow-agents")
	for _, name := range examples(t) {
		t.Run(strings.TrimSuffix(name, ".stratum.yaml"), func(t *testing.T) {
			call := func(tool string, args any) result {
				t.Helper()
				ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
				defer cancel()
				res, err := p.cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
				if err != nil {
					t.Fatalf("%s: %v\nserver stderr:\n%s", tool, err, p.stderr.String())
				}
				return checkResult(t, p.strict, tool, res)
			}
			t.Log(exampleScenario(t, call, name))
		})
	}
	if strings.Contains(p.stderr.String(), "level=ERROR") {
		t.Errorf("the server logged errors:\n%s", p.stderr.String())
	}
}

// TestStdioKillAndResume kills the server between two calls of a run and
// finishes the run with a new server process on the same state root.
func TestStdioKillAndResume(t *testing.T) {
	home := t.TempDir()
	a := startServer(t, home)
	src := readExample(t, "quickstart.stratum.yaml")
	r := a.call("stratum_plan", map[string]any{"spec": src, "input": map[string]any{"topic": "crash"}}).mustStatus(t, "ready")
	run := runID(t, r)
	e := entry(t, r, "outline")
	out, _ := contractAgent(e)
	r = a.call("stratum_step_done", map[string]any{"runId": run, "stepId": "outline", "dispatchToken": e["dispatchToken"],
		"result": map[string]any{"output": out}}).mustStatus(t, "ready")
	draft := entry(t, r, "draft")
	a.kill()

	b := startServer(t, home)
	r = b.call("stratum_resume", map[string]any{"runId": run}).mustStatus(t, "ready")
	if got := entry(t, r, "draft"); got["dispatchToken"] != draft["dispatchToken"] {
		t.Errorf("resume after a crash changed the acknowledged issuance: %v vs %v", got, draft)
	}
	d := newDriver(t, b.call)
	d.drive(r).mustStatus(t, "completed")
	a2 := b.call("stratum_audit", map[string]any{"runId": run}).mustStatus(t, "completed")
	var types []string
	for _, ev := range a2.Body["events"].([]any) {
		types = append(types, ev.(map[string]any)["type"].(string))
	}
	if !strings.Contains(strings.Join(types, ","), "resumed") {
		t.Errorf("no resumed event: %v", types)
	}
}

// TestStdioTwoServersRace has two servers on one state root report the
// same step with the same token at the same time: exactly one wins.
func TestStdioTwoServersRace(t *testing.T) {
	home := t.TempDir()
	a, b := startServer(t, home), startServer(t, home)
	src := readExample(t, "quickstart.stratum.yaml")
	for round := 0; round < 5; round++ {
		r := a.call("stratum_plan", map[string]any{"spec": src, "input": map[string]any{"topic": "race"}}).mustStatus(t, "ready")
		run := runID(t, r)
		e := entry(t, r, "outline")
		out, _ := contractAgent(e)
		args := map[string]any{"runId": run, "stepId": "outline", "dispatchToken": e["dispatchToken"], "result": map[string]any{"output": out}}
		var wg sync.WaitGroup
		results := make([]result, 2)
		for i, p := range []*serverProc{a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
				defer cancel()
				res, err := p.cs.CallTool(ctx, &sdk.CallToolParams{Name: "stratum_step_done", Arguments: args})
				if err != nil {
					t.Errorf("server %d: %v", i, err)
					return
				}
				results[i] = checkResult(t, p.strict, "stratum_step_done", res)
			}()
		}
		wg.Wait()
		won, lost := 0, 0
		for _, res := range results {
			switch {
			case res.status() == "ready":
				won++
			case res.errorCode() == "stale_token":
				lost++
			default:
				t.Errorf("unexpected answer in the race:\n%s", res.Text)
			}
		}
		if won != 1 || lost != 1 {
			t.Fatalf("round %d: %d winners and %d stale, want 1 and 1", round, won, lost)
		}
		// The run went on exactly once: draft is ready at attempt 1.
		r = b.call("stratum_resume", map[string]any{"runId": run}).mustStatus(t, "ready")
		if e := entry(t, r, "draft"); e["attempt"].(float64) != 1 {
			t.Errorf("draft after the race: %v", e)
		}
	}
}
