package mcp

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/stratum-go/stratum/engine"
)

// Schemas are inferred from the Go structs of each tool (property names
// from json tags, descriptions from jsonschema tags). typeSchemas replaces
// the inference for the types whose JSON is not what their Go fields say
// (custom marshallers, free-form JSON) and for the few named argument
// types that carry an enum or a union.

// specArg is the spec parameter: YAML text or a JSON object.
type specArg any

// objectArg is a free-form JSON object parameter (an entry input).
type objectArg any

// anyArg is any JSON value (a step output).
type anyArg any

// decisionArg is a gate decision.
type decisionArg string

// amountArg is a reported amount (usage usd, tokens, ms): what the engine
// accepts, a number from 0 to 1e15, or null when not known
// (docs/engine.md, "Limits").
type amountArg float64

// durationArg is a reported duration in milliseconds, within the same
// bounds (not null).
type durationArg float64

// nameArg is a non-empty name (a model, an effort).
type nameArg string

// maxAmount is the engine's bound on one reported amount.
const maxAmount = 1e15

// typeSchemas returns the schema overrides. It panics on a broken
// documentation struct: that is a programming error caught by any test
// that builds the server.
func typeSchemas() map[reflect.Type]*jsonschema.Schema {
	anyJSON := anyJSONSchema()
	ready := readyEntrySchema()
	return map[reflect.Type]*jsonschema.Schema{
		// A Go field of type any (the guard's free-form request and ledger
		// fields) is any JSON value too.
		reflect.TypeFor[any]():       anyJSON,
		reflect.TypeFor[specArg]():   {Types: []string{"string", "object"}},
		reflect.TypeFor[objectArg](): {Type: "object"},
		reflect.TypeFor[anyArg]():    anyJSON,
		reflect.TypeFor[decisionArg](): {Type: "string",
			Enum: []any{engine.DecisionApprove, engine.DecisionRevise, engine.DecisionKill}},
		reflect.TypeFor[amountArg]():         {Types: []string{"null", "number"}, Minimum: ptr(0.0), Maximum: ptr(maxAmount)},
		reflect.TypeFor[durationArg]():       {Type: "number", Minimum: ptr(0.0), Maximum: ptr(maxAmount)},
		reflect.TypeFor[nameArg]():           {Type: "string", MinLength: ptr(1)},
		reflect.TypeFor[json.RawMessage]():   anyJSON,
		reflect.TypeFor[engine.Value]():      anyJSON,
		reflect.TypeFor[engine.ReadyEntry](): ready,
		reflect.TypeFor[currentState]():      {Type: "object"},
		// A subflow's steps have the shape of the root's (StepView), a
		// recursion schema inference cannot express.
		reflect.TypeFor[engine.SubflowView](): {Type: "object",
			Description: "a run step's subflow: input, steps (by id, each shaped like a root step's state), rounds"},
	}
}

// readyEntrySchema is the schema of engine.ReadyEntry. Inference promotes
// the fields of its embedded *engine.FanoutItem, which only consumer
// fanout items carry, so they are made optional here.
func readyEntrySchema() *jsonschema.Schema {
	s := mustInfer(reflect.TypeFor[engine.ReadyEntry](), map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[engine.Value](): anyJSONSchema(),
	})
	item := reflect.TypeFor[engine.FanoutItem]()
	itemField := map[string]bool{}
	for i := range item.NumField() {
		name, _, _ := strings.Cut(item.Field(i).Tag.Get("json"), ",")
		itemField[name] = true
	}
	s.Required = slices.DeleteFunc(s.Required, func(n string) bool { return itemField[n] })
	return s
}

// jsonTypes is every JSON type: the explicit type of a property that takes
// any JSON value. A property with no type at all is legal JSON Schema, but
// some clients drop what they cannot type: Codex shows such a property to
// its model as {} without its description (docs/mcp.md, "What a model
// sees"), so every property advertises a type.
var jsonTypes = []string{"object", "array", "string", "number", "boolean", "null"}

func anyJSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{Types: slices.Clone(jsonTypes)}
}

// looseArgSchemas are the advertised schemas of the guard's arguments that
// its request structs take as any JSON (package guard checks them itself,
// with the reference's messages), by argument name. The description of the
// field is kept.
var looseArgSchemas = map[string]func() *jsonschema.Schema{
	"terminal":     stateListSchema,
	"new_terminal": stateListSchema,
	"stakes":       stakesSchema,
	"new_stakes":   stakesSchema,
}

func stateListSchema() *jsonschema.Schema {
	return &jsonschema.Schema{Types: []string{"array", "null"}, Items: &jsonschema.Schema{Type: "string", Description: "a state name"}}
}

func stakesSchema() *jsonschema.Schema {
	return &jsonschema.Schema{Types: []string{"object", "null"}, AdditionalProperties: &jsonschema.Schema{Type: "string",
		Enum: []any{"cheap", "default", "paranoid"}, Description: `the stake of the edge named by the key ("from->to")`}}
}

// refineLooseArgs replaces the any-JSON schema of each top-level argument
// named in looseArgSchemas, and returns s.
func refineLooseArgs(s *jsonschema.Schema) *jsonschema.Schema {
	for name, p := range s.Properties {
		if mk, ok := looseArgSchemas[name]; ok && slices.Equal(p.Types, jsonTypes) {
			r := mk()
			r.Description = p.Description
			s.Properties[name] = r
		}
	}
	return s
}

func ptr[T any](v T) *T { return &v }

func mustInfer(t reflect.Type, overrides map[reflect.Type]*jsonschema.Schema) *jsonschema.Schema {
	s, err := jsonschema.ForType(t, &jsonschema.ForOptions{TypeSchemas: overrides})
	if err != nil {
		panic(fmt.Sprintf("mcp: schema of %v: %v", t, err))
	}
	return s
}

// advertisedOutput turns a tool's closed output schema (freshly inferred)
// into the one it advertises: objects left open (openObjects) and the
// error object summarised. The full error object is the same on every
// tool; spelling it out in each of them would make a fifth of the
// tools/list answer, which every server start pays for.
func advertisedOutput(s *jsonschema.Schema) *jsonschema.Schema {
	s.Properties["error"] = &jsonschema.Schema{
		Types: []string{"null", "object"},
		Description: "why the call was refused (status error): code (e.g. invalid_spec, invalid_input, invalid_arguments, " +
			"run_not_found, stale_token, not_awaiting, run_terminal, run_cancelled, run_locked, checkpoint_not_found, or a guard code) " +
			"and message, plus where they apply: errors (every problem: code, path, line, column, message), " +
			"state (the run's current state, nothing changed), available (checkpoint labels), holderPid, runId, stepId",
		Properties: map[string]*jsonschema.Schema{
			"code":    {Type: "string", Description: "stable error code"},
			"message": {Type: "string", Description: "what went wrong and what to do about it"},
		},
		Required: []string{"code", "message"},
	}
	return openObjects(s)
}

// openObjects changes s (a freshly inferred schema) so that no object
// forbids undeclared properties, and returns it. Output schemas are advertised open, so that a field added
// to an engine response can never turn a valid answer into a protocol
// error; the tests check every response against the closed schema, so a
// field nobody declared still fails a test.
func openObjects(s *jsonschema.Schema) *jsonschema.Schema {
	var walk func(*jsonschema.Schema)
	walk = func(s *jsonschema.Schema) {
		if s == nil {
			return
		}
		if isFalse(s.AdditionalProperties) {
			s.AdditionalProperties = nil
		}
		for _, p := range s.Properties {
			walk(p)
		}
		walk(s.Items)
		walk(s.AdditionalProperties)
	}
	walk(s)
	return s
}

func isFalse(s *jsonschema.Schema) bool {
	return s != nil && s.Not != nil && reflect.ValueOf(*s.Not).IsZero() && onlyNot(s)
}

// onlyNot reports whether s has no keyword but Not.
func onlyNot(s *jsonschema.Schema) bool {
	c := *s
	c.Not = nil
	return reflect.ValueOf(c).IsZero()
}
