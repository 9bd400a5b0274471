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
	"sync/atomic"
	"syscall"
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
	lines  chan []byte // filled by readAll once started
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
	if err := json.Unmarshal(line, &m); err != nil {
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
func (c *pipeClient) next() map[string]any {
	c.t.Helper()
	select {
	case line, ok := <-c.lines:
		if !ok {
			c.t.Fatalf("the server closed its output\nstderr:\n%s", c.stderr.String())
		}
		return decodeLine(c.t, line)
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

// finish closes stdin, waits for a clean exit and returns the server's
// peak resident set size in bytes (the child's rusage, which Linux
// reports in KiB).
func (c *pipeClient) finish() int64 {
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
	return c.cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10
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
	const n = 20000
	c := startPipeClient(t)
	done := writeStalled(func(progress *atomic.Int64) {
		for i := 1; i <= n; i++ {
			k, err := fmt.Fprintf(c.stdin, `{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`+"\n", i)
			if err != nil {
				t.Errorf("write request %d: %v", i, err)
				return
			}
			progress.Add(int64(k))
		}
	})
	c.startReading()
	seen := make(map[int]bool, n)
	for len(seen) < n {
		m := c.next()
		id, ok := m["id"].(float64)
		if !ok || id < 1 || id > n || m["result"] == nil {
			t.Fatalf("unexpected answer after %d: %.300v", len(seen), m)
		}
		if seen[int(id)] {
			t.Fatalf("request %v answered twice", id)
		}
		seen[int(id)] = true
	}
	<-done
	c.listTools(`"after"`)
	peak := c.finish()
	t.Logf("peak RSS of the server over %d pipelined tools/list: %.1f MiB", n, float64(peak)/(1<<20))
	if peak > 200<<20 {
		t.Errorf("peak RSS %d MiB, want under 200 MiB (docs/mcp.md: limits and backpressure)", peak>>20)
	}
}

var _ = strings.Repeat
