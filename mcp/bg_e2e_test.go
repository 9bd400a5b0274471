package mcp

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/guard"
)

// The tests in this file drive background runs and agent runs through
// the real binary, with fake claude and codex executables first on PATH
// (testdata/fakeagent: real child processes that check their flags and
// print the CLIs' output shapes).

var fakeAgents struct {
	once sync.Once
	dir  string
	err  error
}

// buildFakeAgents builds testdata/fakeagent as claude and codex in one
// directory and returns it.
func buildFakeAgents(t testing.TB) string {
	t.Helper()
	stratum, _ := buildBinaries(t)
	fakeAgents.once.Do(func() {
		dir := filepath.Join(filepath.Dir(stratum), "fake")
		claude := filepath.Join(dir, "claude")
		cmd := exec.Command("go", "build", "-o", claude, "./testdata/fakeagent")
		if out, err := cmd.CombinedOutput(); err != nil {
			fakeAgents.err = fmt.Errorf("go build fakeagent: %v\n%s", err, out)
			return
		}
		if err := os.Link(claude, filepath.Join(dir, "codex")); err != nil {
			fakeAgents.err = err
			return
		}
		fakeAgents.dir = dir
	})
	if fakeAgents.err != nil {
		t.Fatal(fakeAgents.err)
	}
	return fakeAgents.dir
}

// bgEnv is the environment of the servers and commands of one test:
// STRATUM_HOME, the fake agents first on PATH, their log, a short lease.
type bgEnv struct {
	t    *testing.T
	home string
	log  string
	ttl  string
}

func newBgEnv(t *testing.T, ttl string) *bgEnv {
	home := t.TempDir()
	return &bgEnv{t: t, home: home, log: filepath.Join(home, "agents.log"), ttl: ttl}
}

func (b *bgEnv) environ() []string {
	env := append(os.Environ(), "STRATUM_HOME="+b.home, "STRATUM_STATE_ROOT=", "STRATUM_AGENTS_DIR=",
		"PATH="+buildFakeAgents(b.t)+string(os.PathListSeparator)+os.Getenv("PATH"), "FAKE_LOG="+b.log)
	if b.ttl != "" {
		env = append(env, "STRATUM_LEASE_TTL="+b.ttl)
	}
	return env
}

// server starts `stratum mcp --allow-agents` (plus args).
func (b *bgEnv) server(args ...string) *serverProc {
	b.t.Helper()
	return b.serverWith(append([]string{"--allow-agents"}, args...))
}

// serverWith starts `stratum mcp` with exactly args.
func (b *bgEnv) serverWith(args []string) *serverProc {
	t := b.t
	t.Helper()
	bin, _ := buildBinaries(t)
	cmd := exec.Command(bin, append([]string{"mcp"}, args...)...)
	cmd.Env = b.environ()
	cmd.Dir = b.home
	stderr := &syncWriter{w: &bytes.Buffer{}}
	cmd.Stderr = stderr
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "e2e", Version: "0"}, nil).
		Connect(context.Background(), &sdk.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second}, nil)
	if err != nil {
		t.Fatalf("start stratum mcp: %v\nstderr:\n%s", err, stderr.String())
	}
	p := &serverProc{t: t, cmd: cmd, cs: cs, stderr: stderr, strict: strictFixtureSchemas(t)}
	t.Cleanup(func() { p.stop() })
	return p
}

// strictFixtureSchemas are the closed output schemas of every tool.
func strictFixtureSchemas(t *testing.T) map[string]*jsonschema.Resolved {
	g, err := guard.New(guard.Options{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return strictSchemas(t, engine.New(mustStore(t, t.TempDir()), engine.Options{}), g)
}

// command runs the stratum binary with args and returns its stdout.
func (b *bgEnv) command(args ...string) (string, error) {
	bin, _ := buildBinaries(b.t)
	cmd := exec.Command(bin, args...)
	cmd.Env = b.environ()
	cmd.Dir = b.home
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil {
		return out.String(), fmt.Errorf("stratum %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.String(), nil
}

// pollUntil polls a background run until cond holds for its answer.
func pollUntil(t *testing.T, p *serverProc, run string, limit time.Duration, cond func(r result) bool) result {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		r := p.call("stratum_flow_bg_poll", map[string]any{"runId": run})
		if r.IsError {
			t.Fatalf("bg poll: %s", r.Text)
		}
		if cond(r) {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s: no answer met the condition within %s; last:\n%s\nserver stderr:\n%s", run, limit, r.Text, p.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func bgStatus(r result) string {
	bg, _ := r.Body["bg"].(map[string]any)
	s, _ := bg["status"].(string)
	return s
}

// allEvents reads every event of a run, page by page.
func allEvents(t *testing.T, p *serverProc, run string) []map[string]any {
	t.Helper()
	var out []map[string]any
	cursor := 0.0
	for {
		r := p.call("stratum_flow_bg_poll", map[string]any{"runId": run, "cursor": cursor})
		for _, ev := range r.Body["events"].([]any) {
			out = append(out, ev.(map[string]any))
		}
		cursor = r.Body["nextCursor"].(float64)
		if more, _ := r.Body["moreEvents"].(bool); !more {
			return out
		}
	}
}

// acceptedResults counts, per step (and fanout item), the results
// accepted: result events without a failure.
func acceptedResults(evs []map[string]any) map[string]int {
	n := map[string]int{}
	for _, ev := range evs {
		if ev["type"] != "result" {
			continue
		}
		d, _ := ev["detail"].(map[string]any)
		if d["failure"] == nil {
			n[ev["stepId"].(string)]++
		}
	}
	return n
}

// agentLog is what the fake agents logged: each start.
type agentStart struct {
	pid, pgid int
	step      string
	attempt   int
	contract  bool
}

func readAgentLog(t *testing.T, path string) []agentStart {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []agentStart
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != 6 || fs[0] != "start" {
			continue
		}
		var s agentStart
		s.pid, _ = strconv.Atoi(fs[1])
		s.pgid, _ = strconv.Atoi(fs[2])
		s.step = fs[3]
		s.attempt, _ = strconv.Atoi(fs[4])
		s.contract = fs[5] == "1"
		out = append(out, s)
	}
	return out
}

// liveInGroup lists the processes of a process group that still run (a
// zombie waiting to be reaped does not).
func liveInGroup(pgid int) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		fs := strings.Fields(string(b[i+1:]))
		if len(fs) < 3 || fs[0] == "Z" {
			continue
		}
		if g, _ := strconv.Atoi(fs[2]); g == pgid {
			out = append(out, pid)
		}
	}
	return out
}

// assertAgentsGone waits (bounded) until no process of any agent group
// the fake agents logged still runs.
func assertAgentsGone(t *testing.T, logPath string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for _, s := range readAgentLog(t, logPath) {
		for {
			live := liveInGroup(s.pgid)
			if len(live) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("agent group %d (step %s attempt %d) still runs: %v", s.pgid, s.step, s.attempt, live)
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

const bgFlowSpec = `version: 1
contracts:
  Draft: {text: string}
  Check: {ok: boolean}
  Final: {message: string}
flows:
  entry: main
  main:
    input: {topic: string, items: "string[]"}
    output: {from: "${finish.output}", contract: Final}
    steps:
      - id: draft
        agent: claude
        do: 'Draft about ${input.topic}. FAIL_FIRST ANSWER: {"text": "a draft"}'
        out: Draft
        attempts: 2
      - id: review
        after: [draft]
        gate: {on_approve: null, on_revise: null, on_kill: null}
      - id: fan
        after: [review]
        fanout:
          over: '${input.items}'
          concurrency: 2
          isolation: none
          require: all
          merge: sequential
          steps:
            - do: 'Check ${item}. ANSWER: {"ok": true}'
              agent: codex
              out: Check
      - id: finish
        after: [fan]
        agent: codex
        do: 'Finish. ANSWER: {"message": "done"}'
        out: Final
`

// TestBackgroundFlowOverStdio runs a background flow with a retry, a gate
// decided by `stratum gate` in another process while the run is paused,
// and an engine fanout, to completion; then cancels a second one while
// its agent works.
func TestBackgroundFlowOverStdio(t *testing.T) {
	env := newBgEnv(t, "")
	p := env.server()
	r := p.call("stratum_flow_run_bg", map[string]any{"spec": bgFlowSpec, "input": map[string]any{"topic": "leases", "items": []string{"a", "b", "c"}}})
	if r.IsError || r.status() != "running" {
		t.Fatalf("flow_run_bg: %s", r.Text)
	}
	run := runID(t, r)
	r = pollUntil(t, p, run, time.Minute, func(r result) bool { return bgStatus(r) == "paused_gate" })
	bg := r.Body["bg"].(map[string]any)
	if g := bg["pendingGates"].([]any); len(g) != 1 || g[0] != "review" || bg["gateStepId"] != "review" {
		t.Fatalf("paused at %v", bg)
	}
	// The client cannot report the server's steps.
	if res := p.call("stratum_resume", map[string]any{"runId": run}); res.errorCode() != "run_leased" {
		t.Errorf("resume of a background run: %s", res.Text)
	}
	out, err := env.command("gate", "approve", run, "review", "--note", "fine")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("stratum gate: %s", strings.TrimSpace(out))
	r = pollUntil(t, p, run, time.Minute, func(r result) bool { return r.status() != "running" })
	if r.status() != "completed" || bgStatus(r) != "completed" {
		t.Fatalf("the run ended %s:\n%s\nstderr:\n%s", r.status(), r.Text, p.stderr.String())
	}
	if msg := r.Body["output"].(map[string]any)["message"]; msg != "done" {
		t.Errorf("output %v", r.Body["output"])
	}
	evs := allEvents(t, p, run)
	var draftFailed bool
	for _, ev := range evs {
		if ev["type"] == "result" && ev["stepId"] == "draft" {
			if d := ev["detail"].(map[string]any); d["failure"] != nil && d["attempt"].(float64) == 1 {
				draftFailed = true
			}
		}
	}
	if !draftFailed {
		t.Errorf("no failed first attempt of draft: %v", evs)
	}
	for step, n := range acceptedResults(evs) {
		if n != 1 {
			t.Errorf("step %s accepted %d times", step, n)
		}
	}
	starts := readAgentLog(t, env.log)
	items := 0
	for _, s := range starts {
		if !s.contract {
			t.Errorf("step %s attempt %d got no contract in its prompt", s.step, s.attempt)
		}
		if strings.HasPrefix(s.step, "fan/") {
			items++
		}
	}
	if items != 3 {
		t.Errorf("%d fanout item attempts, want 3: %+v", items, starts)
	}

	// A second run, cancelled while its agent works.
	hang := strings.Replace(bgFlowSpec, "FAIL_FIRST", "HANG", 1)
	r = p.call("stratum_flow_run_bg", map[string]any{"spec": hang, "input": map[string]any{"topic": "cancel", "items": []string{"x"}}})
	run2 := runID(t, r)
	waitFor(t, func() bool {
		for _, s := range readAgentLog(t, env.log) {
			if s.step == "draft" && len(liveInGroup(s.pgid)) > 0 {
				return true
			}
		}
		return false
	})
	r = p.call("stratum_flow_cancel_bg", map[string]any{"runId": run2})
	if r.status() != "cancelled" || bgStatus(r) != "cancelled" {
		t.Fatalf("cancel_bg: %s", r.Text)
	}
	assertAgentsGone(t, env.log)
	if res := p.call("stratum_flow_bg_poll", map[string]any{"runId": run2}); res.status() != "cancelled" {
		t.Errorf("after the cancel: %s", res.Text)
	}
}
