package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxFrameBytes bounds one inbound JSON-RPC frame (one line). A spec is at
// most 4 MiB of text; JSON-escaped it grows at most threefold (a two-byte
// character sent as \u00XX, as clients that escape all non-ASCII do), so
// 16 MiB holds the largest spec with 4 MiB to spare for the rest of the
// call.
const MaxFrameBytes = 16 << 20

// MaxDepth bounds how deep a frame nests (objects and arrays): the SDK's
// own decoder refuses deeper input, and the transport says so with the
// frame's id rather than the SDK's bare decoding error.
const MaxDepth = 1000

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
// any input and bounds the memory a client can make it hold
// (docs/mcp.md, "Limits and backpressure"):
//
//   - The SDK's own stream transport ends the session at the first frame
//     it cannot decode. Here every line is checked first; a line that is
//     not one JSON-RPC message (broken JSON, a batch, a line over
//     [MaxFrameBytes], nesting over [MaxDepth], an id the SDK would
//     change) is answered with a JSON-RPC error and dropped, and the
//     server keeps serving. The error carries the frame's own id whenever
//     a scan of its top-level object finds one, so the client is not left
//     waiting.
//   - At most [MaxInFlight] requests ([MaxInFlightBytes] of them) are
//     handed to the SDK before their answers are written; the next ones
//     wait, and past a few MiB of waiting input the transport stops
//     reading, so a client that writes without reading blocks instead of
//     growing the server.
//   - The end of the input is passed on only once every request read
//     before it has been answered (within drainTimeout): the SDK drops the
//     answers of calls still running when its input ends, so
//     `stratum mcp < requests` would otherwise lose them.
func NewStreamTransport(r io.Reader, w io.Writer, log *slog.Logger) sdk.Transport {
	t, _ := newStreamTransport(r, w, log, MaxFrameBytes, defaultGateLimits)
	return t
}

func newStreamTransport(r io.Reader, w io.Writer, log *slog.Logger, limit int, l gateLimits) (*streamTransport, *gate) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	g := newGate(l)
	out := &frameWriter{w: w, gate: g}
	go func() {
		g.end(filterFrames(r, g, out, limit, log))
	}()
	return &streamTransport{conn: &streamConn{gate: g, out: out, log: log}}, g
}

// streamTransport is the [sdk.Transport] of [NewStreamTransport]: one
// connection, whose messages the filter has already decoded, so the SDK
// reads each frame as the filter checked it, without decoding it again
// or a goroutine between the two.
type streamTransport struct {
	mu        sync.Mutex
	conn      *streamConn
	connected bool
}

// Connect implements [sdk.Transport]. A stream carries one session.
func (t *streamTransport) Connect(context.Context) (sdk.Connection, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.connected {
		return nil, errors.New("mcp: the stream transport is already connected")
	}
	t.connected = true
	return t.conn, nil
}

// streamConn is the [sdk.Connection] over the gate (what the SDK reads)
// and the frame writer (what it writes).
type streamConn struct {
	gate    *gate
	out     *frameWriter
	log     *slog.Logger
	drained sync.Once
	// direct, when set (ServeStream), answers the plain tool calls
	// itself (direct.go).
	direct *directCalls
}

// Read implements [sdk.Connection]: the next message the gate passes on.
// At a clean end of the input it first waits (within drainTimeout) for
// the answers of the requests already passed on, since the SDK drops the
// answers of calls still running when its input ends.
func (c *streamConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, ok := c.gate.next(ctx)
		if !ok {
			break
		}
		if c.direct == nil {
			return msg, nil
		}
		if c.takeDirect(msg) {
			continue
		}
		c.direct.passing(msg)
		return msg, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ended, err := c.gate.inputEnded()
	if !ended {
		return nil, io.EOF // the connection is closed
	}
	if err != nil {
		if c.direct != nil {
			c.direct.stop() // as the SDK cancels its calls when its input breaks
		}
		return nil, err
	}
	c.drained.Do(func() {
		if !c.gate.drain(drainTimeout) {
			c.log.Warn("input ended with requests still unanswered", "waited", drainTimeout)
		}
	})
	return nil, io.EOF
}

// Write implements [sdk.Connection]: one message, one frame, written
// whole; the gate is told of each answer.
func (c *streamConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("mcp: encoding a message: %w", err)
	}
	var answers any
	if r, ok := msg.(*jsonrpc.Response); ok && r.ID.IsValid() {
		answers = r.ID.Raw()
	}
	return c.out.writeAnswer(append(data, '\n'), answers)
}

// Close implements [sdk.Connection]: nothing more is passed on, and the
// filter stops reading.
func (c *streamConn) Close() error {
	c.gate.close()
	if c.direct != nil {
		c.direct.close()
	}
	return nil
}

// SessionID implements [sdk.Connection]: a stream has no session id.
func (c *streamConn) SessionID() string { return "" }

// frameWriter serialises whole frames from the SDK and the filter, and
// tells the gate of each answer the SDK writes.
type frameWriter struct {
	mu   sync.Mutex
	w    io.Writer
	gate *gate
}

// writeAnswer writes one frame of the SDK's; answers is the id of the
// request it answers (nil for none).
func (f *frameWriter) writeAnswer(p []byte, answers any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, err := f.w.Write(p)
	if answers != nil {
		f.gate.answered(answers) // under mu: see settle
	}
	return err
}

// settle waits for a write in progress: once it returns, every answer the
// client could have read has been noted by the gate.
func (f *frameWriter) settle() {
	f.mu.Lock()
	f.mu.Unlock() //nolint:staticcheck // an empty critical section is the point
}

// writeFrame writes a frame of the filter's own (an answer to a frame the
// SDK never sees, so the gate is not told).
func (f *frameWriter) writeFrame(p []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.w.Write(p)
}

// filterFrames reads r line by line and passes on, through g, exactly the
// lines that decode as one JSON-RPC message the SDK reads as sent; it
// answers the others on out. Lines longer than limit bytes are dropped
// without being buffered (their id is still looked for as they stream
// past). It returns nil at the end of r, or when the SDK side is gone.
func filterFrames(r io.Reader, g *gate, out *frameWriter, limit int, log *slog.Logger) error {
	br := bufio.NewReaderSize(r, 64<<10)
	// The pieces of the current line, copied out of br; joined once at its
	// end, into a buffer of exactly its size (growing one buffer as the
	// line arrives would allocate several times the line).
	var pieces [][]byte
	scan := &frameScanner{}
	size, tooLong := 0, false
	for {
		chunk, err := br.ReadSlice('\n')
		// The line's end is not JSON whitespace here: `"id":3` cut off at
		// the end of a line must not read as the id 3.
		scan.feed(bytes.TrimRight(chunk, "\r\n"))
		size += len(chunk)
		content := size // the line without its newline
		if err == nil {
			content--
		}
		switch {
		case content > limit:
			tooLong, pieces = true, nil
		case !tooLong:
			pieces = append(pieces, bytes.Clone(chunk))
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		atEOF := err != nil
		ok := true
		if tooLong {
			log.Warn("dropped an over-long frame", "limit", limit, "id", string(scan.answerID()))
			if !scan.isResponse() {
				writeError(out, scan.answerID(), rpcInvalidRequest,
					fmt.Sprintf("invalid request: the message is over the limit of %d bytes per message (docs/mcp.md, limits)", limit),
					map[string]any{"maxFrameBytes": limit})
			}
		} else if frame := bytes.TrimSpace(join(pieces, size)); len(frame) > 0 {
			ok = pass(frame, scan, g, out, log)
			handOff(g)
		}
		pieces, size, tooLong = nil, 0, false
		*scan = frameScanner{buf: scan.buf[:0]}
		if atEOF || !ok {
			return nil
		}
	}
}

// handOff lets the reader a frame just woke run on this goroutine's
// processor before the filter reads on. Woken, the reader is queued to
// run next here, but the filter's next read blocks in a system call with
// that queue held, so the reader waits for another thread to wake and
// take it: about 45 µs a request on a two-core VM, against 20 µs when the
// filter yields first (docs/mcp.md, "Performance").
func handOff(g *gate) {
	if g.handedOff() {
		runtime.Gosched()
	}
}

// join concatenates the pieces of a line of size bytes.
func join(pieces [][]byte, size int) []byte {
	if len(pieces) == 1 {
		return pieces[0]
	}
	line := make([]byte, 0, size)
	for _, p := range pieces {
		line = append(line, p...)
	}
	return line
}

// pass checks one whole frame and either hands it to g or answers it. It
// returns false when the SDK side is gone.
func pass(frame []byte, scan *frameScanner, g *gate, out *frameWriter, log *slog.Logger) bool {
	m, rej := checkFrame(frame, scan)
	if rej != nil {
		log.Warn("dropped a malformed frame", "reason", rej.msg, "bytes", len(frame), "answers", len(rej.ids))
		rej.write(out)
		return true
	}
	size := len(frame) + 1 // with its newline, as the limits count it
	req, ok := m.(*jsonrpc.Request)
	switch {
	case !ok: // a response to a call of the server's
		g.pushUrgent(m)
		return true
	case req.ID.IsValid():
		id := req.ID.Raw()
		if g.inUse(id) {
			out.settle() // the client may have read its answer a moment ago
		}
		if g.inUse(id) {
			echo, _ := json.Marshal(id)
			log.Warn("refused a request whose id is in use", "id", string(echo))
			writeError(out, echo, rpcInvalidRequest, "invalid request: a request with this id is still in progress; use a new id for each request", nil)
			return true
		}
		return g.push(m, size, id)
	case req.Method == "notifications/cancelled":
		if id, ok := cancelledID(req); ok && g.cancelHeld(id) {
			return true // never passed on, so never answered
		}
		g.pushUrgent(m)
		return true
	default:
		return g.push(m, size, nil)
	}
}

// cancelledID is the id of the request a notifications/cancelled names
// (its raw form, as the gate and direct calls key requests).
func cancelledID(req *jsonrpc.Request) (any, bool) {
	var params struct {
		RequestID any `json:"requestId"`
	}
	if json.Unmarshal(req.Params, &params) != nil {
		return nil, false
	}
	id, err := jsonrpc.MakeID(params.RequestID)
	if err != nil || !id.IsValid() {
		return nil, false
	}
	return id.Raw(), true
}

// rejection is the answer to a frame that is not passed on: an error
// per id (one null id for a frame without a usable one; none for a frame
// never to be answered), as a batch when the frame was one.
type rejection struct {
	ids   []json.RawMessage
	batch bool
	code  int
	msg   string
	data  any
}

func (r *rejection) write(out *frameWriter) {
	if len(r.ids) == 0 {
		return
	}
	if !r.batch {
		writeError(out, r.ids[0], r.code, r.msg, r.data)
		return
	}
	answers := make([]json.RawMessage, len(r.ids))
	for i, id := range r.ids {
		answers[i] = errorFrame(id, r.code, r.msg, r.data)
	}
	b, _ := json.Marshal(answers)
	out.writeFrame(append(b, '\n'))
}

// checkFrame decodes a whole frame (scanned into scan) as one JSON-RPC
// message the SDK can read as sent, or says how to answer it.
func checkFrame(frame []byte, scan *frameScanner) (jsonrpc.Message, *rejection) {
	refuse := func(code int, msg string, data any) *rejection {
		r := &rejection{code: code, msg: msg, data: data, ids: []json.RawMessage{scan.answerID()}}
		if scan.isResponse() {
			r.ids = nil // a response is never answered
		}
		return r
	}
	if scan.maxDepth > MaxDepth {
		return nil, refuse(rpcInvalidRequest, fmt.Sprintf("invalid request: the message nests deeper than %d levels", MaxDepth), map[string]any{"maxDepth": MaxDepth})
	}
	if !json.Valid(frame) {
		return nil, refuse(rpcParseError, "parse error: the line is not one JSON value", nil)
	}
	switch frame[0] {
	case '{':
	case '[':
		return nil, refuseBatch(frame)
	default:
		return nil, refuse(rpcInvalidRequest, "invalid request: a message must be a JSON-RPC object", nil)
	}
	if p := scan.idProblem(); p != "" {
		return nil, refuse(rpcInvalidRequest, "invalid request: "+p, nil)
	}
	m, err := decodeMessage(frame)
	if err != nil {
		return nil, refuse(rpcInvalidRequest, "invalid request: "+err.Error(), nil)
	}
	return m, nil
}

// refuseBatch answers a batch (valid JSON, nesting within MaxDepth): each
// request in it gets an error with its id, in one batch answer; a batch
// of notifications gets none; an empty one gets one error (JSON-RPC 2.0).
func refuseBatch(frame []byte) *rejection {
	const msg = "invalid request: batches are not supported; send one JSON-RPC message per line"
	var elems []json.RawMessage
	if json.Unmarshal(frame, &elems) != nil || len(elems) == 0 {
		return &rejection{ids: []json.RawMessage{nil}, code: rpcInvalidRequest, msg: "invalid request: an empty batch"}
	}
	r := &rejection{batch: true, code: rpcInvalidRequest, msg: msg}
	for _, e := range elems {
		s := scanFrame(e)
		if s.top == '{' && (s.isResponse() || s.idCount == 0 || s.idKind == 'n') {
			continue // a response or a notification
		}
		r.ids = append(r.ids, s.answerID()) // null for an element that is no object
	}
	return r
}

// errorFrame is a JSON-RPC error response (id nil: null).
func errorFrame(id json.RawMessage, code int, msg string, data any) json.RawMessage {
	if id == nil {
		id = json.RawMessage("null")
	}
	type rpcError struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Data    any    `json:"data,omitempty"`
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   rpcError        `json:"error"`
	}{"2.0", id, rpcError{code, msg, data}})
	return b
}

// writeError writes a JSON-RPC error response.
func writeError(out *frameWriter, id json.RawMessage, code int, msg string, data any) {
	out.writeFrame(append(errorFrame(id, code, msg, data), '\n'))
}
