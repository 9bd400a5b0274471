package web

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stratum-go/stratum/driver"
	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/store"
)

var update = flag.Bool("update", false, "rewrite the screenshots under docs/images/")

// testToken is the token of every test server.
const testToken = "test-token-0123456789abcdef"

// harness is a served system over a file store in a temporary directory:
// the engine, a driver that hands do steps to a command agent (a real
// child process: a shell script) and waits for gates to be decided
// elsewhere, and the web server on a loopback port.
type harness struct {
	t     testing.TB
	dir   string
	store *store.FileStore
	eng   *engine.Engine
	drv   *driver.Driver
	srv   *httptest.Server
	web   *Server
	agent string
}

// agentScript answers every do step with {"text": "draft N"} (N counts
// its runs), or with the JSON in answer.json beside it when there is one,
// and keeps each request it read as request-N.json.
const agentScript = `#!/bin/sh
dir=$(dirname "$0")
n=$(cat "$dir/count" 2>/dev/null || echo 0)
n=$((n+1))
echo "$n" > "$dir/count"
cat > "$dir/request-$n.json"
if [ -f "$dir/answer.json" ]; then cat "$dir/answer.json"; else printf '{"text": "draft %s"}\n' "$n"; fi
`

func newHarness(t testing.TB) *harness { return newHarnessWith(t, nil) }

// newHarnessWith is newHarness with engine options adjusted by opt.
func newHarnessWith(t testing.TB, opt func(*engine.Options)) *harness {
	t.Helper()
	dir := t.TempDir()
	h := &harness{t: t, dir: dir}
	agentDir := filepath.Join(dir, "agent")
	if err := os.MkdirAll(agentDir, 0o755); err != nil {
		t.Fatal(err)
	}
	h.agent = filepath.Join(agentDir, "agent.sh")
	if err := os.WriteFile(h.agent, []byte(agentScript), 0o755); err != nil {
		t.Fatal(err)
	}
	st, err := store.NewFileStore(filepath.Join(dir, "flows"), nil)
	if err != nil {
		t.Fatal(err)
	}
	h.store = st
	h.drv = driver.New(driver.Options{Agent: h.agent, Gates: driver.GateWait, PollInterval: 20 * time.Millisecond})
	eo := engine.Options{Dispatcher: h.drv.Dispatcher(), Workspace: engine.WorkspacePolicy{Default: dir}}
	if opt != nil {
		opt(&eo)
	}
	h.eng = engine.New(st, eo)
	t.Cleanup(h.eng.Close)
	h.web, err = New(Options{Engine: h.eng, Chain: st, Token: testToken, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	h.srv = httptest.NewServer(h.web)
	t.Cleanup(h.srv.Close)
	return h
}

// plan starts a run of spec with input and returns its id.
func (h *harness) plan(spec, input string) string {
	h.t.Helper()
	resp, err := h.eng.Plan(context.Background(), engine.PlanRequest{Spec: []byte(spec), Input: json.RawMessage(input)})
	if err != nil {
		h.t.Fatalf("plan: %v", err)
	}
	return resp.RunID
}

// drive drives a run with the command agent in the background until it
// ends or the test does; the outcome arrives on the channel.
func (h *harness) drive(runID string) <-chan *driver.Outcome {
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan *driver.Outcome, 1)
	done := make(chan struct{})
	h.t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		o, err := h.drv.Resume(ctx, h.eng, runID)
		if err != nil && ctx.Err() == nil {
			h.t.Errorf("drive %s: %v", runID, err)
		}
		out <- o
	}()
	return out
}

// waitGate waits until the run waits at a gate round other than the
// one with token not, and returns its view.
func (h *harness) waitGate(runID, not string) engine.GateView {
	h.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		gs, err := h.eng.GateViews(context.Background(), runID)
		if err != nil {
			h.t.Fatal(err)
		}
		if len(gs) > 0 && gs[0].GateToken != not {
			return gs[0]
		}
		time.Sleep(10 * time.Millisecond)
	}
	h.t.Fatalf("run %s: no new gate round", runID)
	return engine.GateView{}
}

// client is an HTTP client with a cookie jar that does not follow
// redirects.
func client() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// get fetches path with the bearer token and returns the status and body.
func (h *harness) get(path string) (int, string) {
	h.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, h.srv.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// post sends a form as a browser on the server's own page would (same
// origin) with the bearer token.
func (h *harness) post(path string, form url.Values) (int, string) {
	h.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, h.srv.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Origin", h.srv.URL)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// gateSpec is a do step whose work a gate reviews (revise sends it back,
// at most twice), then a step after the gate.
const gateSpec = `version: 1
contracts:
  Draft:
    text: string
flows:
  entry: main
  main:
    input: { topic: string }
    max_rounds: 2
    output: { from: "${publish.output}", contract: Draft }
    steps:
      - id: work
        do: "Write about ${input.topic}"
        out: Draft
      - id: review
        after: [work]
        gate:
          on_approve: null
          on_revise: work
          on_kill: null
      - id: publish
        after: [review]
        do: "Publish ${work.output.text}"
        out: Draft
`

// chainSpec is n do steps, each after the one before when i%4 != 0.
func chainSpec(n int) string {
	var b strings.Builder
	b.WriteString("version: 1\ncontracts:\n  R:\n    text: string\nflows:\n  entry: main\n  main:\n    input: {}\n")
	fmt.Fprintf(&b, "    output: { from: \"${s%d.output}\", contract: R }\n    steps:\n", n-1)
	for i := range n {
		fmt.Fprintf(&b, "      - id: s%d\n        do: \"step %d of the long run\"\n        out: R\n", i, i)
		if i%4 != 0 {
			fmt.Fprintf(&b, "        after: [s%d]\n", i-1)
		}
	}
	return b.String()
}

// complete reports every ready step of a run until it ends.
func complete(t testing.TB, eng *engine.Engine, runID string, resp *engine.Response) *engine.Response {
	t.Helper()
	ctx := context.Background()
	for len(resp.Ready) > 0 {
		r := resp.Ready[0]
		var err error
		resp, err = eng.StepDone(ctx, engine.StepDoneRequest{RunID: runID, StepID: r.ID, DispatchToken: r.DispatchToken,
			Result: engine.StepResult{Output: json.RawMessage(fmt.Sprintf(`{"text": "done %s"}`, r.ID)), Usage: json.RawMessage(`{"tokens": 10, "usd": 0.001}`)}})
		if err != nil {
			t.Fatalf("step_done %s: %v", r.ID, err)
		}
	}
	return resp
}

func stepDone(runID, stepID, token, output, usage string) engine.StepDoneRequest {
	return engine.StepDoneRequest{RunID: runID, StepID: stepID, DispatchToken: token,
		Result: engine.StepResult{Output: json.RawMessage(output), Usage: json.RawMessage(usage)}}
}

func planRequest(spec string) engine.PlanRequest {
	return engine.PlanRequest{Spec: []byte(spec), Input: json.RawMessage(`{}`)}
}

func ioCopyDiscard(res *http.Response) (int64, error) {
	defer res.Body.Close()
	return io.Copy(io.Discard, res.Body)
}
