package mcp

import (
	"context"
	"encoding/json"
	"flag"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/guard"
	"github.com/stratum-go/stratum/store"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// fixture is an in-process server over a fresh state root, with a client
// connected through the SDK's in-memory transports.
type fixture struct {
	t      *testing.T
	root   string
	eng    *engine.Engine
	guard  *guard.Guard
	cs     *sdk.ClientSession
	strict map[string]*jsonschema.Resolved
}

type fixtureOpts struct {
	noCache     bool   // infer every schema instead of serving schemas.json
	protocol    string // protocol version to pin; "" negotiates the newest
	engine      engine.Options
	lockTimeout time.Duration // the store's run lock timeout; 0: default
}

func newFixture(t *testing.T) *fixture { return newFixtureWith(t, fixtureOpts{}) }

func newFixtureWith(t *testing.T, o fixtureOpts) *fixture {
	t.Helper()
	root := filepath.Join(t.TempDir(), "flows")
	st, err := store.NewFileStore(root, &store.Options{LockTimeout: o.lockTimeout})
	if err != nil {
		t.Fatal(err)
	}
	if o.engine.Workspace.Default == "" {
		o.engine.Workspace.Default = t.TempDir()
	}
	eng := engine.New(st, o.engine)
	t.Cleanup(eng.Close)
	// Workspaces are t.TempDir()s: allow the temp directory (the default
	// would be this package's directory).
	g, err := guard.New(guard.Options{Root: filepath.Join(t.TempDir(), "guards"), Getenv: func(string) string { return "" }, AllowedRoots: []string{os.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, root: root, eng: eng, guard: g}
	f.cs = f.connect(o.protocol, !o.noCache)
	f.strict = strictSchemas(t, eng, g)
	return f
}

// connect starts a server session over the fixture's engine and returns a
// connected client.
func (f *fixture) connect(protocol string, useCache bool) *sdk.ClientSession {
	f.t.Helper()
	log := slog.New(slog.NewTextHandler(testWriter{f.t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv, err := buildServer(Deps{Engine: f.eng, Guard: f.guard, Version: "test", Logger: log}, useCache)
	if err != nil {
		f.t.Fatal(err)
	}
	ctx := context.Background()
	st, ct := sdk.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	var copts *sdk.ClientSessionOptions
	if protocol != "" {
		copts = &sdk.ClientSessionOptions{ProtocolVersion: protocol}
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "0"}, nil).Connect(ctx, ct, copts)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { cs.Close(); ss.Wait() })
	return cs
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// strictSchemas resolves the closed output schema of every tool.
func strictSchemas(t *testing.T, eng *engine.Engine, g *guard.Guard) map[string]*jsonschema.Resolved {
	t.Helper()
	s := newServer(eng, slog.New(slog.DiscardHandler))
	s.guard = g
	out := map[string]*jsonschema.Resolved{}
	for _, tl := range s.tools() {
		_, closed := tl.infer()
		r, err := closed.Resolve(nil)
		if err != nil {
			t.Fatalf("%s: resolve strict output schema: %v", tl.def.Name, err)
		}
		out[tl.def.Name] = r
	}
	// The run state inside an error (error.state) is advertised as a plain
	// object; the tests hold it to engine.Response's closed schema.
	rs, err := mustInfer(reflect.TypeFor[engine.Response](), typeSchemas()).Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	out[stateSchemaKey] = rs
	return out
}

const stateSchemaKey = "(error.state)"

// result is a decoded tool answer.
type result struct {
	IsError bool
	Body    map[string]any
	Text    string
}

func (r result) status() string { s, _ := r.Body["status"].(string); return s }

// errorCode is error.code of a refusal ("" for a success).
func (r result) errorCode() string {
	e, _ := r.Body["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

// call calls a tool and checks the answer's invariants: the text content
// is the structured content's JSON, the answer validates against the
// tool's closed output schema, isError is set exactly for status error.
func (f *fixture) call(name string, args any) result {
	f.t.Helper()
	return checkedCall(f.t, f.cs, f.strict, name, args)
}

func checkedCall(t *testing.T, cs *sdk.ClientSession, strict map[string]*jsonschema.Resolved, name string, args any) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error: %v", name, err)
	}
	return checkResult(t, strict, name, res)
}

func checkResult(t *testing.T, strict map[string]*jsonschema.Resolved, name string, res *sdk.CallToolResult) result {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("%s: %d content items, want 1", name, len(res.Content))
	}
	tc, ok := res.Content[0].(*sdk.TextContent)
	if !ok {
		t.Fatalf("%s: content is %T, want text", name, res.Content[0])
	}
	var fromText map[string]any
	if err := json.Unmarshal([]byte(tc.Text), &fromText); err != nil {
		t.Fatalf("%s: text content is not JSON: %v\n%s", name, err, tc.Text)
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var body map[string]any
	if err := json.Unmarshal(b, &body); err != nil {
		t.Fatalf("%s: structured content is not an object: %s", name, b)
	}
	tb, _ := json.Marshal(fromText)
	if string(tb) != string(b) {
		t.Errorf("%s: text content differs from structured content:\ntext:       %s\nstructured: %s", name, tb, b)
	}
	if r := strict[name]; r != nil {
		var v any = body
		if err := r.Validate(&v); err != nil {
			t.Errorf("%s: answer does not match the closed output schema: %v\n%s", name, err, b)
		}
	}
	st, _ := body["status"].(string)
	if (st == statusError) != res.IsError {
		t.Errorf("%s: status %q with isError=%v", name, st, res.IsError)
	}
	if st == statusError {
		e, _ := body["error"].(map[string]any)
		if c, _ := e["code"].(string); c == "" {
			t.Errorf("%s: error without a code: %s", name, b)
		}
		if m, _ := e["message"].(string); m == "" {
			t.Errorf("%s: error without a message: %s", name, b)
		}
		if state, ok := e["state"]; ok && strict[stateSchemaKey] != nil {
			if err := strict[stateSchemaKey].Validate(&state); err != nil {
				t.Errorf("%s: error.state does not match engine.Response's closed schema: %v\n%s", name, err, b)
			}
		}
	}
	return result{IsError: res.IsError, Body: body, Text: tc.Text}
}

// mustStatus fails the test unless the answer has the given status.
func (r result) mustStatus(t *testing.T, want string) result {
	t.Helper()
	if got := r.status(); got != want {
		t.Fatalf("status %q, want %q:\n%s", got, want, r.Text)
	}
	return r
}

// mustError fails the test unless the answer is a refusal with the code.
func (r result) mustError(t *testing.T, code string) result {
	t.Helper()
	r.mustStatus(t, statusError)
	if got := r.errorCode(); got != code {
		t.Fatalf("error code %q, want %q:\n%s", got, code, r.Text)
	}
	return r
}

// readExample reads a file of the repository's examples/.
func readExample(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "examples", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
