package mcp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The tests in this file play a hostile MCP client against the real
// binary over stdio: one that never reads its answers, one that sends
// frames no JSON-RPC library would (nested 20,000 deep, truncated, over
// the frame limit, with two ids). After each case the server must still
// answer tools/list, and every request it could attribute must have been
// answered with its own id (docs/mcp.md, "Limits and backpressure").

// pipeClient is a raw client of `stratum mcp` that reads its stdout only
// when the test says so.
type pipeClient struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	out    *bufio.Reader
	stderr *syncWriter
	lines  chan []byte      // filled in the background once startReading is called
	queue  []map[string]any // the rest of a batch answer
	exited bool
}

func startPipeClient(t *testing.T) *pipeClient {
	t.Helper()
	bin, _ := buildBinaries(t)
	home := t.TempDir()
	cmd := exec.Command(bin, "mcp")
	cmd.Env = append(os.Environ(), "STRATUM_HOME="+home, "STRATUM_STATE_ROOT=")
	cmd.Dir = home
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c := &pipeClient{t: t, cmd: cmd, stdin: stdin, out: bufio.NewReaderSize(stdout, 1<<20), stderr: &syncWriter{w: &bytes.Buffer{}}}
	cmd.Stderr = c.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !c.exited {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	c.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"hostile","version":"0"}}}`)
	if m := c.readMsg(); m["id"] != "init" || m["result"] == nil {
		t.Fatalf("initialize: %v", m)
	}
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return c
}

func (c *pipeClient) send(frame string) {
	c.t.Helper()
	if _, err := io.WriteString(c.stdin, frame+"\n"); err != nil {
		c.t.Fatalf("write: %v\nstderr:\n%s", err, c.stderr.String())
	}
}

// readMsg reads the next line of stdout (synchronously: only before
// startReading) as a JSON object.
func (c *pipeClient) readMsg() map[string]any {
	c.t.Helper()
	line, err := c.out.ReadBytes('\n')
	if err != nil {
		c.t.Fatalf("read: %v\nstderr:\n%s", err, c.stderr.String())
	}
	return decodeLine(c.t, line)
}

func decodeLine(t *testing.T, line []byte) map[string]any {
	t.Helper()
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber() // ids as sent, beyond 2^53 too
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("stdout carried a line that is not a JSON object: %.200q", line)
	}
	return m
}

// startReading reads stdout in the background from now on.
func (c *pipeClient) startReading() {
	c.lines = make(chan []byte, 64)
	go func() {
		defer close(c.lines)
		for {
			line, err := c.out.ReadBytes('\n')
			if len(line) > 0 {
				c.lines <- line
			}
			if err != nil {
				return
			}
		}
	}()
}

// next returns the next message read in the background, failing the test
// when the server says nothing for a long time (a liveness bound far above
// any answer's cost, not a speed assertion).
// A batch answer (an array) yields its elements in turn.
func (c *pipeClient) next() map[string]any {
	c.t.Helper()
	if len(c.queue) > 0 {
		m := c.queue[0]
		c.queue = c.queue[1:]
		return m
	}
	select {
	case line, ok := <-c.lines:
		if !ok {
			c.t.Fatalf("the server closed its output\nstderr:\n%s", c.stderr.String())
		}
		if line[0] == '[' {
			var batch []json.RawMessage
			if err := json.Unmarshal(line, &batch); err != nil || len(batch) == 0 {
				c.t.Fatalf("stdout carried a bad batch: %.200q", line)
			}
			for _, e := range batch {
				c.queue = append(c.queue, decodeLine(c.t, e))
			}
			return c.next()
		}
		return decodeLine(c.t, line)
	case <-time.After(2 * time.Minute):
		c.t.Fatalf("the server answered nothing for 2 minutes\nstderr:\n%s", c.stderr.String())
	}
	return nil
}

// nextLine returns the next line read in the background, as next does.
func (c *pipeClient) nextLine() []byte {
	c.t.Helper()
	select {
	case line, ok := <-c.lines:
		if !ok {
			c.t.Fatalf("the server closed its output\nstderr:\n%s", c.stderr.String())
		}
		return line
	case <-time.After(2 * time.Minute):
		c.t.Fatalf("the server answered nothing for 2 minutes\nstderr:\n%s", c.stderr.String())
	}
	return nil
}

// idKey is the JSON text of a message's id ("null" when it has none).
func idKey(m map[string]any) string {
	b, _ := json.Marshal(m["id"])
	return string(b)
}

// listTools checks that the server still answers tools/list (id given).
func (c *pipeClient) listTools(id string) {
	c.t.Helper()
	c.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/list"}`)
	for {
		m := c.next()
		if idKey(m) != id {
			c.t.Fatalf("waiting for tools/list %s, got %.300v", id, m)
		}
		res, _ := m["result"].(map[string]any)
		if tools, _ := res["tools"].([]any); len(tools) == 0 {
			c.t.Fatalf("tools/list %s: %.300v", id, m)
		}
		return
	}
}

// peakRSS is the server's peak resident set size so far, in bytes
// (VmHWM of /proc/PID/status). The child's rusage would not do: a child
// started with vfork counts the parent's peak as its own until it execs.
func (c *pipeClient) peakRSS() int64 {
	c.t.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", c.cmd.Process.Pid))
	if err != nil {
		c.t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				c.t.Fatalf("VmHWM %q: %v", v, err)
			}
			return kb << 10
		}
	}
	c.t.Fatalf("no VmHWM in /proc/%d/status", c.cmd.Process.Pid)
	return 0
}

// finish closes stdin and waits for a clean exit.
func (c *pipeClient) finish() {
	c.t.Helper()
	c.stdin.Close()
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	select {
	case err := <-done:
		c.exited = true
		if err != nil {
			c.t.Fatalf("stratum mcp exited with %v\nstderr:\n%s", err, c.stderr.String())
		}
	case <-time.After(2 * time.Minute):
		c.t.Fatalf("stratum mcp did not exit at the end of its input\nstderr:\n%s", c.stderr.String())
	}
}

// writeStalled runs write in the background and returns once it has
// finished or has made no progress for a while (the server stopped
// reading); progress counts the bytes written so far. Either outcome is
// fine for the tests: what they assert is memory and answers, not when
// reading starts.
func writeStalled(write func(progress *atomic.Int64)) <-chan struct{} {
	var progress atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		write(&progress)
	}()
	last, still := int64(-1), 0
	for still < 40 {
		select {
		case <-done:
			return done
		case <-time.After(25 * time.Millisecond):
		}
		if n := progress.Load(); n == last {
			still++
		} else {
			last, still = n, 0
		}
	}
	return done
}

// TestStdioPipelinedWithoutReading writes 20,000 tools/list requests
// (80 KB of answer each) without reading a byte of output, then reads
// everything: every request is answered exactly once, and the server's
// peak memory stays bounded because it stops reading its input while too
// many answers are unsent.
func TestStdioPipelinedWithoutReading(t *testing.T) {
	if testing.Short() {
		t.Skip("20,000 requests")
	}
	// 20,000 requests; one in 20 is tools/list (80 KB of answer, about
	// 2 ms of server CPU each), the others ping: the bound is on requests
	// held, whatever they are, and this keeps the test near 10 s. The
	// figure for 20,000 tools/list is in docs/mcp.md.
	const n = 20000
	c := startPipeClient(t)
	done := writeStalled(func(progress *atomic.Int64) {
		for i := 1; i <= n; i++ {
			method := "ping"
			if i%20 == 0 {
				method = "tools/list"
			}
			k, err := fmt.Fprintf(c.stdin, `{"jsonrpc":"2.0","id":%d,"method":"%s"}`+"\n", i, method)
			if err != nil {
				t.Errorf("write request %d: %v", i, err)
				return
			}
			progress.Add(int64(k))
		}
	})
	c.startReading()
	seen := make(map[int64]bool, n)
	for len(seen) < n {
		line := c.nextLine()
		// The id from the head of the frame: decoding 1.6 GB of tool
		// lists into maps would cost the test more than the server.
		raw, _ := responseID(line)
		id, _ := raw.(int64)
		var errPart struct{ Error json.RawMessage }
		if json.Unmarshal(line, &errPart); id < 1 || id > n || errPart.Error != nil {
			t.Fatalf("unexpected answer after %d: %.300s", len(seen), line)
		}
		if seen[id] {
			t.Fatalf("request %v answered twice", id)
		}
		seen[id] = true
	}
	<-done
	c.listTools(`"after"`)
	peak := c.peakRSS()
	c.finish()
	t.Logf("peak RSS of the server over %d pipelined requests: %.1f MiB (server CPU %v user, %v system)",
		n, float64(peak)/(1<<20), c.cmd.ProcessState.UserTime(), c.cmd.ProcessState.SystemTime())
	if peak > 100<<20 {
		t.Errorf("peak RSS %d MiB, want under 100 MiB (docs/mcp.md: limits and backpressure)", peak>>20)
	}
}

// hostileCase is one frame and the answers it must get: "ID CODE" for a
// JSON-RPC error, "ID result" for a result (ID as JSON text).
type hostileCase struct {
	name  string
	frame string
	want  []string
}

func hostileCases() []hostileCase {
	deepArrays := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	deepObjects := func(n int) string { return strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n) }
	validate := func(id, spec string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"stratum_validate","arguments":{"spec":` + spec + `}}}`
	}
	huge := `"` + strings.Repeat("x", MaxFrameBytes+1) + `"`
	return []hostileCase{
		{"arrays 20,000 deep", validate("101", deepArrays(20000)), []string{"101 -32600"}},
		{"objects 20,000 deep", validate("102", deepObjects(20000)), []string{"102 -32600"}},
		{"arrays 5,000 deep", validate("103", deepArrays(5000)), []string{"103 -32600"}},
		{"deep before the id", `{"jsonrpc":"2.0","method":"tools/list","params":{"x":` + deepArrays(20000) + `},"id":104}`, []string{"104 -32600"}},
		{"arrays 500 deep are fine", validate("105", deepArrays(500)), []string{"105 result"}},
		{"invalid UTF-8 between tokens", `{"jsonrpc":"2.0","id":106,"method":"tools/list"` + "\xff}", []string{"106 -32700"}},
		{"invalid UTF-8 in a string", validate("107", "\"version: 1\\n\xff\xfe\""), []string{"107 result"}},
		{"truncated", `{"jsonrpc":"2.0","id":108,"method":"tools/call","params":{"name":"stratum_val`, []string{"108 -32700"}},
		{"truncated after the id", `{"jsonrpc":"2.0","id":"t-109",`, []string{`"t-109" -32700`}},
		{"truncated inside the id", `{"jsonrpc":"2.0","id":11`, []string{"null -32700"}},
		{"two id members", `{"jsonrpc":"2.0","id":110,"id":111,"method":"tools/list"}`, []string{"111 -32600"}},
		{"fractional id", `{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}`, []string{"1.5 -32600"}},
		{"id beyond 2^53", `{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/list"}`, []string{"9007199254740993 -32600"}},
		{"object id", `{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}`, []string{"null -32600"}},
		{"an id only inside params", `{"jsonrpc":"2.0","method":"x","params":{"id":5},}`, []string{"null -32700"}},
		{"huge string id", `{"jsonrpc":"2.0","id":"` + strings.Repeat("i", 1<<20) + `","method":"tools/list"}`, []string{`"` + strings.Repeat("i", 1<<20) + `" result`}},
		{"over the frame limit, id first", validate("112", huge), []string{"112 -32600"}},
		{"over the frame limit, id last", `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"stratum_validate","arguments":{"spec":` + huge + `}},"id":113}`, []string{"113 -32600"}},
		{"over the frame limit, no id", `{"jsonrpc":"2.0","method":"notifications/x","params":{"s":` + huge + `}}`, []string{"null -32600"}},
		{"a response nested 20,000 deep", `{"jsonrpc":"2.0","id":114,"result":` + deepArrays(20000) + `}`, nil},
		{"batch", `[{"jsonrpc":"2.0","id":115,"method":"tools/list"},{"jsonrpc":"2.0","method":"notifications/x"},{"jsonrpc":"2.0","id":"b","method":"ping"}]`, []string{"115 -32600", `"b" -32600`}},
		{"batch of notifications", `[{"jsonrpc":"2.0","method":"notifications/x"}]`, nil},
		{"empty batch", `[]`, []string{"null -32600"}},
		{"a scalar", `42`, []string{"null -32600"}},
		{"NUL bytes", "\x00\x00", []string{"null -32700"}},
		{"wrong version", `{"jsonrpc":"1.0","id":116,"method":"tools/list"}`, []string{"116 -32600"}},
	}
}

// TestStdioHostileFrames sends each hostile frame followed by tools/list:
// the frame gets exactly the answers listed (none for a response or a
// batch of notifications), with its own id wherever the id could be
// read, and the server goes on serving.
func TestStdioHostileFrames(t *testing.T) {
	c := startPipeClient(t)
	c.startReading()
	for i, tc := range hostileCases() {
		t.Run(tc.name, func(t *testing.T) {
			c.t = t
			c.send(tc.frame)
			after := fmt.Sprintf(`"after-%d"`, i)
			c.send(`{"jsonrpc":"2.0","id":` + after + `,"method":"tools/list"}`)
			// The frame's answers and tools/list's may come in either order
			// when the SDK handles both; a frame the transport refuses is
			// answered before the next line is read.
			var got []string
			for listed := false; !listed || len(got) < len(tc.want); {
				m := c.next()
				if idKey(m) == after {
					listed = true
				} else {
					got = append(got, answerKey(m))
				}
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("answers %.300q, want %.300q", got, tc.want)
			}
			c.listTools(fmt.Sprintf(`"list-%d"`, i))
		})
	}
	c.t = t
	c.finish()
}

// TestStdioSameIDTwice sends two requests with one id back to back:
// there are two answers with that id (the second may be a refusal, if the
// first was still in flight), never one with a null id.
func TestStdioSameIDTwice(t *testing.T) {
	c := startPipeClient(t)
	c.startReading()
	for round := 0; round < 20; round++ {
		id := fmt.Sprintf(`"dup-%d"`, round)
		req := `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/list"}`
		c.send(req + "\n" + req)
		for k := 0; k < 2; k++ {
			if m := c.next(); idKey(m) != id {
				t.Fatalf("round %d: answer %d has id %s: %.300v", round, k, idKey(m), m)
			}
		}
	}
	c.listTools(`"after"`)
	c.finish()
}

// answerKey is "ID result" or "ID CODE" for one answer.
func answerKey(m map[string]any) string {
	if e, ok := m["error"].(map[string]any); ok {
		return fmt.Sprintf("%s %v", idKey(m), e["code"])
	}
	return idKey(m) + " result"
}

// TestStdioEOFAnswersEverything pipes 500 calls and ends the input at
// once: the calls beyond the in-flight limit wait their turn, and every
// one is answered before the server exits.
func TestStdioEOFAnswersEverything(t *testing.T) {
	const n = 500
	c := startPipeClient(t)
	spec, _ := json.Marshal(readExample(t, "minimal.stratum.yaml"))
	var in bytes.Buffer
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&in, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"stratum_validate","arguments":{"spec":%s}}}`+"\n", i, spec)
	}
	go func() {
		c.stdin.Write(in.Bytes())
		c.stdin.Close()
	}()
	c.startReading()
	seen := map[string]bool{}
	for len(seen) < n {
		m := c.next()
		res, _ := m["result"].(map[string]any)
		body, _ := res["structuredContent"].(map[string]any)
		if body["status"] != "valid" || seen[idKey(m)] {
			t.Fatalf("after %d answers: %.300v", len(seen), m)
		}
		seen[idKey(m)] = true
	}
	c.finish()
}

// TestStdioLargeArgumentMemory measures what a 10 MB tool argument costs
// the server: the peak RSS of a server that answers only tools/list, of
// one that answers one stratum_validate of a 10 MB spec, and of one that
// gets 8 of those pipelined by a client that reads nothing until it has
// written them all. The in-flight byte bound keeps the last near the
// second (docs/mcp.md, "Limits and backpressure").
func TestStdioLargeArgumentMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("80 MB of requests")
	}
	spec, _ := json.Marshal("version: 1\n# " + strings.Repeat("x", 10<<20) + "\n")
	call := func(id int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"stratum_validate","arguments":{"spec":%s}}}`, id, spec)
	}
	peak := func(calls int) int64 {
		c := startPipeClient(t)
		done := writeStalled(func(progress *atomic.Int64) {
			for i := 1; i <= calls; i++ {
				k, err := io.WriteString(c.stdin, call(i)+"\n")
				if err != nil {
					t.Errorf("write call %d: %v", i, err)
					return
				}
				progress.Add(int64(k))
			}
		})
		c.startReading()
		for i := 0; i < calls; i++ {
			m := c.next()
			res, _ := m["result"].(map[string]any)
			body, _ := res["structuredContent"].(map[string]any)
			if body["status"] != "invalid" {
				t.Fatalf("10 MB spec: %.300v", m)
			}
		}
		<-done
		c.listTools(`"after"`)
		p := c.peakRSS()
		c.finish()
		return p
	}
	base, one, eight := peak(0), peak(1), peak(8)
	mib := func(b int64) float64 { return float64(b) / (1 << 20) }
	t.Logf("peak RSS: tools/list only %.1f MiB; one 10 MB call %.1f MiB (+%.1f); 8 pipelined %.1f MiB (+%.1f)",
		mib(base), mib(one), mib(one-base), mib(eight), mib(eight-base))
	// Measured 160-180 MiB; all 8 in flight at once would take 800.
	if eight > 300<<20 {
		t.Errorf("8 pipelined 10 MB calls: peak RSS %.0f MiB, want under 300 MiB", mib(eight))
	}
}
