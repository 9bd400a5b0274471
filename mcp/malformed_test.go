package mcp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// rawServer speaks JSON-RPC to `stratum mcp` byte by byte, for input no
// well-behaved client library would send (broken JSON, invalid UTF-8,
// oversized frames).
type rawServer struct {
	t      testing.TB
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan []byte
	stderr *syncWriter
	nextID int
}

func startRaw(t testing.TB) *rawServer {
	t.Helper()
	bin, _ := buildBinaries(t)
	home := t.TempDir()
	cmd := exec.Command(bin, "mcp")
	cmd.Env = append(os.Environ(), "STRATUM_HOME="+home, "STRATUM_STATE_ROOT=")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	s := &rawServer{t: t, cmd: cmd, stdin: stdin, lines: make(chan []byte, 16), stderr: &syncWriter{w: &bytes.Buffer{}}}
	cmd.Stderr = s.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			s.lines <- append([]byte(nil), sc.Bytes()...)
		}
		close(s.lines)
	}()
	t.Cleanup(func() {
		stdin.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("stratum mcp exited with %v\nstderr:\n%s", err, s.stderr.String())
			}
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			t.Errorf("stratum mcp did not exit at the end of its input")
		}
	})
	s.request("initialize", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}`)
	s.send([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	return s
}

func (s *rawServer) send(frame []byte) {
	s.t.Helper()
	if _, err := s.stdin.Write(append(frame, '\n')); err != nil {
		s.t.Fatalf("write: %v\nstderr:\n%s", err, s.stderr.String())
	}
}

// request sends a request with raw params and returns the response.
func (s *rawServer) request(method, params string) map[string]any {
	s.t.Helper()
	s.nextID++
	s.send([]byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, s.nextID, method, params)))
	return s.response(s.nextID)
}

// response waits for the response with the given id (skipping
// notifications and answers to unparseable frames, which have no id).
func (s *rawServer) response(id int) map[string]any {
	s.t.Helper()
	timeout := time.After(2 * time.Minute)
	for {
		select {
		case line, ok := <-s.lines:
			if !ok {
				s.t.Fatalf("the server closed its output\nstderr:\n%s", s.stderr.String())
			}
			var m map[string]any
			if err := json.Unmarshal(line, &m); err != nil {
				s.t.Fatalf("stdout carried a non-JSON line: %q", line)
			}
			if got, ok := m["id"].(float64); ok && int(got) == id {
				return m
			}
		case <-timeout: // a liveness bound, far above any answer's cost
			s.t.Fatalf("no response to request %d\nstderr:\n%s", id, s.stderr.String())
		}
	}
}

// toolResult decodes the structured content of a tools/call response.
func toolResult(t testing.TB, resp map[string]any) (isError bool, body map[string]any) {
	t.Helper()
	res, ok := resp["result"].(map[string]any)
	if !ok {
		t.Fatalf("not a tool result: %v", resp)
	}
	isError, _ = res["isError"].(bool)
	body, _ = res["structuredContent"].(map[string]any)
	if body == nil {
		t.Fatalf("tool result without structured content: %v", resp)
	}
	return isError, body
}

// stillServing checks the server answers a well-formed call.
func (s *rawServer) stillServing() {
	s.t.Helper()
	spec, _ := json.Marshal(readExample(s.t, "minimal.stratum.yaml"))
	_, body := toolResult(s.t, s.request("tools/call", `{"name":"stratum_validate","arguments":{"spec":`+string(spec)+`}}`))
	if body["status"] != "valid" {
		s.t.Fatalf("after malformed input the server answers %v", body)
	}
}

func TestStdioMalformedInput(t *testing.T) {
	s := startRaw(t)
	wantError := func(name string, resp map[string]any, code string) {
		t.Helper()
		isErr, body := toolResult(t, resp)
		e, _ := body["error"].(map[string]any)
		if !isErr || body["status"] != "error" || e["code"] != code || e["message"] == "" {
			t.Errorf("%s: want an error result with code %s, got %v", name, code, resp)
		}
		s.stillServing()
	}
	wantRPCError := func(name string, resp map[string]any) {
		t.Helper()
		e, _ := resp["error"].(map[string]any)
		if e == nil || e["message"] == "" {
			t.Errorf("%s: want a JSON-RPC error, got %v", name, resp)
		}
		s.stillServing()
	}

	wantRPCError("unknown tool", s.request("tools/call", `{"name":"stratum_frobnicate","arguments":{}}`))
	wantRPCError("unknown method", s.request("stratum/frobnicate", `{}`))
	wantError("missing parameter", s.request("tools/call", `{"name":"stratum_step_done","arguments":{"runId":"x","stepId":"y","result":{}}}`), CodeInvalidArguments)
	wantError("wrong type", s.request("tools/call", `{"name":"stratum_step_done","arguments":{"runId":5,"stepId":"y","dispatchToken":"z","result":{}}}`), CodeInvalidArguments)
	wantError("arguments not an object", s.request("tools/call", `{"name":"stratum_audit","arguments":[1,2]}`), CodeInvalidArguments)
	wantError("no arguments", s.request("tools/call", `{"name":"stratum_audit"}`), CodeInvalidArguments)
	wantError("unknown parameter", s.request("tools/call", `{"name":"stratum_audit","arguments":{"runId":"x","flow_id":"y"}}`), CodeInvalidArguments)
	for _, id := range []string{"../../etc/passwd", "..", "a/b", `a\\b`, "", strings.Repeat("x", 300), "\u0000"} {
		arg, _ := json.Marshal(id)
		wantError("run id "+string(arg), s.request("tools/call", `{"name":"stratum_audit","arguments":{"runId":`+string(arg)+`}}`), "run_not_found")
	}

	// A 10 MB spec: refused as too large by the validator.
	big := `"version: 1\n# ` + strings.Repeat("x", 10<<20) + `\n"`
	_, body := toolResult(t, s.request("tools/call", `{"name":"stratum_validate","arguments":{"spec":`+big+`}}`))
	if body["status"] != "invalid" || !strings.Contains(fmt.Sprint(body["errors"]), "YAML_LIMIT") {
		t.Errorf("10 MB spec: %.300v", body)
	}
	wantError("10 MB spec to plan", s.request("tools/call", `{"name":"stratum_plan","arguments":{"spec":`+big+`,"input":{}}}`), "invalid_spec")

	// Invalid UTF-8 inside a string, raw on the wire.
	frame := []byte("{\"name\":\"stratum_validate\",\"arguments\":{\"spec\":\"version: 1\\nflows: \xff\xfe bad\"}}")
	resp := s.request("tools/call", string(frame))
	if resp["error"] == nil {
		_, body = toolResult(t, resp)
		if body["status"] == "valid" {
			t.Errorf("invalid UTF-8 spec accepted: %v", body)
		}
	}
	s.stillServing()

	// Broken JSON frames: answered with a parse error or ignored, never
	// the end of the server.
	for _, frame := range []string{`{"jsonrpc":"2.0","id":`, `not json at all`, `{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"stratum_validate","arguments":{"spec":"x"}`, "\xff\xfe"} {
		s.send([]byte(frame))
		s.stillServing()
	}
}
