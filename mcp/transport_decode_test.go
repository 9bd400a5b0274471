package mcp

import (
	"bytes"
	"encoding/json"
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
		if a, b := wire(t, ours), wire(t, sdks); a != b {
			t.Fatalf("%s:\ndecodeMessage: %s\nthe SDK:       %s", frame, a, b)
		}
	})
}
