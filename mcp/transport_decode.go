package mcp

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// decodeMessage decodes one JSON-RPC frame as the SDK's
// [jsonrpc.DecodeMessage] does (FuzzFilterFrames holds the two together)
// with the standard library's decoder: the SDK's allocates a 32 KiB
// buffer for each value it decodes, which made up a third of what a
// step_done call allocated (docs/mcp.md, "Performance"). Members are
// matched by their exact names, as the SDK's decoder does (the standard
// library's struct decoding would also take "ID" for "id"); the last of a
// repeated member counts.
func decodeMessage(frame []byte) (jsonrpc.Message, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(frame, &m); err != nil {
		return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
	}
	var version string
	if v, ok := m["jsonrpc"]; ok && !isNull(v) {
		if err := json.Unmarshal(v, &version); err != nil {
			return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
		}
	}
	if version != "2.0" {
		return nil, fmt.Errorf("invalid message version tag %q; expected %q", version, "2.0")
	}
	var rawID any
	if v, ok := m["id"]; ok {
		if err := json.Unmarshal(v, &rawID); err != nil {
			return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
		}
	}
	id, err := jsonrpc.MakeID(rawID)
	if err != nil {
		return nil, err
	}
	if v, ok := m["method"]; ok {
		var method string
		if err := json.Unmarshal(v, &method); err != nil {
			return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
		}
		return &jsonrpc.Request{ID: id, Method: method, Params: m["params"]}, nil
	}
	if !id.IsValid() {
		return nil, errors.New("JSON RPC invalid request")
	}
	resp := &jsonrpc.Response{ID: id, Result: m["result"]}
	if v, ok := m["error"]; ok && !isNull(v) {
		werr, err := decodeWireError(v)
		if err != nil {
			return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
		}
		resp.Error = werr
	}
	return resp, nil
}

// isNull reports a JSON null.
func isNull(v json.RawMessage) bool { return string(v) == "null" }

// decodeWireError decodes a response's error member, by exact member
// names as decodeMessage does.
func decodeWireError(v json.RawMessage) (*jsonrpc.Error, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(v, &m); err != nil {
		return nil, err
	}
	var werr jsonrpc.Error
	if c, ok := m["code"]; ok && !isNull(c) {
		if err := json.Unmarshal(c, &werr.Code); err != nil {
			return nil, err
		}
	}
	if msg, ok := m["message"]; ok && !isNull(msg) {
		if err := json.Unmarshal(msg, &werr.Message); err != nil {
			return nil, err
		}
	}
	werr.Data = m["data"]
	return &werr, nil
}
