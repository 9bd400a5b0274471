package mcp

import (
	"encoding/json"
	"fmt"
	"reflect"

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

// readyEntryDoc documents engine.ReadyEntry, whose JSON is written by its
// own marshaller (task entries, plus the location of consumer fanout
// items).
type readyEntryDoc struct {
	ID              string           `json:"id" jsonschema:"the step id to report as stepId: a root step, <runStep>/<child> for a subflow task, <fanoutStep>/<index> for a fanout item"`
	Do              string           `json:"do" jsonschema:"the task to do, with every reference filled in"`
	Agent           string           `json:"agent" jsonschema:"the agent the spec intends for this step (claude, codex, ...); informational"`
	Attempt         int              `json:"attempt" jsonschema:"1 for the first attempt, higher on a retry"`
	Epoch           int              `json:"epoch" jsonschema:"how many times a gate revision reset this step"`
	DispatchToken   string           `json:"dispatchToken" jsonschema:"pass it back with stratum_step_done; it changes with every attempt"`
	PreviousFailure *engine.Failure  `json:"previousFailure,omitzero" jsonschema:"why the previous attempt was rejected (or the failure that routed here): fix exactly that"`
	Contract        *engine.Contract `json:"contract" jsonschema:"the output the step must produce: contracts[root] maps each field to its type (T? is optional); null when the step declares no output contract"`
	Flow            string           `json:"flow,omitzero" jsonschema:"fanout item: the flow of the fanout step"`
	Step            string           `json:"step,omitzero" jsonschema:"fanout item: the fanout step"`
	Stage           *int             `json:"stage,omitzero" jsonschema:"fanout item: the stage index"`
	IsFinalStage    *bool            `json:"isFinalStage,omitzero" jsonschema:"fanout item: whether this is the last stage"`
	ItemIndex       *int             `json:"itemIndex,omitzero" jsonschema:"fanout item: the item's index in the fanout's list"`
	Item            any              `json:"item,omitzero" jsonschema:"fanout item: the element being processed"`
	Generation      *int64           `json:"generation,omitzero" jsonschema:"fanout item: enumeration generation"`
	ContractDigest  *string          `json:"contractDigest,omitzero" jsonschema:"fanout item: digest of the contract"`
	Policy          *itemPolicyDoc   `json:"policy,omitzero" jsonschema:"fanout item: how to isolate and merge the item's work"`
	RevisionDigest  string           `json:"revisionDigest,omitzero" jsonschema:"fanout item: the run's spec revision"`
}

type itemPolicyDoc struct {
	Isolation string   `json:"isolation" jsonschema:"none or worktree"`
	Merge     string   `json:"merge" jsonschema:"merge mode"`
	PreMerge  []string `json:"pre_merge" jsonschema:"checks to run before merging"`
}

// typeSchemas returns the schema overrides. It panics on a broken
// documentation struct: that is a programming error caught by any test
// that builds the server.
func typeSchemas() map[reflect.Type]*jsonschema.Schema {
	anyJSON := &jsonschema.Schema{}
	ready := mustInfer(reflect.TypeFor[readyEntryDoc](), nil)
	return map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[specArg]():   {Types: []string{"string", "object"}},
		reflect.TypeFor[objectArg](): {Type: "object"},
		reflect.TypeFor[anyArg]():    anyJSON,
		reflect.TypeFor[decisionArg](): {Type: "string",
			Enum: []any{engine.DecisionApprove, engine.DecisionRevise, engine.DecisionKill}},
		reflect.TypeFor[json.RawMessage]():   anyJSON,
		reflect.TypeFor[engine.Value]():      anyJSON,
		reflect.TypeFor[engine.ReadyEntry](): ready,
		reflect.TypeFor[engine.StepState](): {Type: "object",
			Description: "a step's state: status (pending, ready, running, waiting_gate, succeeded, failed, skipped), attempts (each with result or failure), gateToken while a gate waits, output, spent, fanout items, sub (a subflow's steps)"},
		reflect.TypeFor[currentState](): {Type: "object"},
		reflect.TypeFor[engine.CarryEntry](): {Type: "object",
			Description: "a loop-carried value and where it came from"},
	}
}

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
			"code":    {Type: "string"},
			"message": {Type: "string"},
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
