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
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxFrameBytes bounds one inbound JSON-RPC frame (one line). It leaves
// room for the largest spec the validator accepts, JSON-escaped.
const MaxFrameBytes = 16 << 20

// JSON-RPC error codes the stream filter answers with.
const (
	rpcParseError     = jsonrpc.CodeParseError
	rpcInvalidRequest = jsonrpc.CodeInvalidRequest
)

// drainTimeout bounds how long the end of the input waits for the answers
// of requests still in progress.
const drainTimeout = 2 * time.Minute

// NewStreamTransport returns a transport over a newline-delimited
// JSON-RPC byte stream (stdin and stdout for `stratum mcp`) that survives
// any input. The SDK's own stream transport ends the session at the first
// frame it cannot decode, which would let one malformed line from a
// client kill the server; here every line is checked first, and a line
// that is not one JSON-RPC message (broken JSON, a batch, an over-long
// line) is answered with a JSON-RPC error and dropped, and the server
// keeps serving.
//
// The end of the input is passed on only once every request read before
// it has been answered (within drainTimeout): the SDK drops the answers
// of calls still running when its input ends, so `stratum mcp < requests`
// would otherwise lose them.
func NewStreamTransport(r io.Reader, w io.Writer, log *slog.Logger) sdk.Transport {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	pending := newPending()
	out := &frameWriter{w: w, pending: pending}
	pr, pw := io.Pipe()
	go func() {
		err := filterFrames(r, pw, out, MaxFrameBytes, log, pending.track)
		if err == nil && !pending.drain(drainTimeout) {
			log.Warn("input ended with requests still unanswered", "waited", drainTimeout)
		}
		pw.CloseWithError(err) // nil: the SDK sees io.EOF
	}()
	// The filter bounds frames, so the SDK's own bound is switched off.
	return &sdk.IOTransport{Reader: pr, Writer: out, MaxLineLength: -1}
}

// frameWriter serialises whole frames from the SDK and the filter (the
// SDK writes each message with one Write call) and notes each response
// the SDK sends.
type frameWriter struct {
	mu      sync.Mutex
	w       io.Writer
	pending *pending
}

func (f *frameWriter) Write(p []byte) (int, error) {
	f.mu.Lock()
	n, err := f.w.Write(p)
	f.mu.Unlock()
	if id, ok := responseID(p); ok && f.pending != nil {
		f.pending.done(id)
	}
	return n, err
}

// responseID reads the id of a response frame from its head. The SDK
// writes the keys in a fixed order (jsonrpc, id, then method for a
// request or result/error for a response), so the first few tokens
// decide it without decoding the result.
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

// pending is the set of requests read but not yet answered, by id.
type pending struct {
	mu  sync.Mutex
	ids map[any]bool
}

func newPending() *pending { return &pending{ids: map[any]bool{}} }

func (p *pending) add(id any) {
	p.mu.Lock()
	p.ids[id] = true
	p.mu.Unlock()
}

func (p *pending) done(id any) {
	p.mu.Lock()
	delete(p.ids, id)
	p.mu.Unlock()
}

// drain waits until every pending request is answered; false on timeout.
func (p *pending) drain(timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for {
		p.mu.Lock()
		n := len(p.ids)
		p.mu.Unlock()
		if n == 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// track notes a request passed on to the SDK (and forgets one the client
// cancels: a cancelled request gets no answer).
func (p *pending) track(msg jsonrpc.Message) {
	req, ok := msg.(*jsonrpc.Request)
	switch {
	case !ok:
	case req.ID.IsValid():
		p.add(req.ID.Raw())
	case req.Method == "notifications/cancelled":
		var params struct {
			RequestID any `json:"requestId"`
		}
		if json.Unmarshal(req.Params, &params) == nil {
			if id, err := jsonrpc.MakeID(params.RequestID); err == nil && id.IsValid() {
				p.done(id.Raw())
			}
		}
	}
}

func (f *frameWriter) Close() error { return nil }

// filterFrames copies r to w line by line, passing on exactly the lines
// that decode as one JSON-RPC message and answering the others on out.
// Lines longer than limit bytes are dropped without being buffered. Each
// message passed on is shown to track first. It returns nil at the end
// of r.
func filterFrames(r io.Reader, w io.Writer, out io.Writer, limit int, log *slog.Logger, track func(jsonrpc.Message)) error {
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
			m, id, code, msg := checkFrame(frame)
			if m == nil {
				log.Warn("dropped a malformed frame", "reason", msg, "bytes", len(frame))
				reject(out, id, code, msg)
			} else {
				track(m)
				if _, err := w.Write(append(frame, '\n')); err != nil {
					return nil // the session is over
				}
			}
		}
		line, tooLong = line[:0], false
		if atEOF {
			return nil
		}
	}
}

// checkFrame decodes a frame as one JSON-RPC message the SDK can read.
// When it is not one, the message is nil and checkFrame returns the
// request id to answer (nil when there is none), a JSON-RPC error code
// and a message.
func checkFrame(frame []byte) (m jsonrpc.Message, id json.RawMessage, code int, msg string) {
	if !json.Valid(frame) {
		return nil, nil, rpcParseError, "parse error: the line is not one JSON value"
	}
	if frame[0] != '{' {
		return nil, nil, rpcInvalidRequest, "invalid request: send one JSON-RPC message object per line (batches are not supported)"
	}
	m, err := jsonrpc.DecodeMessage(frame)
	if err == nil {
		return m, nil, 0, ""
	}
	var probe struct {
		ID json.RawMessage `json:"id"`
	}
	_ = json.Unmarshal(frame, &probe) // a valid JSON object: cannot fail
	if len(probe.ID) > 0 && (probe.ID[0] == '"' || probe.ID[0] == '-' || (probe.ID[0] >= '0' && probe.ID[0] <= '9')) {
		id = probe.ID
	}
	return nil, id, rpcInvalidRequest, "invalid request: " + err.Error()
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
