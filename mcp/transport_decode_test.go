package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// FuzzDecodeMessage holds decodeMessage to the SDK's own decoding for
// every frame the filter would decode (valid JSON, an object, nesting
// within MaxDepth, a usable id): both refuse it, or both give the same
// message.
func FuzzDecodeMessage(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":[1,2]}}}`,
		`{"jsonrpc":"2.0","id":"a","method":""}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":null,"method":"x","params":null}`,
		`{"jsonrpc":"2.0","id":7,"result":{"ok":true}}`,
		`{"jsonrpc":"2.0","id":7,"result":null}`,
		`{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"no","data":[1]}}`,
		`{"jsonrpc":"2.0","id":7,"error":null}`,
		`{"jsonrpc":"2.0","id":7}`,
		`{"jsonrpc":"2.0"}`,
		`{"jsonrpc":"1.0","id":1,"method":"x"}`,
		`{"jsonrpc":null,"id":1,"method":"x"}`,
		`{"JSONRPC":"2.0","ID":1,"Method":"x"}`,
		`{"jsonrpc":"2.0","id":1,"method":3}`,
		`{"jsonrpc":"2.0","id":1,"method":null}`,
		`{"jsonrpc":"2.0","id":1,"method":"a","method":"b","params":[1],"params":{}}`,
		`{"jsonrpc":"2.0","id":1e2,"method":"x"}`,
		`{"jsonrpc":"2.0","id":1,"error":{"code":1.5,"message":"x"}}`,
		`{"jsonrpc":"2.0","id":1,"error":"x"}`,
		`{"jsonrpc":"2.0","id":1,"method":"x","result":{}}`,
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\"}",
		`{"jsonrpc":"\u0032.0","\u0069d":1,"method":"\ud800"}`,
		`{"jsonrpc":"2.0","id":1,"method":"x","params": { "a" : [ 1 , "\"}" ] } , "other" : {"id":2} }`,
		`{"jsonrpc":"2.0","id":1,"error": null }`,
		`{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"x","Data":1,"data":[ 2 ]}}`,
		`{"jsonrpc":"2.0","id":1,"error":[]}`,
		`{"jsonrpc":"2.0","id":"\u00e9","method":"\u006dethod","meth\u006fd":"y"}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		frame := []byte(in)
		if !json.Valid(frame) || len(frame) == 0 || frame[0] != '{' {
			return
		}
		if s := scanFrame(frame); s.maxDepth > MaxDepth || s.idProblem() != "" {
			return
		}
		ours, oursErr := decodeMessage(bytes.Clone(frame))
		sdks, sdkErr := jsonrpc.DecodeMessage(bytes.Clone(frame))
		if (oursErr == nil) != (sdkErr == nil) {
			t.Fatalf("%s: decodeMessage: %v; the SDK: %v", frame, oursErr, sdkErr)
		}
		if oursErr != nil {
			return
		}
		if a, b := fields(ours), fields(sdks); a != b {
			t.Fatalf("%s:\ndecodeMessage: %s\nthe SDK:       %s", frame, a, b)
		}
	})
}

// fields is every field of a decoded message, raw values byte for byte
// (encoding the message again would compact them and mend bad UTF-8).
func fields(m jsonrpc.Message) string {
	switch m := m.(type) {
	case *jsonrpc.Request:
		return fmt.Sprintf("request id=%#v method=%q params=%q", m.ID.Raw(), m.Method, m.Params)
	case *jsonrpc.Response:
		return fmt.Sprintf("response id=%#v result=%q error=%#v", m.ID.Raw(), m.Result, m.Error)
	}
	return fmt.Sprintf("%T", m)
}

// TestDecodeMessageKeepsNoOtherMembers: the members a message does not use
// are skipped, not kept: a frame of many of them allocates what a frame of
// a few does (a map of every member would hold one entry per member).
func TestDecodeMessageKeepsNoOtherMembers(t *testing.T) {
	var frame bytes.Buffer
	frame.WriteString(`{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":[1,{"b":"}"}]}`)
	for i := range 100_000 {
		fmt.Fprintf(&frame, `,"m%d":[%d,"\"]"]`, i, i)
	}
	frame.WriteString("}")
	allocs := testing.AllocsPerRun(5, func() {
		m, err := decodeMessage(frame.Bytes())
		if req, ok := m.(*jsonrpc.Request); err != nil || !ok || req.Method != "x" || string(req.Params) != `{"a":[1,{"b":"}"}]}` {
			t.Fatalf("decodeMessage = %v, %v", m, err)
		}
	})
	if allocs > 20 {
		t.Errorf("decodeMessage of a frame of 100,003 members made %.0f allocations, want at most 20", allocs)
	}
}
