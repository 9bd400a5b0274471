package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// streamSession is a client of a server over a stream transport, one
// line at a time: through the SDK's dispatch (srv.Run) or with direct
// calls (serveStream).
type streamSession struct {
	t      *testing.T
	in     *io.PipeWriter
	out    *bufio.Reader
	conn   *streamConn
	served chan error
}

func startStream(t *testing.T, srv *sdk.Server, direct bool) *streamSession {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	tr, _ := newStreamTransport(inR, outW, nil, MaxFrameBytes, defaultGateLimits)
	s := &streamSession{t: t, in: inW, out: bufio.NewReader(outR), conn: tr.conn, served: make(chan error, 1)}
	go func() {
		var err error
		if direct {
			err = serveStream(context.Background(), srv, tr)
		} else {
			err = srv.Run(context.Background(), tr)
		}
		outW.Close()
		s.served <- err
	}()
	t.Cleanup(func() {
		inW.Close()
		select {
		case <-s.served:
		case <-time.After(30 * time.Second):
			t.Error("the server did not stop at the end of its input")
		}
	})
	return s
}

func (s *streamSession) send(line string) {
	s.t.Helper()
	if _, err := io.WriteString(s.in, line+"\n"); err != nil {
		s.t.Fatalf("write %s: %v", line, err)
	}
}

// read returns the next line the server writes, failing the test when
// none comes within 30 s.
func (s *streamSession) read() string {
	s.t.Helper()
	type read struct {
		line string
		err  error
	}
	got := make(chan read, 1)
	go func() {
		line, err := s.out.ReadString('\n')
		got <- read{line, err}
	}()
	select {
	case r := <-got:
		if r.err != nil {
			s.t.Fatalf("read: %v", r.err)
		}
		return r.line
	case <-time.After(30 * time.Second):
		s.t.Fatal("no answer within 30 s")
		return ""
	}
}

func (s *streamSession) roundTrip(line string) string {
	s.t.Helper()
	s.send(line)
	return s.read()
}

func (s *streamSession) initialize() { s.initializeAs("2025-06-18") }

// initializeAs makes the handshake asking for the given protocol version.
func (s *streamSession) initializeAs(version string) {
	s.t.Helper()
	if a := s.roundTrip(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + version + `","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`); !strings.Contains(a, `"id":0,"result"`) {
		s.t.Fatalf("initialize %s: %s", version, a)
	}
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// parityCase is a tools/call's params, whether a direct call answers
// it, and what its answer holds ("" for nothing in particular).
type parityCase struct {
	name, params string
	direct       bool
	want         string
}

// checkParity sends each case's call through the SDK's dispatch and with
// direct calls: the answers must be the same bytes, hold what the case
// wants, and come directly exactly when the case says.
func checkParity(t *testing.T, label string, viaSDK, direct *streamSession, cases []parityCase) {
	t.Helper()
	for i, c := range cases {
		served := direct.directServed()
		frame := toolCall(10+i, c.params)
		a, b := viaSDK.roundTrip(frame), direct.roundTrip(frame)
		if a != b {
			t.Errorf("%s, %s: the answers differ\nSDK:    %s\ndirect: %s", label, c.name, a, b)
		}
		if !strings.Contains(b, c.want) {
			t.Errorf("%s, %s: no %s in %s", label, c.name, c.want, b)
		}
		if got := direct.directServed() > served; got != c.direct {
			t.Errorf("%s, %s: answered directly %v, want %v (%s)", label, c.name, got, c.direct, b)
		}
	}
}

func (s *streamSession) directServed() int64 {
	if s.conn.direct == nil {
		return 0
	}
	return s.conn.direct.served.Load()
}

// callsInProgress is how many direct calls have started and not ended.
func (s *streamSession) callsInProgress() int {
	d := s.conn.direct
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.cancels)
}

func toolCall(id int, params string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}`, id, params)
}

// TestDirectCallsAnswerAsTheSDK sends the same frames to one server
// through the SDK's dispatch and with direct calls: every answer is the
// same bytes, the plain calls of its tools are answered directly, and
// everything else (a call before initialize, an unknown tool, params with
// _meta, arguments that are not an object) goes to the SDK.
func TestDirectCallsAnswerAsTheSDK(t *testing.T) {
	f := newFixture(t)
	srv, err := buildServer(Deps{Engine: f.eng, Guard: f.guard, Version: "test"}, true)
	if err != nil {
		t.Fatal(err)
	}
	viaSDK, direct := startStream(t, srv, false), startStream(t, srv, true)
	args := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	spec := readExample(t, "quickstart.stratum.yaml")
	before := toolCall(1, `{"name":"stratum_validate","arguments":{"spec":"version: 1"}}`)
	if a, b := viaSDK.roundTrip(before), direct.roundTrip(before); a != b || !strings.Contains(a, "initialization") {
		t.Fatalf("a call before initialize:\nSDK:    %s\ndirect: %s", a, b)
	}
	if n := direct.directServed(); n != 0 {
		t.Fatalf("%d calls before initialize were answered directly", n)
	}
	viaSDK.initialize()
	direct.initialize()

	checkParity(t, "2025-06-18", viaSDK, direct, []parityCase{
		{"a valid spec", `{"name":"stratum_validate","arguments":` + args(map[string]any{"spec": spec}) + `}`, true, ""},
		{"an invalid spec whose errors quote <, > and &", `{"name":"stratum_validate","arguments":` + args(map[string]any{"spec": spec + "\n\"a<b>&c\": 1\n"}) + `}`, true, ""},
		{"arguments before name", `{"arguments":{"runId":"00000000-0000-4000-8000-000000000000","stepId":"s","dispatchToken":"x","result":{"output":{}}},"name":"stratum_step_done"}`, true, ""},
		{"arguments against the schema", `{"name":"stratum_step_done","arguments":{"runId":7}}`, true, ""},
		{"no arguments", `{"name":"stratum_gates"}`, true, ""},
		{"an unknown tool", `{"name":"no_such_tool","arguments":{}}`, false, ""},
		{"a progress token", `{"name":"stratum_gates","arguments":{},"_meta":{"progressToken":"p1"}}`, false, ""},
		{"a host's own _meta (Claude Code's tool-use id)", `{"name":"stratum_gates","arguments":{},"_meta":{"claudecode/toolUseId":"toolu_01"}}`, true, ""},
		{"a protocol key in _meta", `{"name":"stratum_gates","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}}`, false, ""},
		{"a _meta that is null", `{"name":"stratum_gates","arguments":{},"_meta":null}`, false, ""},
		{"arguments that are a list", `{"name":"stratum_gates","arguments":[1]}`, false, ""},
		{"a name that is a number", `{"name":5,"arguments":{}}`, false, ""},
		{"a repeated name", `{"name":"stratum_validate","name":"stratum_gates","arguments":{}}`, false, ""},
		{"params that are null", `null`, false, ""},
	})

	// A string id is echoed as it came.
	frame := `{"jsonrpc":"2.0","id":"s-1","method":"tools/call","params":{"name":"stratum_gates","arguments":{}}}`
	if a, b := viaSDK.roundTrip(frame), direct.roundTrip(frame); a != b || !strings.Contains(b, `"id":"s-1"`) {
		t.Errorf("a string id:\nSDK:    %s\ndirect: %s", a, b)
	}

	// A session of protocol 2026-07-28: the SDK marks every result
	// complete, and names itself in the result of a call that names its
	// protocol (as the SDK's own client does on every call).
	newSDK, newDirect := startStream(t, srv, false), startStream(t, srv, true)
	newSDK.initializeAs("2026-07-28")
	newDirect.initializeAs("2026-07-28")
	const (
		version = `"io.modelcontextprotocol/protocolVersion":"2026-07-28"`
		caps    = `"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true}}`
		info    = `"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"}`
	)
	checkParity(t, "2026-07-28", newSDK, newDirect, []parityCase{
		{"a plain call", `{"name":"stratum_gates","arguments":{}}`, true, `"resultType":"complete"}}`},
		{"a call that names its protocol", `{"name":"stratum_gates","arguments":{},"_meta":{` + version + `,` + caps + `,` + info + `}}`, true, `/serverInfo":{"name":"stratum"`},
		{"without client info", `{"name":"stratum_gates","arguments":{},"_meta":{` + version + `,` + caps + `}}`, true, `"resultType":"complete"}}`},
		{"with a host's own key", `{"name":"stratum_gates","arguments":{},"_meta":{"claudecode/toolUseId":"toolu_01",` + version + `,` + caps + `}}`, true, `"resultType":"complete"}}`},
		{"a result that is an error", `{"name":"stratum_step_done","arguments":{"runId":7},"_meta":{` + version + `,` + caps + `}}`, true, `"isError":true`},
		{"without client capabilities", `{"name":"stratum_gates","arguments":{},"_meta":{` + version + `}}`, false, `clientCapabilities`},
		{"client info that is null", `{"name":"stratum_gates","arguments":{},"_meta":{` + version + `,` + caps + `,"io.modelcontextprotocol/clientInfo":null}}`, false, `clientInfo`},
		{"client info of another shape", `{"name":"stratum_gates","arguments":{},"_meta":{` + version + `,` + caps + `,"io.modelcontextprotocol/clientInfo":{"name":5}}}`, false, `clientInfo`},
		{"capabilities that are a string", `{"name":"stratum_gates","arguments":{},"_meta":{` + version + `,"io.modelcontextprotocol/clientCapabilities":"all"}}`, false, `clientCapabilities`},
		{"another protocol version", `{"name":"stratum_gates","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01",` + caps + `}}`, false, `unsupported protocol version`},
		{"a log level", `{"name":"stratum_gates","arguments":{},"_meta":{` + version + `,` + caps + `,"io.modelcontextprotocol/logLevel":"debug"}}`, false, `"resultType":"complete"`},
		{"an unknown tool", `{"name":"no_such_tool","arguments":{},"_meta":{` + version + `,` + caps + `}}`, false, `unknown tool`},
	})

	// A session initialized with a version the server does not know: the
	// SDK marks its results by that version, and refuses a call naming it.
	futureSDK, futureDirect := startStream(t, srv, false), startStream(t, srv, true)
	futureSDK.initializeAs("2099-01-01")
	futureDirect.initializeAs("2099-01-01")
	checkParity(t, "2099-01-01", futureSDK, futureDirect, []parityCase{
		{"a plain call", `{"name":"stratum_gates","arguments":{}}`, true, `"resultType":"complete"}}`},
		{"a call naming the version", `{"name":"stratum_gates","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01",` + caps + `}}`, false, `unsupported protocol version`},
	})

	// A run driven to its end through direct calls.
	plan := direct.roundTrip(toolCall(100, `{"name":"stratum_plan","arguments":`+args(map[string]any{"spec": spec, "input": map[string]any{"topic": "x"}})+`}`))
	var ans lineAnswer
	if err := json.Unmarshal([]byte(plan), &ans); err != nil || ans.Result.StructuredContent.Status != "ready" {
		t.Fatalf("plan: %v %s", err, plan)
	}
	if n := direct.directServed(); n < 6 {
		t.Fatalf("only %d calls answered directly", n)
	}
}

// TestDirectCallsServeTheSDKClient drives a run to its end with the Go
// SDK's own client, which negotiates protocol 2026-07-28 and names it in
// every call's _meta: its calls are answered directly, and it reads
// every answer as the SDK's.
func TestDirectCallsServeTheSDKClient(t *testing.T) {
	f := newFixture(t)
	srv, err := buildServer(Deps{Engine: f.eng, Guard: f.guard, Version: "test"}, true)
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	tr, _ := newStreamTransport(inR, outW, nil, MaxFrameBytes, defaultGateLimits)
	served := make(chan error, 1)
	go func() {
		served <- serveStream(context.Background(), srv, tr)
		outW.Close()
	}()
	ctx := context.Background()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "0"}, nil).
		Connect(ctx, &sdk.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v := cs.InitializeResult().ProtocolVersion; v < firstMarkedProtocol {
		t.Fatalf("the SDK's client negotiated %s; this test is of %s and later", v, firstMarkedProtocol)
	}
	call := func(name string, args map[string]any) runAnswer {
		t.Helper()
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
		if err != nil || res.IsError || res.NeedsInput() {
			t.Fatalf("%s: %v %+v", name, err, res)
		}
		var a runAnswer
		data, err := json.Marshal(res.StructuredContent)
		if err == nil {
			err = json.Unmarshal(data, &a)
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return a
	}
	a := call("stratum_plan", map[string]any{"spec": linearN(3), "input": map[string]any{}})
	runID, calls := a.RunID, int64(1)
	for a.Status == "ready" {
		step := a.Ready[0]
		a = call("stratum_step_done", map[string]any{"runId": runID, "stepId": step.ID, "dispatchToken": step.DispatchToken,
			"result": map[string]any{"output": map[string]any{"v": "done"}}})
		calls++
	}
	if a.Status != "completed" {
		t.Fatalf("the run ended %q", a.Status)
	}
	if n := tr.conn.direct.served.Load(); n != calls {
		t.Errorf("%d of the client's %d calls were answered directly", n, calls)
	}
	cs.Close()
	if err := <-served; err != nil {
		t.Errorf("serve: %v", err)
	}
}

// blockingServer has one tool, wait, that returns only when its call's
// context is done, saying so.
func blockingServer() *sdk.Server {
	srv := sdk.NewServer(&sdk.Implementation{Name: "blocking", Version: "0"}, nil)
	started := func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		<-ctx.Done()
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "stopped: " + ctx.Err().Error()}}}, nil
	}
	now := func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "done"}}}, nil
	}
	var rootsChanged atomic.Bool
	roots := func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		text := "stale"
		if rootsChanged.Load() {
			text = "fresh"
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}}, nil
	}
	slow := func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		time.Sleep(300 * time.Millisecond)
		slowEnded.Store(ctx.Err() == nil)
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "slow"}}}, nil
	}
	tools := map[string]sdk.ToolHandler{"wait": started, "now": now, "roots": roots, "slow": slow}
	for name, h := range tools {
		srv.AddTool(&sdk.Tool{Name: name, InputSchema: map[string]any{"type": "object"}}, h)
	}
	registerDirect(srv, &directTools{serve: tools, rootsChanged: func(*sdk.ServerSession) { rootsChanged.Store(true) }})
	return srv
}

// slowEnded is set by blockingServer's slow tool when it returns with its
// context not cancelled.
var slowEnded atomic.Bool

// TestDirectCallsSeeTheRootsChangeBeforeThem: a call behind a
// notifications/roots/list_changed runs once the change is applied.
func TestDirectCallsSeeTheRootsChangeBeforeThem(t *testing.T) {
	s := startStream(t, blockingServer(), true)
	s.initialize()
	s.send(`{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`)
	if a := s.roundTrip(toolCall(1, `{"name":"roots","arguments":{}}`)); !strings.Contains(a, "fresh") || s.directServed() != 1 {
		t.Fatalf("a call after the roots changed (answered directly: %d): %s", s.directServed(), a)
	}
}

// TestDirectCallsFinishWhenTheSessionEnds: a session ended by its
// context (a signal) lets a direct call in progress finish uncancelled,
// and ServeStream returns only then, as the SDK waits for its handlers;
// nothing is written once the connection is closed.
func TestDirectCallsFinishWhenTheSessionEnds(t *testing.T) {
	srv := blockingServer()
	inR, inW := io.Pipe()
	defer inW.Close()
	outR, outW := io.Pipe()
	tr, _ := newStreamTransport(inR, outW, nil, MaxFrameBytes, defaultGateLimits)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- serveStream(ctx, srv, tr)
		outW.Close()
	}()
	s := &streamSession{t: t, in: inW, out: bufio.NewReader(outR), conn: tr.conn}
	s.initialize()
	slowEnded.Store(false)
	s.send(toolCall(1, `{"name":"slow","arguments":{}}`))
	waitFor(t, func() bool { return s.callsInProgress() == 1 })
	cancel()
	if err := <-served; err != context.Canceled {
		t.Fatalf("serve: %v", err)
	}
	if !slowEnded.Load() {
		t.Fatal("ServeStream returned before the call in progress ended, or the call was cancelled")
	}
	if line, err := s.out.ReadString('\n'); err != io.EOF {
		t.Fatalf("after the end of the session: %q, %v", line, err)
	}
}

// TestDirectCallsAreCancelled: a notifications/cancelled cancels a
// direct call's context as the SDK cancels its own calls', and the
// answer each writes then is the same. The call's id was used a moment
// before by a call already answered, which must not take the new call's
// registration with it.
func TestDirectCallsAreCancelled(t *testing.T) {
	srv := blockingServer()
	var answers []string
	for _, direct := range []bool{false, true} {
		s := startStream(t, srv, direct)
		s.initialize()
		now := `{"jsonrpc":"2.0","id":"w","method":"tools/call","params":{"name":"now","arguments":{}}}`
		if a := s.roundTrip(now); !strings.Contains(a, "done") {
			t.Fatalf("now: %s", a)
		}
		s.send(`{"jsonrpc":"2.0","id":"w","method":"tools/call","params":{"name":"wait","arguments":{}}}`)
		if direct {
			waitFor(t, func() bool { return s.callsInProgress() == 1 })
		} else {
			time.Sleep(50 * time.Millisecond) // the SDK's call has started
		}
		s.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"w","reason":"test"}}`)
		answers = append(answers, s.read())
		if direct && s.directServed() != 2 {
			t.Errorf("the call was not answered directly: %s", answers[1])
		}
	}
	if answers[0] != answers[1] || !strings.Contains(answers[0], "stopped: context canceled") {
		t.Fatalf("answers after a cancellation:\nSDK:    %s\ndirect: %s", answers[0], answers[1])
	}
}

// TestDirectCallsDrainAtTheEnd: the end of the input waits for a direct
// call still running, whose answer is written before the server stops.
func TestDirectCallsDrainAtTheEnd(t *testing.T) {
	f := newFixture(t)
	srv, err := buildServer(Deps{Engine: f.eng, Version: "test"}, true)
	if err != nil {
		t.Fatal(err)
	}
	s := startStream(t, srv, true)
	s.initialize()
	spec := readExample(t, "quickstart.stratum.yaml")
	b, _ := json.Marshal(map[string]any{"spec": spec})
	for i := range 5 {
		s.send(toolCall(i+1, `{"name":"stratum_validate","arguments":`+string(b)+`}`))
	}
	s.in.Close()
	for i := range 5 {
		if a := s.read(); !strings.Contains(a, `"result"`) {
			t.Fatalf("answer %d: %s", i+1, a)
		}
	}
	if err := <-s.served; err != nil {
		t.Fatalf("serve: %v", err)
	}
	s.served <- nil // for the cleanup
	if n := s.directServed(); n != 5 {
		t.Fatalf("%d of 5 calls answered directly", n)
	}
}

// TestDirectCallsEndTheSessionWhenAnAnswerCannotBeWritten: as when the
// SDK fails to write, the session ends rather than serving calls whose
// answers go nowhere.
func TestDirectCallsEndTheSessionWhenAnAnswerCannotBeWritten(t *testing.T) {
	inR, inW := io.Pipe()
	defer inW.Close()
	outR, outW := io.Pipe()
	tr, _ := newStreamTransport(inR, outW, nil, MaxFrameBytes, defaultGateLimits)
	served := make(chan error, 1)
	go func() { served <- serveStream(context.Background(), blockingServer(), tr) }()
	s := &streamSession{t: t, in: inW, out: bufio.NewReader(outR), conn: tr.conn}
	s.initialize()
	outR.Close() // the client stops reading: every write fails
	s.send(toolCall(1, `{"name":"now","arguments":{}}`))
	select {
	case <-served:
	case <-time.After(10 * time.Second):
		t.Fatal("the session goes on after an answer could not be written")
	}
	if s.directServed() != 1 {
		t.Fatalf("the call was not answered directly")
	}
}

// TestDirectAnswerRefusesInputRequests: a result asking for input is
// marked by the SDK in a way a direct answer does not copy, so it is an
// error rather than an answer unlike the SDK's.
func TestDirectAnswerRefusesInputRequests(t *testing.T) {
	res := &sdk.CallToolResult{InputRequests: sdk.InputRequestMap{}}
	id, err := jsonrpc.MakeID(float64(1))
	if err != nil {
		t.Fatal(err)
	}
	for _, marks := range []answerMarks{{}, {complete: true}} {
		if data, err := encodeToolAnswer(id, res, nil, marks); err == nil {
			t.Errorf("marks %+v: answered %s", marks, data)
		}
	}
}
