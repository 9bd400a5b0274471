package cli

import (
	"encoding"
	"encoding/json"
	"reflect"
	"time"

	"github.com/stratum-go/stratum/engine"
)

// jsonField is one exported field of a struct as the audit's hand
// writer knows it: its Go name, its json tag and its type.
type jsonField struct {
	name, tag string
	typ       reflect.Type
}

func field[T any](name, tag string) jsonField {
	return jsonField{name, tag, reflect.TypeFor[T]()}
}

// The fields appendEvent, appendStep, appendAttempt and ledger write, in
// order. A field added to, removed from or changed in these engine types
// makes the audit write that type with encoding/json again (correct,
// slower) and fails TestAuditJSONFields, which says to update this file.
var (
	eventFields = []jsonField{
		field[int64]("Seq", "seq"),
		field[time.Time]("At", "at"),
		field[engine.EventType]("Type", "type"),
		field[string]("StepID", "stepId,omitzero"),
		field[json.RawMessage]("Detail", "detail,omitzero"),
		field[string]("Hash", "hash"),
	}
	stepViewFields = []jsonField{
		field[engine.StepStatus]("Status", "status"),
		field[[]engine.Attempt]("Attempts", "attempts"),
		field[int]("Epoch", "epoch,omitzero"),
		field[string]("DispatchToken", "dispatchToken,omitzero"),
		field[string]("Task", "task,omitzero"),
		field[string]("GateToken", "gateToken,omitzero"),
		field[engine.Decision]("Decision", "decision,omitzero"),
		field[engine.Value]("Output", "output,omitzero"),
		field[*engine.Failure]("Failure", "failure,omitzero"),
		field[*engine.Failure]("Routed", "routed,omitzero"),
		field[*engine.SkipInfo]("Skip", "skip,omitzero"),
		field[int]("Iterations", "iterations,omitzero"),
		field[*engine.FanoutView]("Fanout", "fanout,omitzero"),
		field[*engine.SubflowView]("Sub", "sub,omitzero"),
		field[engine.Ledger]("Spent", "spent"),
		field[*engine.Revision]("Revision", "revision,omitzero"),
		field[*engine.AttemptStart]("Started", "started,omitzero"),
		field[*engine.AttemptStart]("Interrupted", "interrupted,omitzero"),
	}
	attemptFields = []jsonField{
		field[int]("Attempt", "attempt"),
		field[time.Time]("At", "at"),
		field[*int]("Stage", "stage,omitempty"),
		field[engine.Value]("Result", "result,omitzero"),
		field[*engine.Failure]("Failure", "failure,omitempty"),
		field[string]("FailureKind", "failureKind,omitempty"),
		field[*engine.Ledger]("Usage", "usage,omitempty"),
		field[*float64]("DurationMs", "durationMs,omitempty"),
		field[string]("Model", "model,omitempty"),
		field[string]("Effort", "effort,omitempty"),
		field[string]("Task", "task,omitempty"),
		field[string]("Stderr", "stderr,omitempty"),
		field[*engine.Changes]("Changes", "changes,omitempty"),
	}
	ledgerFields = []jsonField{
		field[float64]("USD", "usd,omitempty"),
		field[float64]("Tokens", "tokens,omitempty"),
		field[float64]("Dispatches", "dispatches,omitempty"),
		field[float64]("MS", "ms,omitempty"),
	}
)

func eventFieldsKnown() bool {
	return fieldsAre[engine.Event](eventFields) && plainStrings[engine.EventType]()
}

func stepFieldsKnown() bool {
	return fieldsAre[engine.StepView](stepViewFields) && fieldsAre[engine.Attempt](attemptFields) &&
		fieldsAre[engine.Ledger](ledgerFields) && plainStrings[engine.StepStatus]() && plainStrings[engine.Decision]() &&
		!marshals[engine.StepView]() && !marshals[engine.Attempt]() && !marshals[engine.Ledger]() && !marshals[engine.Event]()
}

// fieldsAre says that T's exported fields are want, in order.
func fieldsAre[T any](want []jsonField) bool {
	t := reflect.TypeFor[T]()
	var got []jsonField
	for i := 0; i < t.NumField(); i++ {
		if f := t.Field(i); f.IsExported() {
			got = append(got, jsonField{f.Name, f.Tag.Get("json"), f.Type})
		}
	}
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}

// plainStrings says that T encodes as a plain string: no method of its
// own changes its JSON.
func plainStrings[T any]() bool {
	return reflect.TypeFor[T]().Kind() == reflect.String && !marshals[T]()
}

// marshals says that T (or *T) has a method of its own that encoding/json
// would use.
func marshals[T any]() bool {
	for _, t := range []reflect.Type{reflect.TypeFor[T](), reflect.PointerTo(reflect.TypeFor[T]())} {
		if t.Implements(reflect.TypeFor[json.Marshaler]()) || t.Implements(reflect.TypeFor[encoding.TextMarshaler]()) {
			return true
		}
	}
	return false
}
