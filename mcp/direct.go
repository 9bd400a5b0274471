package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"weak"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Direct calls (docs/mcp.md, "Performance"). The SDK dispatches a
// tools/call through two goroutines it starts per request, decodes its
// params twice and hands the answer back through its connection: on a
// step_done that is about a tenth of the server's latency. The stream
// transport of [ServeStream] answers the plain tools/calls of the
// server's own tools itself, with the same handler the SDK would call
// (tool.serve) and the SDK's own encoding of the answer, so the bytes on
// the wire are the same (TestDirectCallsAnswerAsTheSDK). Everything else
// goes to the SDK as before: any other method, a call before the session
// is initialized, a call whose params carry anything but name and
// arguments (a _meta with a progress token, a per-request protocol
// version), an unknown tool name, arguments that are not an object.
// Direct calls pass through the same gate (limits, order, draining at the
// end of the input) and are cancelled by notifications/cancelled as the
// SDK's are.

// directTools are the handlers of a server's tools by name.
type directTools struct {
	serve map[string]sdk.ToolHandler
}

// directTables holds each server's tools for [ServeStream], keyed weakly
// so that a server that is no longer used is not kept alive by it.
var directTables sync.Map // weak.Pointer[sdk.Server] → *directTools

func registerDirect(srv *sdk.Server, d *directTools) {
	key := weak.Make(srv)
	directTables.Store(key, d)
	runtime.AddCleanup(srv, func(k weak.Pointer[sdk.Server]) { directTables.Delete(k) }, key)
}

func directFor(srv *sdk.Server) *directTools {
	d, _ := directTables.Load(weak.Make(srv))
	t, _ := d.(*directTools)
	return t
}

// ServeStream serves srv over a newline-delimited JSON-RPC byte stream
// (stdin and stdout for `stratum mcp`) until the input ends or ctx is
// done, as srv.Run(ctx, NewStreamTransport(r, w, log)) does, and answers
// the plain tool calls of a server made by [NewServer] without the SDK's
// dispatch (direct calls, above).
func ServeStream(ctx context.Context, srv *sdk.Server, r io.Reader, w io.Writer, log *slog.Logger) error {
	t, _ := newStreamTransport(r, w, log, MaxFrameBytes, defaultGateLimits)
	return serveStream(ctx, srv, t)
}

// serveStream is ServeStream over a transport made by newStreamTransport.
func serveStream(ctx context.Context, srv *sdk.Server, t *streamTransport) error {
	if tools := directFor(srv); tools != nil {
		base, stop := context.WithCancel(context.Background())
		t.conn.direct = &directCalls{tools: tools, base: base, stop: stop, cancels: map[any]context.CancelFunc{}}
	}
	ss, err := srv.Connect(ctx, t, nil)
	if err != nil {
		return err
	}
	if t.conn.direct != nil {
		t.conn.direct.session.Store(ss)
	}
	closed := make(chan error, 1)
	go func() { closed <- ss.Wait() }()
	select {
	case <-ctx.Done():
		ss.Close()
		<-closed
		return ctx.Err()
	case err := <-closed:
		return err
	}
}

// directCalls are the direct calls of one connection in progress.
type directCalls struct {
	tools   *directTools
	session atomic.Pointer[sdk.ServerSession]
	// served counts the calls answered directly (for the tests).
	served atomic.Int64

	mu      sync.Mutex
	cancels map[any]context.CancelFunc // by request id
	base    context.Context
	stop    context.CancelFunc
}

// toolCallParams are the params of a tools/call that may be answered
// directly: name and arguments only.
type toolCallParams struct {
	name string
	args json.RawMessage
}

// directParams decodes the params of a tools/call, or reports false for
// params the SDK should judge: anything but a name string and an
// arguments object.
func directParams(raw json.RawMessage) (toolCallParams, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return toolCallParams{}, false
	}
	var p toolCallParams
	for k, v := range m {
		switch k {
		case "name":
			if len(v) == 0 || v[0] != '"' || json.Unmarshal(v, &p.name) != nil {
				return toolCallParams{}, false
			}
		case "arguments":
			if len(v) == 0 || v[0] != '{' {
				return toolCallParams{}, false
			}
			p.args = v
		default:
			return toolCallParams{}, false
		}
	}
	return p, p.name != ""
}

// take answers msg directly when it is a plain call of one of the
// server's tools, and reports whether it did; the answer is written
// (and the gate told) when the call returns.
func (c *streamConn) takeDirect(msg jsonrpc.Message) bool {
	d := c.direct
	req, ok := msg.(*jsonrpc.Request)
	if !ok || req.Method != "tools/call" || !req.ID.IsValid() {
		return false
	}
	ss := d.session.Load()
	if ss == nil || ss.InitializeParams() == nil {
		return false // the SDK answers a call during initialization
	}
	p, ok := directParams(req.Params)
	if !ok {
		return false
	}
	serve, ok := d.tools.serve[p.name]
	if !ok {
		return false
	}
	ctx, cancel, ok := d.begin(req.ID.Raw())
	if !ok {
		return false
	}
	go func() {
		res, err := serve(ctx, &sdk.CallToolRequest{Session: ss, Params: &sdk.CallToolParamsRaw{Name: p.name, Arguments: p.args}})
		// Forgotten before the answer is written: once it is, the client
		// may use the id again, for a call this one must not unregister.
		d.end(req.ID.Raw())
		cancel()
		data, err := encodeToolAnswer(req.ID, res, err)
		if err != nil {
			c.log.Error("encode a direct answer", "tool", p.name, "err", err)
			data, _ = jsonrpc.EncodeMessage(&jsonrpc.Response{ID: req.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}})
		}
		d.served.Add(1)
		c.out.writeAnswer(append(data, '\n'), req.ID.Raw())
	}()
	return true
}

// encodeToolAnswer is the frame the SDK writes for a tool call's result
// (its callTool, jsonrpc2.NewResponse and EncodeMessage): the result
// encoded without HTML escaping, inside the JSON-RPC response.
func encodeToolAnswer(id jsonrpc.ID, res *sdk.CallToolResult, err error) ([]byte, error) {
	if err != nil {
		return jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: err})
	}
	if res == nil {
		return nil, errors.New("a tool handler returned neither a result nor an error")
	}
	if res.Content == nil {
		r := *res
		r.Content = []sdk.Content{} // as the SDK: never "null"
		res = &r
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(res); err != nil {
		return nil, fmt.Errorf("encode the result: %w", err)
	}
	return jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Result: bytes.TrimRight(buf.Bytes(), "\n")})
}

// begin registers a direct call by its id, with a context that a
// cancellation or the end of the connection cancels; false once the
// connection is closed.
func (d *directCalls) begin(id any) (context.Context, context.CancelFunc, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.base.Err() != nil {
		return nil, nil, false
	}
	ctx, cancel := context.WithCancel(d.base)
	d.cancels[id] = cancel
	return ctx, cancel, true
}

func (d *directCalls) end(id any) {
	d.mu.Lock()
	delete(d.cancels, id)
	d.mu.Unlock()
}

// cancelled cancels the direct call a notifications/cancelled names, if
// one is in progress (the SDK, which never saw it, ignores the id).
func (d *directCalls) cancelled(msg jsonrpc.Message) {
	req, ok := msg.(*jsonrpc.Request)
	if !ok || req.Method != "notifications/cancelled" {
		return
	}
	var params struct {
		RequestID any `json:"requestId"`
	}
	if json.Unmarshal(req.Params, &params) != nil {
		return
	}
	id, err := jsonrpc.MakeID(params.RequestID)
	if err != nil || !id.IsValid() {
		return
	}
	d.mu.Lock()
	cancel := d.cancels[id.Raw()]
	d.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}
