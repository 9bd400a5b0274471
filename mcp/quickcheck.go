package mcp

import (
	"math"
	"reflect"
	"slices"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// quickSchema is a tool's input schema compiled for a check that says
// only whether arguments are valid, for the keywords the inferred input
// schemas use. The full validator (jsonschema-go) tracks annotations for
// every object it visits and grows the calling goroutine's stack on the
// way, about 75 µs for a step_done's arguments; this check costs a few.
// Arguments it finds invalid still go to the full validator, whose
// message the model gets (decodeArgs); compileQuick refuses any schema
// with a keyword it does not implement exactly as the full validator
// does, so that its "valid" is never one the full validator would refuse
// (TestQuickCheckAgreesWithTheValidator).
type quickSchema struct {
	types          []string // nil: any type
	enum           []any    // scalars only
	minimum        *float64
	maximum        *float64
	minLen, maxLen *int
	items          *quickSchema
	props          map[string]*quickSchema
	required       []string
	closed         bool         // additionalProperties: false
	extra          *quickSchema // additionalProperties: a schema
}

// quickKeywords are the fields of [jsonschema.Schema] that compileQuick
// implements; annotations, which the validator ignores, are among them.
// Not is handled apart: only additionalProperties' false ({"not": {}}).
var quickKeywords = map[string]bool{
	"Type": true, "Types": true, "Enum": true,
	"Minimum": true, "Maximum": true, "MinLength": true, "MaxLength": true,
	"Items": true, "Properties": true, "Required": true, "AdditionalProperties": true,
	// Annotations.
	"Title": true, "Description": true, "Default": true, "Deprecated": true,
	"ReadOnly": true, "WriteOnly": true, "Examples": true, "Comment": true,
	"Format": true, "Extra": true, "PropertyOrder": true,
}

// compileQuick compiles s, or reports false when s uses a keyword
// quickSchema does not implement.
func compileQuick(s *jsonschema.Schema) (*quickSchema, bool) {
	if s == nil {
		return nil, false
	}
	v := reflect.ValueOf(s).Elem()
	for i := range v.NumField() {
		if !v.Field(i).IsZero() && !quickKeywords[v.Type().Field(i).Name] {
			return nil, false
		}
	}
	q := &quickSchema{minimum: s.Minimum, maximum: s.Maximum, minLen: s.MinLength, maxLen: s.MaxLength, required: s.Required}
	switch {
	case s.Type != "":
		q.types = []string{s.Type}
	case s.Types != nil:
		q.types = s.Types
	}
	// The validator compares by kind and value (a named string type
	// equals a string), so values are kept as their basic types.
	if s.Enum != nil {
		q.enum = make([]any, 0, len(s.Enum)) // an empty enum admits nothing
	}
	for _, e := range s.Enum {
		switch ev := reflect.ValueOf(e); {
		case e == nil:
			q.enum = append(q.enum, nil)
		case ev.Kind() == reflect.String:
			q.enum = append(q.enum, ev.String())
		case ev.Kind() == reflect.Bool:
			q.enum = append(q.enum, ev.Bool())
		default: // numbers compare as exact rationals there; none are needed here
			return nil, false
		}
	}
	if s.Items != nil {
		items, ok := compileQuick(s.Items)
		if !ok {
			return nil, false
		}
		q.items = items
	}
	if len(s.Properties) > 0 {
		q.props = make(map[string]*quickSchema, len(s.Properties))
		for name, ps := range s.Properties {
			p, ok := compileQuick(ps)
			if !ok {
				return nil, false
			}
			q.props[name] = p
		}
	}
	if ap := s.AdditionalProperties; ap != nil {
		// The validator reads {"not": {}} as false, whatever else is
		// beside it, and reports the properties it does not name.
		if ap.Not != nil && reflect.ValueOf(*ap.Not).IsZero() {
			q.closed = true
		} else {
			extra, ok := compileQuick(ap)
			if !ok {
				return nil, false
			}
			q.extra = extra
		}
	}
	return q, true
}

// valid reports whether v (a value decoded by encoding/json into any)
// satisfies q. False means "not known valid": ask the full validator.
func (q *quickSchema) valid(v any) bool {
	var kind string
	switch x := v.(type) {
	case nil:
		kind = "null"
	case bool:
		kind = "boolean"
	case string:
		kind = "string"
		if q.minLen != nil || q.maxLen != nil {
			n := utf8.RuneCountInString(x)
			if q.minLen != nil && n < *q.minLen || q.maxLen != nil && n > *q.maxLen {
				return false
			}
		}
	case float64:
		kind = "number"
		if _, frac := math.Modf(x); frac == 0 { // the validator's test
			kind = "integer"
		}
		if q.minimum != nil && x < *q.minimum || q.maximum != nil && x > *q.maximum {
			return false
		}
	case []any:
		kind = "array"
		if q.items != nil {
			for _, item := range x {
				if !q.items.valid(item) {
					return false
				}
			}
		}
	case map[string]any:
		kind = "object"
		if !q.validObject(x) {
			return false
		}
	default:
		return false
	}
	if q.types != nil && !slices.Contains(q.types, kind) && !(kind == "integer" && slices.Contains(q.types, "number")) {
		return false
	}
	if q.enum != nil {
		switch v.(type) {
		case []any, map[string]any: // never equal to a scalar (and == on them panics)
			return false
		}
		if !slices.Contains(q.enum, v) {
			return false
		}
	}
	return true
}

func (q *quickSchema) validObject(m map[string]any) bool {
	for name, p := range q.props {
		if val, ok := m[name]; ok && !p.valid(val) {
			return false
		}
	}
	if q.closed || q.extra != nil {
		for name, val := range m {
			if _, known := q.props[name]; known {
				continue
			}
			if q.closed || !q.extra.valid(val) {
				return false
			}
		}
	}
	for _, name := range q.required {
		if _, ok := m[name]; !ok {
			return false
		}
	}
	return true
}
