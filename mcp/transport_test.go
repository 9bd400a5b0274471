package mcp

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

func TestFilterFrames(t *testing.T) {
	req := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	for _, tc := range []struct {
		name, in string
		pass     []string // lines forwarded to the SDK
		errs     []string // "code id" of each error answered
	}{
		{"one request", req + "\n", []string{req}, nil},
		{"no final newline", req, []string{req}, nil},
		{"crlf and blank lines", "\r\n\n" + req + "\r\n  \n", []string{req}, nil},
		{"broken json", "{\"jsonrpc\":\n" + req + "\n", []string{req}, []string{"-32700 null"}},
		{"garbage", "hello\n\xff\xfe\n" + req + "\n", []string{req}, []string{"-32700 null", "-32700 null"}},
		{"batch", "[" + req + "]\n" + req + "\n", []string{req}, []string{"-32600 null"}},
		{"scalar", "42\n", nil, []string{"-32600 null"}},
		{"wrong version keeps the id", `{"jsonrpc":"1.0","id":7,"method":"x"}` + "\n", nil, []string{"-32600 7"}},
		{"string id", `{"jsonrpc":"1.0","id":"a","method":"x"}` + "\n", nil, []string{`-32600 "a"`}},
		{"two values on a line", req + " " + req + "\n", nil, []string{"-32700 null"}},
		{"over-long line", `{"jsonrpc":"2.0","id":1,"method":"` + strings.Repeat("x", 300) + `"}` + "\n" + req + "\n", []string{req}, []string{"-32600 null"}},
		{"over-long final line", req + "\n" + strings.Repeat("y", 1000), []string{req}, []string{"-32600 null"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var w, out bytes.Buffer
			if err := filterFrames(strings.NewReader(tc.in), &w, &out, 256, slog.New(slog.DiscardHandler), func(jsonrpc.Message) {}); err != nil {
				t.Fatal(err)
			}
			got := strings.Split(strings.TrimSuffix(w.String(), "\n"), "\n")
			if w.Len() == 0 {
				got = nil
			}
			if strings.Join(got, "|") != strings.Join(tc.pass, "|") {
				t.Errorf("forwarded %q, want %q", got, tc.pass)
			}
			var errs []string
			for _, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
				if line == "" {
					continue
				}
				var m struct {
					ID    json.RawMessage `json:"id"`
					Error struct {
						Code    int    `json:"code"`
						Message string `json:"message"`
					} `json:"error"`
				}
				if err := json.Unmarshal([]byte(line), &m); err != nil || m.Error.Message == "" {
					t.Fatalf("bad error frame %q: %v", line, err)
				}
				errs = append(errs, strings.TrimSpace(strings.Join([]string{itoa(m.Error.Code), string(m.ID)}, " ")))
			}
			if strings.Join(errs, "|") != strings.Join(tc.errs, "|") {
				t.Errorf("answered %q, want %q", errs, tc.errs)
			}
		})
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// FuzzFilterFrames: whatever arrives, every line passed on decodes as a
// JSON-RPC message and every answer is a JSON-RPC error object.
func FuzzFilterFrames(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}` + "\n",
		"{\"jsonrpc\":\n[1]\n\xff\n",
		`{"jsonrpc":"2.0","id":1,"result":{}}` + "\r\n" + `{"jsonrpc":"2.0","method":"x"}`,
		strings.Repeat("a", 300) + "\n{}\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var w, out bytes.Buffer
		if err := filterFrames(strings.NewReader(in), &w, &out, 256, slog.New(slog.DiscardHandler), func(jsonrpc.Message) {}); err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(w.String(), "\n") {
			if line == "" {
				continue
			}
			if _, err := jsonrpc.DecodeMessage([]byte(line)); err != nil {
				t.Fatalf("forwarded %q: %v", line, err)
			}
		}
		for _, line := range strings.Split(out.String(), "\n") {
			if line != "" && !json.Valid([]byte(line)) {
				t.Fatalf("answered with invalid JSON %q", line)
			}
		}
	})
}

func TestResponseID(t *testing.T) {
	for _, tc := range []struct {
		frame string
		id    any
		ok    bool
	}{
		{`{"jsonrpc":"2.0","id":3,"result":{"big":[1,2,3]}}`, int64(3), true},
		{`{"jsonrpc":"2.0","id":"a","error":{"code":-1,"message":"x"}}`, "a", true},
		{`{"jsonrpc":"2.0","id":4,"method":"roots/list"}`, nil, false},
		{`{"jsonrpc":"2.0","method":"notifications/progress","params":{}}`, nil, false},
		{`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}`, nil, false},
		{`garbage`, nil, false},
	} {
		id, ok := responseID([]byte(tc.frame))
		if ok != tc.ok || id != tc.id {
			t.Errorf("responseID(%s) = %v (%T), %v; want %v, %v", tc.frame, id, id, ok, tc.id, tc.ok)
		}
	}
}

func TestPendingDrain(t *testing.T) {
	p := newPending()
	decode := func(s string) jsonrpc.Message {
		m, err := jsonrpc.DecodeMessage([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	p.track(decode(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}`))
	p.track(decode(`{"jsonrpc":"2.0","id":"two","method":"tools/list"}`))
	p.track(decode(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	if p.drain(10 * time.Millisecond) {
		t.Fatal("drained with two requests pending")
	}
	id, _ := responseID([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))
	p.done(id)
	p.track(decode(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"two"}}`))
	if !p.drain(10 * time.Millisecond) {
		t.Fatalf("still pending: %v", p.ids)
	}
}
