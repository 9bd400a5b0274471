package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
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
	home := t.TempDir()
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
