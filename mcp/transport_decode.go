package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// decodeMessage decodes one JSON-RPC frame as the SDK's
// [jsonrpc.DecodeMessage] does (FuzzDecodeMessage holds the two together),
// without the SDK's decoder, which allocates a 32 KiB buffer for each
// value it decodes: that made up a third of what a step_done call
// allocated (docs/mcp.md, "Performance"). The frame is valid JSON, an
// object (checkFrame saw to it). Its members are walked in place: those
// of a JSON-RPC message are matched by their exact names, as the SDK's
// decoder does (the standard library's struct decoding would also take
// "ID" for "id"), the last of a repeated member counts, and the others
// are skipped without being kept, so a frame of a million members costs
// no more memory than one of three.
func decodeMessage(frame []byte) (jsonrpc.Message, error) {
	var version, rawID, method, params, result, rpcErr json.RawMessage
	err := eachMember(frame, func(key []byte, v json.RawMessage) {
		switch string(key) {
		case "jsonrpc":
			version = v
		case "id":
			rawID = v
		case "method":
			method = v
		case "params":
			params = v
		case "result":
			result = v
		case "error":
			rpcErr = v
		}
	})
	if err != nil {
		return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
	}
	var tag string
	if err := decodeMember(version, &tag); err != nil {
		return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
	}
	if tag != "2.0" {
		return nil, fmt.Errorf("invalid message version tag %q; expected %q", tag, "2.0")
	}
	var idValue any
	if err := decodeMember(rawID, &idValue); err != nil {
		return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
	}
	id, err := jsonrpc.MakeID(idValue)
	if err != nil {
		return nil, err
	}
	if method != nil {
		var name string
		if err := decodeMember(method, &name); err != nil {
			return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
		}
		return &jsonrpc.Request{ID: id, Method: name, Params: params}, nil
	}
	if !id.IsValid() {
		return nil, errors.New("JSON RPC invalid request")
	}
	resp := &jsonrpc.Response{ID: id, Result: result}
	if rpcErr != nil && !isNull(rpcErr) {
		werr, err := decodeWireError(rpcErr)
		if err != nil {
			return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
		}
		resp.Error = werr
	}
	return resp, nil
}

// decodeWireError decodes a response's error member, by exact member
// names as decodeMessage does.
func decodeWireError(v json.RawMessage) (*jsonrpc.Error, error) {
	if v[0] != '{' {
		return nil, fmt.Errorf("a response's error is %s, not an object", jsonKind(v))
	}
	var code, message, data json.RawMessage
	err := eachMember(v, func(key []byte, v json.RawMessage) {
		switch string(key) {
		case "code":
			code = v
		case "message":
			message = v
		case "data":
			data = v
		}
	})
	if err != nil {
		return nil, err
	}
	var werr jsonrpc.Error
	if err := decodeMember(code, &werr.Code); err != nil {
		return nil, err
	}
	if err := decodeMember(message, &werr.Message); err != nil {
		return nil, err
	}
	werr.Data = data
	return &werr, nil
}

// decodeMember decodes a member's value into v; an absent member or null
// leaves v as it is.
func decodeMember(raw json.RawMessage, v any) error {
	if raw == nil || isNull(raw) {
		return nil
	}
	return json.Unmarshal(raw, v)
}

// isNull reports a JSON null.
func isNull(v json.RawMessage) bool { return string(v) == "null" }

// eachMember calls fn with each member of obj, a valid JSON object, in
// order: its name unescaped and its value's text (both slices of obj, but
// for a name with escapes).
func eachMember(obj []byte, fn func(key []byte, v json.RawMessage)) error {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return fmt.Errorf("not a JSON object")
	}
	i = skipSpace(obj, i+1)
	if i < len(obj) && obj[i] == '}' {
		return nil
	}
	for i < len(obj) {
		end := skipValue(obj, i) // the name: a string
		key, err := memberName(obj[i:end])
		if err != nil {
			return err
		}
		i = skipSpace(obj, end)
		if i >= len(obj) || obj[i] != ':' {
			return fmt.Errorf("malformed object")
		}
		i = skipSpace(obj, i+1)
		end = skipValue(obj, i)
		fn(key, obj[i:end])
		i = skipSpace(obj, end)
		if i >= len(obj) {
			break
		}
		switch obj[i] {
		case ',':
			i = skipSpace(obj, i+1)
		case '}':
			return nil
		default:
			return fmt.Errorf("malformed object")
		}
	}
	return fmt.Errorf("malformed object")
}

// memberName is a member's name from its JSON string text: the text
// between the quotes when it has no escapes (a frame's names, without an
// allocation), decoded when it has. The frame scanner reads its keys with
// it too: a frame of a million members must not cost a decoding each.
func memberName(s []byte) ([]byte, error) {
	if len(s) < 2 || s[0] != '"' {
		return nil, fmt.Errorf("malformed object")
	}
	if bytes.IndexByte(s, '\\') < 0 {
		return s[1 : len(s)-1], nil
	}
	var name string
	err := json.Unmarshal(s, &name)
	return []byte(name), err
}

// skipSpace is the index of the first byte at or after i that is not JSON
// white space.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// skipValue is the index just past the JSON value starting at b[i], in a
// document already known to be valid.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	default: // a number, true, false or null: up to the byte that ends it
		for ; i < len(b); i++ {
			switch b[i] {
			case ',', '}', ']', ' ', '\t', '\r', '\n':
				return i
			}
		}
		return i
	}
}

// skipString is the index just past the string starting at b[i].
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return i
}
