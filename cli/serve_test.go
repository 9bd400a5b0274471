package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// bearer adds the server's token to every request of an MCP client.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// startServe runs "stratum serve" in process on a free loopback port and
// returns its address and token, read from what it prints.
func startServe(t *testing.T, args ...string) (base, token string) {
	t.Helper()
	return startServeIn(t, t.TempDir(), args...)
}

// startServeIn is startServe over the state of STRATUM_HOME home.
func startServeIn(t *testing.T, home string, args ...string) (base, token string) {
	t.Helper()
	getenv := func(k string) string {
		if k == "STRATUM_HOME" {
			return home
		}
		return ""
	}
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	var stderr strings.Builder
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, &Env{Stdin: strings.NewReader(""), Stdout: pw, Stderr: &lockedWriter{w: &stderr}, Getenv: getenv},
			append([]string{"serve", "--addr", "127.0.0.1:0"}, args...))
		pw.Close()
	}()
	t.Cleanup(func() {
		cancel()
		defer func() {
			if t.Failed() {
				t.Logf("stratum serve's log:\n%s", stderr.String())
			}
		}()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("stratum serve exited %d", code)
			}
		case <-time.After(10 * time.Second):
			t.Error("stratum serve did not stop")
		}
	})
	lines := bufio.NewScanner(pr)
	for lines.Scan() {
		line := lines.Text()
		if rest, ok := strings.CutPrefix(line, "  open: "); ok {
			base, token, _ = strings.Cut(rest, "/?token=")
		}
		if strings.HasPrefix(line, "  mcp:") {
			break
		}
	}
	go io.Copy(io.Discard, pr)
	if base == "" {
		t.Fatalf("stratum serve printed no address")
	}
	return base, token
}

// TestServeMCPOverHTTP: go-sdk's streamable HTTP client, with the bearer
// token, drives a flow through a gate to completion against stratum
// serve; the run is then on the web view, its chain verified. Without the
// token, or with another, the client cannot connect.
func TestServeMCPOverHTTP(t *testing.T) {
	base, token := startServe(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	connect := func(tok string) (*sdk.ClientSession, error) {
		hc := &http.Client{Transport: bearer{token: tok, next: http.DefaultTransport}}
		if tok == "" {
			hc = http.DefaultClient
		}
		return sdk.NewClient(&sdk.Implementation{Name: "serve-test", Version: "0"}, nil).
			Connect(ctx, &sdk.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: hc, MaxRetries: -1}, nil)
	}
	for _, tok := range []string{"", "not-the-token-0123456789"} {
		if cs, err := connect(tok); err == nil {
			cs.Close()
			t.Fatalf("connected with token %q", tok)
		}
	}
	cs, err := connect(token)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call := func(tool string, args map[string]any) map[string]any {
		t.Helper()
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		b, _ := json.Marshal(res.StructuredContent)
		if res.IsError {
			t.Fatalf("%s refused: %s", tool, b)
		}
		var out map[string]any
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	const spec = `version: 1
contracts:
  Note: { text: string }
flows:
  entry: main
  main:
    input: { topic: string }
    output: { from: "${publish.output}", contract: Note }
    steps:
      - id: draft
        do: "Draft a note on ${input.topic}"
        out: Note
      - id: review
        after: [draft]
        gate: { on_approve: null, on_revise: null, on_kill: null }
      - id: publish
        after: [review]
        do: "Publish ${draft.output.text}"
        out: Note
`
	// /mcp is composed as stratum mcp is: it can start background runs
	// (this spec's agent is then refused by serve's policy, as by mcp's).
	bgRes, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "stratum_flow_run_bg", Arguments: map[string]any{"spec": spec, "input": map[string]any{"topic": "bg"}}})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(bgRes.StructuredContent); !strings.Contains(string(b), `"code":"effect_not_allowed"`) {
		t.Errorf("stratum_flow_run_bg on stratum serve's /mcp: %s", b)
	}
	state := call("stratum_plan", map[string]any{"spec": spec, "input": map[string]any{"topic": "tides"}})
	runID := fmt.Sprint(state["runId"])
	for range 10 {
		switch state["status"] {
		case "ready":
			entry := state["ready"].([]any)[0].(map[string]any)
			state = call("stratum_step_done", map[string]any{"runId": runID, "stepId": entry["id"], "dispatchToken": entry["dispatchToken"],
				"result": map[string]any{"output": map[string]any{"text": "on " + fmt.Sprint(entry["id"])}}})
		case "running":
			audit := call("stratum_audit", map[string]any{"runId": runID})
			gate := audit["steps"].(map[string]any)["review"].(map[string]any)
			state = call("stratum_gate_resolve", map[string]any{"runId": runID, "stepId": "review", "decision": "approve",
				"gateToken": gate["gateToken"], "rationale": "fine", "resolvedBy": "serve-test"})
		case "completed":
			out := state["output"].(map[string]any)
			if out["text"] != "on publish" {
				t.Fatalf("output %v", out)
			}
			page := get(t, base+"/runs/"+runID, token)
			if !strings.Contains(page, `<span class="badge st-completed">completed</span>`) || !strings.Contains(page, "chain verified") {
				t.Fatalf("the web view of the run:\n%s", page)
			}
			return
		default:
			t.Fatalf("run ended %v: %v", state["status"], state["failure"])
		}
	}
	t.Fatalf("the run did not complete: %v", state)
}

func get(t *testing.T, url, token string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", url, res.StatusCode, b)
	}
	return string(b)
}

// TestServeTokenFile: with --token-file the printed address does not
// carry the token, and the file's token is the one every request needs.
func TestServeTokenFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "token")
	const tok = "a-token-of-my-own-0123456789"
	writeTestFile(t, file, tok+"\n")
	base, printed := startServe(t, "--token-file", file)
	if printed != "TOKEN (the token in "+file+")" {
		t.Errorf("printed token %q", printed)
	}
	get(t, base+"/", tok)
	req, _ := http.NewRequest(http.MethodGet, base+"/", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized {
		t.Errorf("without the token: %d", res.StatusCode)
	}
}

// lockedWriter serialises writes (the server logs from many goroutines).
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func writeTestFile(t *testing.T, name, content string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// stratumIn runs a stratum command in process over STRATUM_HOME home and
// returns its exit status and standard output.
func stratumIn(t *testing.T, home string, args ...string) (int, string) {
	t.Helper()
	var out, errs strings.Builder
	getenv := func(k string) string {
		if k == "STRATUM_HOME" {
			return home
		}
		return ""
	}
	code := run(context.Background(), &Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errs, Getenv: getenv}, args)
	if errs.Len() > 0 {
		t.Logf("stratum %s: %s", strings.Join(args, " "), errs.String())
	}
	return code, out.String()
}

// postForm posts a decision form to stratum serve with the bearer token.
func postForm(t *testing.T, target, token string, form url.Values) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, target, strings.NewReader(form.Encode()))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// TestServeSameAnswersAsCLI: a run that stratum run stopped at a gate is
// on stratum serve's gates page with the token and digest stratum query
// gates gives (one engine over one store). Deciding it from the page is
// held to serve's effects policy as stratum gate is: without
// --allow-commands the decision, which would continue the run into a
// command, is refused and nothing is decided or run; a server with
// --allow-commands takes it, the command runs, and stratum audit shows
// the decision with its decider, note and digest.
func TestServeSameAnswersAsCLI(t *testing.T) {
	home, dir := t.TempDir(), t.TempDir()
	mark := filepath.Join(dir, "evaluated")
	agent := filepath.Join(dir, "agent.sh")
	writeTestFile(t, agent, "#!/bin/sh\ncat >/dev/null\necho '{\"path\": \"notes.txt\"}'\n")
	if err := os.Chmod(agent, 0o755); err != nil {
		t.Fatal(err)
	}
	spec := filepath.Join(dir, "gated.yaml")
	writeTestFile(t, spec, `version: 1
contracts:
  P: {path: string}
  V: {status: string, children: array, reason: string}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${check.output}", contract: V}
    steps:
      - id: probe
        do: "Name a file"
        out: P
      - id: review
        after: [probe]
        gate: {on_approve: null, on_revise: null, on_kill: null}
      - id: check
        after: [review]
        evaluate:
          command: 'touch `+mark+`; echo "{\"status\": \"closed\", \"children\": [], \"reason\": \"ok\"}"'
          timeout_ms: 5000
        out: V
`)
	if code, out := stratumIn(t, home, "run", spec, "--allow-commands", "--agent", agent, "--gate", "stop"); code != 3 {
		t.Fatalf("stratum run: exit %d, want 3 (stopped at the gate)\n%s", code, out)
	}
	code, out := stratumIn(t, home, "query", "gates")
	var gates []struct {
		FlowID    string `json:"flow_id"`
		StepID    string `json:"step_id"`
		GateToken string `json:"gate_token"`
		Digest    string `json:"digest"`
	}
	if err := json.Unmarshal([]byte(out), &gates); code != 0 || err != nil || len(gates) != 1 || gates[0].Digest == "" {
		t.Fatalf("stratum query gates: exit %d, %v\n%s", code, err, out)
	}
	g := gates[0]

	strict, token := startServeIn(t, home)
	page := get(t, strict+"/gates", token)
	for _, want := range []string{g.FlowID, `<code>` + g.Digest + `</code>`, `value="` + g.GateToken + `"`, `value="` + g.Digest + `"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the gates page lacks %q (stratum query gates gives it)", want)
		}
	}
	if t.Failed() {
		t.Fatalf("the gates page:\n%s", page)
	}
	form := url.Values{"run": {g.FlowID}, "step": {g.StepID}, "token": {g.GateToken}, "digest": {g.Digest}, "kind": {"gate"},
		"decision": {"approve"}, "by": {"Ada"}, "note": {"ship it"}, "from": {"gates"}}
	code, body := postForm(t, strict+"/decide", token, form)
	if code == http.StatusOK || !strings.Contains(body, "the decision was not made") || !strings.Contains(body, "--allow-commands") {
		t.Fatalf("a decision into a command serve may not run: %d\n%s", code, body)
	}
	if _, err := os.Stat(mark); err == nil {
		t.Fatal("the command ran after a refused decision")
	}
	if _, out := stratumIn(t, home, "query", "gates"); !strings.Contains(out, g.GateToken) {
		t.Fatalf("after a refused decision the gate is no longer waiting:\n%s", out)
	}

	open, token2 := startServeIn(t, home, "--allow-commands")
	code, body = postForm(t, open+"/decide", token2, form)
	if code != http.StatusOK || !strings.Contains(body, "Decided approve on review of run "+g.FlowID+", as Ada.") {
		t.Fatalf("the decision with --allow-commands: %d\n%s", code, body)
	}
	if _, err := os.Stat(mark); err != nil {
		t.Errorf("the command did not run after the decision: %v", err)
	}
	code, out = stratumIn(t, home, "audit", g.FlowID, "--json")
	var a struct {
		Status string `json:"status"`
		Events []struct {
			Type   string          `json:"type"`
			Detail json.RawMessage `json:"detail"`
		} `json:"events"`
	}
	if err := json.Unmarshal([]byte(out), &a); code != 0 || err != nil {
		t.Fatalf("stratum audit: exit %d, %v\n%s", code, err, out)
	}
	if a.Status != "completed" {
		t.Errorf("stratum audit says the run is %s, want completed", a.Status)
	}
	found := false
	for _, ev := range a.Events {
		var d struct{ Decision, Digest, Rationale, ResolvedBy string }
		if ev.Type == "gate_resolved" && json.Unmarshal(ev.Detail, &d) == nil &&
			d == (struct{ Decision, Digest, Rationale, ResolvedBy string }{"approve", g.Digest, "ship it", "Ada"}) {
			found = true
		}
	}
	if !found {
		t.Errorf("stratum audit shows no gate_resolved by Ada with the note and the digest:\n%s", out)
	}
}
