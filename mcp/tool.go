package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// toolMeta is what a model reads about a tool besides its schemas.
type toolMeta struct {
	name  string
	title string
	// description says what the tool is for, when to call it, what comes
	// back, and gives a one-line example.
	description string
	// statuses are the statuses of a successful answer ("error" is added).
	statuses []string
	// readOnly: the tool changes nothing. idempotent: repeating the call
	// with the same arguments has no further effect. destructive: the
	// tool may discard or end something (a run, state after a checkpoint).
	readOnly, idempotent, destructive bool
}

// advancingTools may advance a run into the steps that cause effects
// (evaluate commands, engine fanouts and their pre_merge commands, judged
// ensures): every call that decides a step, a gate or a revert, or takes
// over a run's pending work. Their annotations follow the server's policy
// (annotations). Listed in one place so that a new tool is checked
// against it (TestAnnotationsFollowPolicy).
var advancingTools = map[string]bool{
	"stratum_plan": true, "stratum_step_done": true, "stratum_gate_resolve": true,
	"stratum_resume": true, "stratum_revert": true,
	// They start agents themselves.
	"stratum_flow_run_bg": true, "stratum_agent_run": true,
}

// guardEvidenceTools check guard predicates: commands when the guard
// allows them, the judge.
var guardEvidenceTools = map[string]bool{"stratum_guard_transition": true}

// annotations are a tool's hints as the server's policy makes them true
// (docs/policy.md, "What the annotations say"): a tool that may run a
// command or start an agent is neither read-only, nor idempotent, nor
// non-destructive, nor closed-world; one that may ask the judge is not
// closed-world.
func (s *server) annotations(m toolMeta) *sdk.ToolAnnotations {
	readOnly, idempotent, destructive, openWorld := m.readOnly, m.idempotent, m.destructive, false
	advances, guarded := advancingTools[m.name], guardEvidenceTools[m.name]
	if advances && (s.effects.Commands || s.effects.Agents) || guarded && s.effects.GuardCommands {
		readOnly, idempotent, destructive, openWorld = false, false, true, true
	}
	if (advances || guarded) && s.effects.Judge {
		openWorld = true
	}
	return &sdk.ToolAnnotations{
		Title:           m.title,
		ReadOnlyHint:    readOnly,
		IdempotentHint:  idempotent,
		DestructiveHint: &destructive,
		OpenWorldHint:   &openWorld,
	}
}

// tool is one registered tool: its advertised definition, the inference
// of its schemas and the function that adds it to a server.
type tool struct {
	def *sdk.Tool
	// infer computes the input schema and the closed output schema (every
	// object refusing undeclared properties: what an answer may contain,
	// field by field) from the Go types. The advertised output schema is
	// the same with objects left open (see advertisedOutput).
	infer func() (in, out *jsonschema.Schema)
	// input is the check of the arguments (nil for a tool that decodes
	// its own: newToolDecoding).
	input func() (*inputCheck, error)
	// serve is the handler: the SDK's (add), and the one direct calls
	// make (direct.go).
	serve sdk.ToolHandler
}

// add registers the tool with srv.
func (t tool) add(srv *sdk.Server) { srv.AddTool(t.def, t.serve) }

// handler is a tool's logic: it returns the success payload or an error
// that errorBody maps to the wire.
type handler[In, Out any] func(ctx context.Context, c *call, in In) (*Out, error)

// call gives a handler access to the raw arguments. The SDK validates the
// arguments and decodes them into In after a round trip through a Go map,
// which sorts object keys and turns numbers into float64; values that are
// passed on to the engine (a spec, an input, a step output) are taken from
// the raw arguments instead, exactly as the client wrote them.
type call struct {
	args json.RawMessage
	// session is the client's session (nil in tests that call a handler
	// directly).
	session *sdk.ServerSession
	// objects memoises the decoded objects on the way to each path
	// (keyed by the path so far), so several raw reads parse the
	// arguments once.
	objects map[string]map[string]json.RawMessage
	// progress, set when the client asked for progress, sends it one
	// progress notification with a message (progress.go).
	progress func(msg string)
}

// raw returns the raw JSON at a path of object keys, or nil when absent
// or null.
func (c *call) raw(path ...string) json.RawMessage {
	cur := c.args
	for i, k := range path {
		key := strings.Join(path[:i], "\x00")
		m, ok := c.objects[key]
		if !ok {
			if err := json.Unmarshal(cur, &m); err != nil {
				return nil
			}
			if c.objects == nil {
				c.objects = map[string]map[string]json.RawMessage{}
			}
			c.objects[key] = m
		}
		v, ok := m[k]
		if !ok {
			return nil
		}
		cur = v
	}
	cur = bytes.TrimSpace(cur)
	if len(cur) == 0 || string(cur) == "null" {
		return nil
	}
	return cur
}

// payload is a tool's answer, already encoded: the structured content,
// and the same bytes as the text content.
type payload []byte

func (p payload) MarshalJSON() ([]byte, error) { return p, nil }

// newTool builds a tool from its metadata and handler. Schema problems
// panic: they are programming errors, caught by any test that builds the
// server.
//
// The tool is registered with the SDK's untyped AddTool: the typed one
// resolves every schema when the tool is added (tens of milliseconds for
// the whole surface, paid at every server start) and validates every
// answer against the output schema (paid at every call). Here the input
// schema is resolved at a tool's first call, and answers are checked
// against the closed output schema by the tests instead.
func newTool[In, Out any](s *server, m toolMeta, h handler[In, Out]) tool {
	resolveInput := sync.OnceValues(func() (*inputCheck, error) {
		schema := mustInfer(reflect.TypeFor[In](), s.schemas())
		rs, err := schema.Resolve(nil)
		if err != nil {
			return nil, err
		}
		quick, _ := compileQuick(schema)
		return &inputCheck{full: rs, quick: quick}, nil
	})
	t := newToolDecoding(s, m, func(args json.RawMessage) (In, error) { return decodeArgs[In](args, resolveInput) }, h)
	t.input = resolveInput
	return t
}

// newToolDecoding is newTool with the arguments decoded by decode instead
// of the input schema (for a package that owns its own strict decoding).
func newToolDecoding[In, Out any](s *server, m toolMeta, decode func(json.RawMessage) (In, error), h handler[In, Out]) tool {
	infer := func() (in, out *jsonschema.Schema) {
		return refineLooseArgs(mustInfer(reflect.TypeFor[In](), s.schemas())), outputSchema[Out](s.schemas(), m)
	}
	// The advertised schemas come from the generated cache (schemas.go)
	// when it has them, else from inference.
	var inSchema, outSchema any
	if c, ok := s.cachedSchemas(m.name); ok {
		inSchema, outSchema = c.Input, c.Output
	} else {
		in, out := infer()
		inSchema, outSchema = in, advertisedOutput(out)
	}
	def := &sdk.Tool{
		Name:         m.name,
		Title:        m.title,
		Description:  m.description,
		InputSchema:  inSchema,
		OutputSchema: outSchema,
		Annotations:  s.annotations(m),
	}
	log := s.log
	serve := func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		start := time.Now()
		args := req.Params.Arguments
		var v any
		failed := true
		warm.run(func() {
			if in, err := decode(args); err != nil {
				v = envelope(errorBody(m.name, err))
			} else {
				c := &call{args: args, session: req.Session}
				stop := s.startProgress(ctx, req, c, m.name)
				v, failed = invoke(ctx, log, m.name, c, in, h)
				stop()
			}
		})
		b, err := encode(v)
		if err != nil {
			log.Error("encode result", "tool", m.name, "err", err)
			v, failed = envelope(&ErrorBody{Code: CodeInternal, Message: fmt.Sprintf("%s: encode result: %v", m.name, err)}), true
			b, _ = encode(v) // an envelope of strings always encodes
		}
		if log.Enabled(ctx, slog.LevelDebug) {
			log.Debug("tool call", "tool", m.name, "isError", failed, "elapsed", time.Since(start), "bytes", len(b))
		}
		return &sdk.CallToolResult{
			IsError:           failed,
			Content:           []sdk.Content{&sdk.TextContent{Text: string(b)}},
			StructuredContent: payload(b),
		}, nil
	}
	return tool{
		def:   def,
		infer: infer,
		serve: serve,
	}
}

// outputSchema is the closed output schema of a tool: Out's, with the
// status enum, the error object of refusals, and only status required
// (a refusal has status and error alone).
func outputSchema[Out any](ts map[reflect.Type]*jsonschema.Schema, m toolMeta) *jsonschema.Schema {
	out := mustInfer(reflect.TypeFor[Out](), ts)
	if out.Type != "object" || out.Properties["status"] == nil {
		panic(fmt.Sprintf("mcp: %s: output %v must be an object with a status", m.name, reflect.TypeFor[Out]()))
	}
	out.Properties["status"].Enum = nil
	for _, st := range append(append([]string{}, m.statuses...), statusError) {
		out.Properties["status"].Enum = append(out.Properties["status"].Enum, st)
	}
	out.Properties["error"] = mustInfer(reflect.TypeFor[*ErrorBody](), ts)
	out.Properties["error"].Description = "why the call was refused (status error)"
	out.PropertyOrder = append(out.PropertyOrder, "error")
	out.Required = []string{"status"}
	return out
}

// inputCheck is a tool's input schema, resolved for the validator, and
// compiled for the quick check where it can be (nil otherwise).
type inputCheck struct {
	full  *jsonschema.Resolved
	quick *quickSchema
}

// validate checks v against the schema: arguments the quick check knows
// valid pass at once, the others are judged (and explained) by the
// validator.
func (c *inputCheck) validate(v *any) error {
	if c.quick != nil && c.quick.valid(*v) {
		return nil
	}
	return c.full.Validate(v)
}

// decodeArgs checks the arguments against the tool's input schema and
// decodes them. Absent arguments are an empty object.
func decodeArgs[In any](args json.RawMessage, schema func() (*inputCheck, error)) (In, error) {
	var in In
	if len(bytes.TrimSpace(args)) == 0 || string(bytes.TrimSpace(args)) == "null" {
		args = json.RawMessage("{}")
	}
	var v any
	if err := json.Unmarshal(args, &v); err != nil {
		return in, argErrorf("the arguments are not valid JSON (%v): send one JSON object of the tool's parameters", err)
	}
	if _, ok := v.(map[string]any); !ok {
		return in, argErrorf("the arguments must be a JSON object of the tool's parameters, not %s", jsonKind(args))
	}
	check, err := schema()
	if err != nil {
		return in, fmt.Errorf("input schema: %w", err)
	}
	if err := check.validate(&v); err != nil {
		if msg := explainArgs(check.full.Schema(), v); msg != "" {
			return in, argErrorf("%s", msg)
		}
		param, msg := schemaProblem(err)
		return in, argErrorf("%s: %s (see the tool's input schema)", param, msg)
	}
	if err := json.Unmarshal(args, &in); err != nil {
		return in, argErrorf("the arguments do not fit the tool's input schema: %v", err)
	}
	return in, nil
}

// invoke runs a handler, turning an error or a panic into an error
// envelope: whatever a handler does, the server answers and keeps serving.
func invoke[In, Out any](ctx context.Context, log *slog.Logger, name string, c *call, in In, h handler[In, Out]) (v any, failed bool) {
	defer func() {
		if r := recover(); r != nil {
			log.Error("tool panicked", "tool", name, "panic", r, "stack", string(debug.Stack()))
			v, failed = envelope(&ErrorBody{Code: CodeInternal, Message: fmt.Sprintf("internal error in %s: %v", name, r)}), true
		}
	}()
	out, err := h(ctx, c, in)
	if err != nil {
		b := errorBody(name, err)
		if b.Code == CodeInternal {
			log.Error("tool failed", "tool", name, "err", err)
		}
		return envelope(b), true
	}
	if out == nil {
		return envelope(&ErrorBody{Code: CodeInternal, Message: name + ": no result"}), true
	}
	return out, false
}

func envelope(b *ErrorBody) *errorEnvelope {
	return &errorEnvelope{Status: statusError, Error: b}
}

// encode is compact JSON without HTML escaping: a model reads it, and
// "\u003e=" in an ensure expression is harder to read than ">=".
func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	// Values with their own marshaller (engine types) arrive escaped by
	// json.Marshal; the encoder keeps their bytes as they are.
	return unescapeHTML(bytes.TrimRight(buf.Bytes(), "\n")), nil
}

// unescapeHTML replaces the escapes json.Marshal writes for <, > and &
// by the characters themselves. In valid JSON every backslash starts an
// escape sequence, so walking escape by escape never misreads an escaped
// backslash followed by "u003c" as an escape of '<'.
func unescapeHTML(b []byte) []byte {
	if !bytes.Contains(b, []byte(`\u00`)) {
		return b
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 >= len(b) {
			out = append(out, b[i])
			continue
		}
		if b[i+1] == 'u' && i+5 < len(b) {
			switch string(b[i+2 : i+6]) {
			case "003c", "003C":
				out, i = append(out, '<'), i+5
				continue
			case "003e", "003E":
				out, i = append(out, '>'), i+5
				continue
			case "0026":
				out, i = append(out, '&'), i+5
				continue
			}
		}
		out = append(out, b[i], b[i+1])
		i++
	}
	return out
}

// schemaProblem turns a schema validator's error, a chain such as
// "validating root: validating /properties/result: validating
// /properties/result/properties/usage: unexpected additional properties
// [\"dispatches\"]", into the argument it concerns ("result.usage") and what
// is wrong with it, so that a model reads the parameter name it sent rather
// than schema pointers.
func schemaProblem(err error) (param, msg string) {
	param, msg = "arguments", err.Error()
	for {
		rest, ok := strings.CutPrefix(msg, "validating ")
		if !ok {
			return param, msg
		}
		ptr, tail, ok := strings.Cut(rest, ": ")
		if !ok {
			return param, msg
		}
		if p := schemaPointerPath(ptr); p != "" {
			param = p
		}
		msg = tail
	}
}

// schemaPointerPath maps a JSON pointer into an input schema
// ("/properties/result/properties/usage") to the argument path it checks
// ("result.usage"); "" for the root.
func schemaPointerPath(ptr string) string {
	var path []string
	segs := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	for i := 0; i < len(segs); i++ {
		switch segs[i] {
		case "properties":
			if i+1 < len(segs) {
				i++
				path = append(path, strings.NewReplacer("~1", "/", "~0", "~").Replace(segs[i]))
			}
		case "items", "additionalProperties":
			if len(path) > 0 {
				path[len(path)-1] += "[]"
			}
		}
	}
	return strings.Join(path, ".")
}
