package mcp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxFrameBytes bounds one inbound JSON-RPC frame (one line). It leaves
// room for the largest spec the validator accepts, JSON-escaped.
const MaxFrameBytes = 16 << 20

// JSON-RPC error codes the stream filter answers with.
const (
	rpcParseError     = -32700
	rpcInvalidRequest = -32600
)

// NewStreamTransport returns a transport over a newline-delimited
// JSON-RPC byte stream (stdin and stdout for `stratum mcp`) that survives
// any input. The SDK's own stream transport ends the session at the first
// frame it cannot decode, which would let one malformed line from a
// client kill the server; here every line is checked first, and a line
// that is not one JSON-RPC message (broken JSON, a batch, an over-long
// line) is answered with a JSON-RPC error and dropped, and the server
// keeps serving.
func NewStreamTransport(r io.Reader, w io.Writer, log *slog.Logger) sdk.Transport {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	out := &frameWriter{w: w}
	pr, pw := io.Pipe()
	go func() {
		err := filterFrames(r, pw, out, MaxFrameBytes, log)
		pw.CloseWithError(err) // nil: the SDK sees io.EOF
	}()
	// The filter bounds frames, so the SDK's own bound is switched off.
	return &sdk.IOTransport{Reader: pr, Writer: out, MaxLineLength: -1}
}

// frameWriter serialises whole frames from the SDK and the filter. The
// SDK writes each message with one Write call.
type frameWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (f *frameWriter) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.w.Write(p)
}

func (f *frameWriter) Close() error { return nil }

// filterFrames copies r to w line by line, passing on exactly the lines
// that decode as one JSON-RPC message and answering the others on out.
// Lines longer than limit bytes are dropped without being buffered. It
// returns nil at the end of r.
func filterFrames(r io.Reader, w io.Writer, out io.Writer, limit int, log *slog.Logger) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var line []byte
	tooLong := false
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) > limit {
			tooLong, line = true, line[:0]
		} else if !tooLong {
			line = append(line, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		atEOF := err != nil
		if tooLong {
			log.Warn("dropped an over-long frame", "limit", limit)
			reject(out, nil, rpcInvalidRequest, fmt.Sprintf("invalid request: frame longer than %d bytes", limit))
		} else if frame := bytes.TrimSpace(line); len(frame) > 0 {
			if id, code, msg, ok := checkFrame(frame); ok {
				if _, err := w.Write(append(frame, '\n')); err != nil {
					return nil // the session is over
				}
			} else {
				log.Warn("dropped a malformed frame", "reason", msg, "bytes", len(frame))
				reject(out, id, code, msg)
			}
		}
		line, tooLong = line[:0], false
		if atEOF {
			return nil
		}
	}
}

// checkFrame decides whether a frame is one JSON-RPC message the SDK can
// decode. When it is not, it returns the request id to answer (nil when
// there is none), a JSON-RPC error code and a message.
func checkFrame(frame []byte) (id json.RawMessage, code int, msg string, ok bool) {
	if !json.Valid(frame) {
		return nil, rpcParseError, "parse error: the line is not one JSON value", false
	}
	if frame[0] != '{' {
		return nil, rpcInvalidRequest, "invalid request: send one JSON-RPC message object per line (batches are not supported)", false
	}
	var probe struct {
		ID json.RawMessage `json:"id"`
	}
	_ = json.Unmarshal(frame, &probe) // valid JSON object: cannot fail
	if _, err := jsonrpc.DecodeMessage(frame); err != nil {
		if len(probe.ID) > 0 && (probe.ID[0] == '"' || probe.ID[0] == '-' || (probe.ID[0] >= '0' && probe.ID[0] <= '9')) {
			id = probe.ID
		}
		return id, rpcInvalidRequest, "invalid request: " + err.Error(), false
	}
	return nil, 0, "", true
}

// reject writes a JSON-RPC error response.
func reject(out io.Writer, id json.RawMessage, code int, msg string) {
	if id == nil {
		id = json.RawMessage("null")
	}
	b, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: id, Error: struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}{code, msg}})
	if err != nil {
		return
	}
	out.Write(append(b, '\n'))
}
