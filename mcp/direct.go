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
	"slices"
	"strings"
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
// the wire are the same (TestDirectCallsAnswerAsTheSDK). From protocol
// 2026-07-28 on, that encoding marks the result complete, and a call
// that names its protocol in its _meta (as the SDK's own client does on
// every call) has the server named in the result's _meta ([callMeta]).
// Everything else goes to the SDK as before: any other method; a call
// before the session is initialized; a call whose params hold anything
// but name, arguments and _meta, or one of them twice; a _meta with a
// progress token, or with protocol keys other than a well-formed
// protocol version (the session's own, and one the server supports),
// client info and client capabilities; an unknown tool; arguments that
// are not an object.
// Direct calls pass through the same gate (limits, order, draining at the
// end of the input), are cancelled by notifications/cancelled as the
// SDK's are, and are waited for when the session ends, as the SDK waits
// for its handlers. A change of the
// client's roots is applied before any later call runs, as the SDK
// handles a notification before it starts the calls behind it.

// directTools are the handlers of a server's tools by name, and what the
// server does when a client's roots change (nil: nothing).
type directTools struct {
	serve        map[string]sdk.ToolHandler
	rootsChanged func(*sdk.ServerSession)
	// server is how the server names itself, in the results of calls that
	// name their protocol (nil: such calls go to the SDK), and protocols
	// the versions it supports.
	server    *sdk.Implementation
	protocols []string
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
// dispatch (direct calls, above). srv must be as NewServer made it:
// direct calls do not see middleware added later, nor tools added or
// removed later.
func ServeStream(ctx context.Context, srv *sdk.Server, r io.Reader, w io.Writer, log *slog.Logger) error {
	t, _ := newStreamTransport(r, w, log, MaxFrameBytes, defaultGateLimits)
	return serveStream(ctx, srv, t)
}

// serveStream is ServeStream over a transport made by newStreamTransport.
func serveStream(ctx context.Context, srv *sdk.Server, t *streamTransport) error {
	d := (*directCalls)(nil)
	if tools := directFor(srv); tools != nil {
		// The calls keep ctx's values, not its end: a session ended by ctx
		// lets its calls finish, as the SDK lets its handlers finish.
		base, stop := context.WithCancel(context.WithoutCancel(ctx))
		d = &directCalls{tools: tools, base: base, stop: stop, cancels: map[any]context.CancelFunc{}}
		t.conn.direct = d
	}
	ss, err := srv.Connect(ctx, t, nil)
	if err != nil {
		return err
	}
	if d != nil {
		d.session.Store(ss)
		defer d.running.Wait()
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
	closed  bool                       // the connection is closed: no more calls, no more answers
	base    context.Context
	stop    context.CancelFunc // cancels every call (the input broke, an answer could not be written)
	running sync.WaitGroup     // the calls in progress
}

// toolCallParams are the params of a tools/call that may be answered
// directly: its name, arguments and _meta.
type toolCallParams struct {
	name string
	args json.RawMessage
	meta map[string]any
}

// answerMarks are what the SDK adds to a tool's result for a session
// of protocol 2026-07-28 or later: the result type "complete" for every
// call, and the server's name in the result's _meta for a call that
// names its protocol in its own _meta.
type answerMarks struct {
	complete   bool
	serverInfo *sdk.Implementation
}

// firstMarkedProtocol is the first protocol version whose tool results
// the SDK marks with a result type.
const firstMarkedProtocol = "2026-07-28"

// The protocol's keys of a call's _meta that a direct call accepts, and
// of a result's (the SDK's MetaKey names).
const (
	metaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	metaClientInfo         = "io.modelcontextprotocol/clientInfo"
	metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	metaServerInfo         = "io.modelcontextprotocol/serverInfo"
)

// metaClientCapabilitiesValue is the shape the SDK decodes a call's
// client capabilities into (its clientCapabilitiesV2).
type metaClientCapabilitiesValue struct {
	sdk.ClientCapabilities
	Roots *sdk.RootCapabilities `json:"roots,omitempty"`
}

// callMeta reports whether a call's _meta lets it be answered directly
// in a session of the given protocol, and the server's name when the
// answer must carry it. Allowed: a host's own keys (Claude Code sends
// its tool-use id). Never: a progress token (progress goes through the
// SDK's session). The protocol's keys only in a session of 2026-07-28 or
// later, and only as the SDK's client sends them: the session's own
// protocol version, one the server supports, with client capabilities
// and, optionally, client info, each of a shape the SDK accepts. Any
// other protocol key (a log level), another version or a value the SDK
// might refuse is the SDK's to judge.
func callMeta(m map[string]any, protocol string, tools *directTools) (serverInfo *sdk.Implementation, ok bool) {
	named := false // the call names its protocol
	for k := range m {
		switch {
		case k == "progressToken":
			return nil, false
		case k == metaProtocolVersion || k == metaClientCapabilities || k == metaClientInfo:
			named = true
		case strings.HasPrefix(k, "io.modelcontextprotocol/"):
			return nil, false
		}
	}
	if !named {
		return nil, true
	}
	if protocol < firstMarkedProtocol || tools.server == nil {
		return nil, false
	}
	// The SDK answers a version it does not support with an error, even
	// in a session initialized with it.
	if v, ok := m[metaProtocolVersion].(string); !ok || v != protocol || !slices.Contains(tools.protocols, v) {
		return nil, false
	}
	if !metaValueDecodes(m[metaClientCapabilities], new(metaClientCapabilitiesValue)) {
		return nil, false
	}
	if info, present := m[metaClientInfo]; present && !metaValueDecodes(info, new(sdk.Implementation)) {
		return nil, false
	}
	return tools.server, true
}

// metaValueDecodes reports whether a _meta value decodes into into: an
// object with no key the type does not know and no value of another
// kind. What it accepts, the SDK accepts: the SDK's decoder ignores
// unknown keys, and matches keys by their exact case where this one
// also matches them in another case, so it refuses no more values.
func metaValueDecodes(v any, into any) bool {
	if _, ok := v.(map[string]any); !ok {
		return false
	}
	data, err := json.Marshal(v)
	if err != nil {
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(into) == nil
}

// directParams decodes the params of a tools/call, or reports false for
// params the SDK should judge: anything but a name string, an arguments
// object and a _meta object that [callMeta] allows, each at most once.
// serverInfo is what callMeta says the answer must carry.
func directParams(raw json.RawMessage, protocol string, tools *directTools) (p toolCallParams, serverInfo *sdk.Implementation, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return toolCallParams{}, nil, false
	}
	var seenName, seenArgs, seenMeta bool // the SDK refuses a key twice
	for dec.More() {
		tok, err := dec.Token()
		key, ok := tok.(string)
		var v json.RawMessage
		if err != nil || !ok || dec.Decode(&v) != nil {
			return toolCallParams{}, nil, false
		}
		switch {
		case key == "name" && !seenName && v[0] == '"':
			seenName = json.Unmarshal(v, &p.name) == nil
			ok = seenName
		case key == "arguments" && !seenArgs && v[0] == '{':
			seenArgs, p.args = true, v
		case key == "_meta" && !seenMeta && v[0] == '{':
			seenMeta = json.Unmarshal(v, &p.meta) == nil
			if seenMeta {
				serverInfo, seenMeta = callMeta(p.meta, protocol, tools)
			}
			ok = seenMeta
		default: // another key, one of them twice, or a value of another kind
			ok = false
		}
		if !ok {
			return toolCallParams{}, nil, false
		}
	}
	return p, serverInfo, p.name != ""
}

// takeDirect answers msg directly when it is a plain call of one of the
// server's tools, and reports whether it did; the answer is written
// (and the gate told) when the call returns.
func (c *streamConn) takeDirect(msg jsonrpc.Message) bool {
	d := c.direct
	req, ok := msg.(*jsonrpc.Request)
	if !ok || req.Method != "tools/call" || !req.ID.IsValid() {
		return false
	}
	ss := d.session.Load()
	if ss == nil {
		return false
	}
	init := ss.InitializeParams()
	if init == nil { // the SDK answers a call during initialization
		return false
	}
	p, serverInfo, ok := directParams(req.Params, init.ProtocolVersion, d.tools)
	if !ok {
		return false
	}
	// As the SDK, by the version the client asked for at initialize.
	marks := answerMarks{complete: init.ProtocolVersion >= firstMarkedProtocol, serverInfo: serverInfo}
	serve, ok := d.tools.serve[p.name]
	if !ok {
		return false
	}
	ctx, cancel, ok := d.begin(req.ID.Raw())
	if !ok {
		return false
	}
	go func() {
		defer d.running.Done()
		res, err := serve(ctx, &sdk.CallToolRequest{Session: ss, Params: &sdk.CallToolParamsRaw{Meta: p.meta, Name: p.name, Arguments: p.args}})
		// Forgotten before the answer is written: once it is, the client
		// may use the id again, for a call this one must not unregister.
		d.end(req.ID.Raw())
		cancel()
		data, err := encodeToolAnswer(req.ID, res, err, marks)
		if err != nil {
			c.log.Error("encode a direct answer", "tool", p.name, "err", err)
			data, _ = jsonrpc.EncodeMessage(&jsonrpc.Response{ID: req.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}})
		}
		if !d.answering() {
			return // as the SDK, nothing is written once the connection is closed
		}
		d.served.Add(1)
		if err := c.out.writeAnswer(append(data, '\n'), req.ID.Raw()); err != nil {
			// As the SDK does when a write fails: the calls in progress
			// are cancelled and the session ends.
			c.log.Error("write a direct answer", "tool", p.name, "err", err)
			d.stop()
			go ss.Close()
		}
	}()
	return true
}

// encodeToolAnswer is the frame the SDK writes for a tool call's result
// (its callTool, ServerSession.handle, jsonrpc2.NewResponse and
// EncodeMessage): the result, with the marks of the session's protocol,
// encoded without HTML escaping inside the JSON-RPC response.
func encodeToolAnswer(id jsonrpc.ID, res *sdk.CallToolResult, err error, marks answerMarks) ([]byte, error) {
	if err != nil {
		return jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: err})
	}
	if res == nil {
		return nil, errors.New("a tool handler returned neither a result nor an error")
	}
	if res.InputRequests != nil {
		// The SDK would mark it "input_required", after its result type;
		// no tool of this server asks for input.
		return nil, errors.New("a tool handler asked for input, which a direct call does not answer")
	}
	if res.Content == nil || marks.serverInfo != nil {
		r := *res
		if r.Content == nil {
			r.Content = []sdk.Content{} // as the SDK: never "null"
		}
		if marks.serverInfo != nil {
			if _, named := r.Meta[metaServerInfo]; !named { // as the SDK: the handler's own is kept
				meta := make(sdk.Meta, len(r.Meta)+1)
				for k, v := range r.Meta {
					meta[k] = v
				}
				meta[metaServerInfo] = marks.serverInfo
				r.Meta = meta
			}
		}
		res = &r
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(res); err != nil {
		return nil, fmt.Errorf("encode the result: %w", err)
	}
	result := bytes.TrimRight(buf.Bytes(), "\n")
	if marks.complete {
		// Only the SDK can set the result type. Its encoding writes it after
		// every field of the result but the input requests (refused above),
		// so last, and after at least the content: it is added here where
		// the SDK puts it.
		if len(result) < 2 || result[len(result)-1] != '}' {
			return nil, fmt.Errorf("encode the result: %q is not an object", result)
		}
		result = append(result[:len(result)-1], `,"resultType":"complete"}`...)
	}
	return jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Result: result})
}

// begin registers a direct call by its id, with a context that a
// cancellation or the end of the connection cancels; false once the
// connection is closed.
func (d *directCalls) begin(id any) (context.Context, context.CancelFunc, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed || d.base.Err() != nil {
		return nil, nil, false
	}
	ctx, cancel := context.WithCancel(d.base)
	d.cancels[id] = cancel
	d.running.Add(1)
	return ctx, cancel, true
}

// answering reports whether answers are still written.
func (d *directCalls) answering() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return !d.closed
}

// close notes that the connection is closed: the calls in progress run
// to their end (ServeStream waits for them), unanswered.
func (d *directCalls) close() {
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
}

// passing does what a message on its way to the SDK must do first: a
// cancellation cancels the direct call it names, and a change of the
// client's roots is applied now, before a later call can run directly.
func (d *directCalls) passing(msg jsonrpc.Message) {
	req, ok := msg.(*jsonrpc.Request)
	if !ok {
		return
	}
	switch req.Method {
	case "notifications/cancelled":
		d.cancelled(req)
	case "notifications/roots/list_changed":
		if ss := d.session.Load(); ss != nil && d.tools.rootsChanged != nil {
			d.tools.rootsChanged(ss)
		}
	}
}

func (d *directCalls) end(id any) {
	d.mu.Lock()
	delete(d.cancels, id)
	d.mu.Unlock()
}

// cancelled cancels the direct call a notifications/cancelled names, if
// one is in progress (the SDK, which never saw it, ignores the id).
func (d *directCalls) cancelled(req *jsonrpc.Request) {
	id, ok := cancelledID(req)
	if !ok {
		return
	}
	d.mu.Lock()
	cancel := d.cancels[id]
	d.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}
