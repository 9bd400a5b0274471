package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// bigGate never holds anything up: the filter tests see every frame.
var bigGate = gateLimits{requests: 1 << 20, requestBytes: 1 << 30, heldBytes: 1 << 30, heldFrames: 1 << 20}

// runFilter filters in through a gate nothing drains until the input has
// ended, and returns the frames passed on and the answers written (each
// as "CODE ID", a batch answer as "[CODE ID, CODE ID]").
func runFilter(t testing.TB, in string, limit int) (passed, answers []string) {
	t.Helper()
	g := newGate(bigGate)
	var outBuf bytes.Buffer
	out := &frameWriter{w: &outBuf, gate: g}
	if err := filterFrames(strings.NewReader(in), g, out, limit, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	g.end(nil)
	for {
		msg, ok := g.next(context.Background())
		if !ok {
			break
		}
		passed = append(passed, fields(msg))
	}
	for _, line := range strings.Split(strings.TrimSuffix(outBuf.String(), "\n"), "\n") {
		if line == "" {
			continue
		}
		answers = append(answers, answerText(t, line))
	}
	return passed, answers
}

// wire is a message as the SDK would write it.
func wire(t testing.TB, msg jsonrpc.Message) string {
	t.Helper()
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// decoded is a frame as the SDK decodes it, in [fields] form.
func decoded(t testing.TB, frame string) string {
	t.Helper()
	msg, err := jsonrpc.DecodeMessage([]byte(frame))
	if err != nil {
		t.Fatalf("%s: %v", frame, err)
	}
	return fields(msg)
}

// responseID reads the id of a response frame from its head, for tests
// that read many answers. The SDK writes the keys in a fixed order
// (jsonrpc, id, then method for a request or result/error for a
// response), so the first few tokens decide it without decoding the
// result.
func responseID(frame []byte) (any, bool) {
	dec := json.NewDecoder(bytes.NewReader(frame))
	var toks []json.Token
	for len(toks) < 6 {
		tok, err := dec.Token()
		if err != nil {
			return nil, false
		}
		toks = append(toks, tok)
	}
	if toks[0] != json.Delim('{') || toks[3] != "id" || (toks[5] != "result" && toks[5] != "error") {
		return nil, false
	}
	id, err := jsonrpc.MakeID(toks[4])
	if err != nil || !id.IsValid() {
		return nil, false
	}
	return id.Raw(), true
}

// answerText is "CODE ID" for an error response, or the list of those in
// brackets for a batch answer.
func answerText(t testing.TB, line string) string {
	t.Helper()
	type errResp struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	one := func(raw []byte) string {
		var m errResp
		if err := json.Unmarshal(raw, &m); err != nil || m.JSONRPC != "2.0" || m.Error.Message == "" || len(m.ID) == 0 {
			t.Fatalf("bad error frame %q: %v", raw, err)
		}
		return fmt.Sprintf("%d %s", m.Error.Code, m.ID)
	}
	if strings.HasPrefix(line, "[") {
		var batch []json.RawMessage
		if err := json.Unmarshal([]byte(line), &batch); err != nil || len(batch) == 0 {
			t.Fatalf("bad batch answer %q: %v", line, err)
		}
		var parts []string
		for _, e := range batch {
			parts = append(parts, one(e))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return one([]byte(line))
}

func TestFilterFrames(t *testing.T) {
	req := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	call := func(id, params string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":` + params + `}`
	}
	cancel := func(id string) string {
		return `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + id + `}}`
	}
	for _, tc := range []struct {
		name, in string
		limit    int      // 0: 64 KiB
		pass     []string // frames passed on, in order
		answers  []string // "code id" of each error answered
	}{
		{name: "one request", in: req + "\n", pass: []string{req}},
		{name: "no final newline", in: req, pass: []string{req}},
		{name: "crlf and blank lines", in: "\r\n\n" + req + "\r\n  \n", pass: []string{req}},
		{name: "broken json", in: "{\"jsonrpc\":\n" + req + "\n", pass: []string{req}, answers: []string{"-32700 null"}},
		{name: "garbage", in: "hello\n\xff\xfe\n" + req + "\n", pass: []string{req}, answers: []string{"-32700 null", "-32700 null"}},
		{name: "scalar", in: "42\n\"s\"\nnull\n", answers: []string{"-32600 null", "-32600 null", "-32600 null"}},
		{name: "wrong version keeps the id", in: `{"jsonrpc":"1.0","id":7,"method":"x"}` + "\n", answers: []string{"-32600 7"}},
		{name: "string id", in: `{"jsonrpc":"1.0","id":"a","method":"x"}` + "\n", answers: []string{`-32600 "a"`}},
		{name: "two values on a line", in: req + " " + req + "\n", answers: []string{"-32700 1"}},

		{name: "truncated", in: `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x","argu` + "\n", answers: []string{"-32700 3"}},
		{name: "truncated at the id", in: `{"jsonrpc":"2.0","id":3` + "\n", answers: []string{"-32700 null"}},
		{name: "truncated in a string id", in: `{"jsonrpc":"2.0","id":"ab` + "\n", answers: []string{"-32700 null"}},
		{name: "id after broken params", in: `{"jsonrpc":"2.0","method":"x","params":{"a":[1,}},"id":"late"}` + "\n", answers: []string{`-32700 "late"`}},
		{name: "invalid UTF-8 between tokens", in: `{"jsonrpc":"2.0","id":4,"method":"x"` + "\xff}\n", answers: []string{"-32700 4"}},
		{name: "invalid UTF-8 in a string passes", in: call("5", `{"s":"`+"\xff"+`"}`) + "\n", pass: []string{call("5", `{"s":"`+"\xff"+`"}`)}},
		{name: "escaped id key", in: `{"jsonrpc":"2.0","\u0069d":6,"method":"x",}` + "\n", answers: []string{"-32700 6"}},
		{name: "id only inside params", in: `{"jsonrpc":"2.0","method":"x","params":{"id":5},}` + "\n", answers: []string{"-32700 null"}},

		{name: "nested 1000 deep passes", in: call("8", `{"a":`+deep(998)+`}`) + "\n", pass: []string{call("8", `{"a":`+deep(998)+`}`)}},
		{name: "nested 1001 deep", in: call("9", `{"a":`+deep(999)+`}`) + "\n", answers: []string{"-32600 9"}},
		{name: "nested 20000 deep", in: call(`"d"`, deep(20000)) + "\n", limit: 1 << 20, answers: []string{`-32600 "d"`}},
		{name: "nested deep before the id", in: `{"jsonrpc":"2.0","method":"x","params":` + deep(20000) + `,"id":10}` + "\n", limit: 1 << 20, answers: []string{"-32600 10"}},
		{name: "unbalanced deep", in: `{"jsonrpc":"2.0","id":11,"params":` + strings.Repeat("[", 5000) + "\n", answers: []string{"-32600 11"}},

		{name: "two ids", in: `{"jsonrpc":"2.0","id":12,"id":13,"method":"x"}` + "\n", answers: []string{"-32600 13"}},
		{name: "fractional id", in: `{"jsonrpc":"2.0","id":1.5,"method":"x"}` + "\n", answers: []string{"-32600 1.5"}},
		{name: "exponent id passes", in: `{"jsonrpc":"2.0","id":1e2,"method":"x"}` + "\n", pass: []string{`{"jsonrpc":"2.0","id":1e2,"method":"x"}`}},
		{name: "id beyond 2^53", in: `{"jsonrpc":"2.0","id":-9007199254740993,"method":"x"}` + "\n", answers: []string{"-32600 -9007199254740993"}},
		{name: "boolean id", in: `{"jsonrpc":"2.0","id":true,"method":"x"}` + "\n", answers: []string{"-32600 null"}},
		{name: "array id", in: `{"jsonrpc":"2.0","id":[1],"method":"x"}` + "\n", answers: []string{"-32600 null"}},
		{name: "null id is a notification", in: `{"jsonrpc":"2.0","id":null,"method":"x"}` + "\n", pass: []string{`{"jsonrpc":"2.0","id":null,"method":"x"}`}},
		{name: "same id twice", in: req + "\n" + req + "\n", pass: []string{req}, answers: []string{"-32600 1"}},

		{name: "over-long line", in: call("14", `{"s":"`+strings.Repeat("x", 300)+`"}`) + "\n" + req + "\n", limit: 256, pass: []string{req}, answers: []string{"-32600 14"}},
		{name: "over-long line, id last", in: `{"jsonrpc":"2.0","method":"x","params":{"s":"` + strings.Repeat("x", 300) + `"},"id":"z"}` + "\n" + req + "\n", limit: 256, pass: []string{req}, answers: []string{`-32600 "z"`}},
		{name: "a line of exactly the limit passes", in: `{"jsonrpc":"2.0","method":"` + strings.Repeat("x", 256-29) + `"}` + "\n", limit: 256, pass: []string{`{"jsonrpc":"2.0","method":"` + strings.Repeat("x", 256-29) + `"}`}},
		{name: "a line of one more is refused", in: `{"jsonrpc":"2.0","method":"` + strings.Repeat("x", 256-28) + `"}` + "\n", limit: 256, answers: []string{"-32600 null"}},
		{name: "over-long final line", in: req + "\n" + strings.Repeat("y", 1000), limit: 256, pass: []string{req}, answers: []string{"-32600 null"}},
		{name: "over-long response", in: `{"jsonrpc":"2.0","id":15,"result":"` + strings.Repeat("x", 300) + `"}` + "\n", limit: 256},

		{name: "a response passes", in: `{"jsonrpc":"2.0","id":16,"result":{}}` + "\n", pass: []string{`{"jsonrpc":"2.0","id":16,"result":{}}`}},
		{name: "a broken response is not answered", in: `{"jsonrpc":"2.0","id":17,"result":` + deep(2000) + `}` + "\n" + `{"jsonrpc":"2.0","id":18,"error":{` + "\n"},
		{name: "batch", in: "[" + req + `,{"jsonrpc":"2.0","method":"n"},{"jsonrpc":"2.0","id":"b","method":"ping"},{"jsonrpc":"2.0","id":2,"result":{}}]` + "\n", answers: []string{`[-32600 1, -32600 "b"]`}},
		{name: "batch of notifications", in: `[{"jsonrpc":"2.0","method":"n"}]` + "\n"},
		{name: "empty batch", in: "[]\n", answers: []string{"-32600 null"}},

		{name: "cancel a held request", in: req + "\n" + call("2", "{}") + "\n" + cancel("2") + "\n", pass: []string{req}},
		{name: "cancel an unknown request passes", in: cancel("99") + "\n", pass: []string{cancel("99")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			limit := tc.limit
			if limit == 0 {
				limit = 64 << 10
			}
			passed, answers := runFilter(t, tc.in, limit)
			var want []string
			for _, f := range tc.pass {
				want = append(want, decoded(t, f))
			}
			if strings.Join(passed, "|") != strings.Join(want, "|") {
				t.Errorf("passed on %.300q, want %.300q", passed, want)
			}
			if strings.Join(answers, "|") != strings.Join(tc.answers, "|") {
				t.Errorf("answered %q, want %q", answers, tc.answers)
			}
		})
	}
}

// FuzzFilterFrames: whatever arrives, every frame passed on decodes as a
// JSON-RPC message and every answer is a JSON-RPC error object (or a
// batch of them).
func FuzzFilterFrames(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}` + "\n",
		"{\"jsonrpc\":\n[1]\n\xff\n",
		`{"jsonrpc":"2.0","id":1,"result":{}}` + "\r\n" + `{"jsonrpc":"2.0","method":"x"}`,
		strings.Repeat("a", 300) + "\n{}\n",
		`[{"jsonrpc":"2.0","id":1,"method":"x"}]` + "\n" + `{"id":2,"id":"x"` + "\n",
		`{"jsonrpc":"2.0","id":"\u0041","method":"x","params":[[[[]]]]}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		passed, _ := runFilter(t, in, 256) // runFilter checks every answer
		// Each message passed on is, field for field, what the SDK makes
		// of one of the lines, in their order.
		lines := strings.Split(in, "\n")
		for _, p := range passed {
			for {
				if len(lines) == 0 {
					t.Fatalf("passed on %s, which the SDK reads from no line of the input", p)
				}
				line := bytes.TrimSpace([]byte(lines[0]))
				lines = lines[1:]
				if m, err := jsonrpc.DecodeMessage(line); err == nil && fields(m) == p {
					break
				}
			}
		}
	})
}

// TestWriterTellsTheGate: an answer the SDK writes ends its request's
// time in flight; an error the filter writes itself does not (its id may
// be that of a request in flight).
func TestWriterTellsTheGate(t *testing.T) {
	g := newGate(bigGate)
	g.push(frameMsg(t, `{"jsonrpc":"2.0","id":1,"method":"x"}`), 40, int64(1))
	if _, ok := g.next(context.Background()); !ok || !g.inUse(int64(1)) {
		t.Fatal("request 1 not in flight")
	}
	var buf bytes.Buffer
	out := &frameWriter{w: &buf, gate: g}
	writeError(out, json.RawMessage("1"), rpcInvalidRequest, "x", nil)
	if !g.inUse(int64(1)) {
		t.Error("the filter's own error ended request 1")
	}
	out.writeAnswer([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`+"\n"), int64(1))
	if g.inUse(int64(1)) {
		t.Error("the SDK's answer did not end request 1")
	}
	if !g.drain(time.Second) {
		t.Error("drain with nothing in flight")
	}
}

// failingWriter fails every write.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("the client is gone") }

// TestStreamConnWriteTellsTheGate: the connection's Write ends the time in
// flight of the request a response answers, by the id the SDK gives it,
// even when the write fails; a request of the server's does not.
func TestStreamConnWriteTellsTheGate(t *testing.T) {
	for _, tc := range []struct {
		name string
		w    io.Writer
	}{{"written", &bytes.Buffer{}}, {"write failed", failingWriter{}}} {
		t.Run(tc.name, func(t *testing.T) {
			tr, g := newStreamTransport(strings.NewReader(""), tc.w, nil, 1<<20, bigGate)
			g.mu.Lock()
			g.inflight[int64(7)], g.inflight["s"], g.bytes = 10, 10, 20
			g.mu.Unlock()
			conn, err := tr.Connect(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			conn.Write(ctx, frameMsg(t, `{"jsonrpc":"2.0","id":"s","method":"roots/list"}`))
			if !g.inUse("s") {
				t.Error("a request of the server's ended a request in flight with its id")
			}
			err = conn.Write(ctx, frameMsg(t, `{"jsonrpc":"2.0","id":7,"result":{}}`))
			if _, failed := tc.w.(failingWriter); failed != (err != nil) {
				t.Errorf("Write = %v", err)
			}
			if g.inUse(int64(7)) {
				t.Error("the answer to request 7 did not end its time in flight")
			}
		})
	}
}

// TestStreamConnLifecycle: Close ends a Read waiting for input (the SDK
// closes the connection on a signal or a failed write while the client's
// input stays open), a cancelled context ends it too, and a stream
// carries one session.
func TestStreamConnLifecycle(t *testing.T) {
	in, _ := io.Pipe() // input that never comes
	tr, _ := newStreamTransport(in, &bytes.Buffer{}, nil, 1<<20, bigGate)
	conn, err := tr.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Connect(context.Background()); err == nil {
		t.Error("a second Connect on one stream was accepted")
	}
	read := func(ctx context.Context) <-chan error {
		done := make(chan error, 1)
		go func() {
			_, err := conn.Read(ctx)
			done <- err
		}()
		return done
	}
	// A Read that never returns fails the test instead of hanging it.
	returned := func(done <-chan error) error {
		select {
		case err := <-done:
			return err
		case <-time.After(10 * time.Second):
			t.Fatal("Read did not return")
			return nil
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	waiting := read(ctx)
	cancel()
	if err := returned(waiting); !errors.Is(err, context.Canceled) {
		t.Errorf("Read after its context was cancelled = %v, want context.Canceled", err)
	}
	waiting = read(context.Background())
	conn.Close()
	if err := returned(waiting); err != io.EOF {
		t.Errorf("Read after Close = %v, want io.EOF", err)
	}
}
