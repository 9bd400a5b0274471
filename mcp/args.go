package mcp

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// A tool's arguments are accepted or refused by the schema validator of
// jsonschema-go (the authority), but its messages are written for schema
// authors: JSON pointers, Go slice syntax ("[\"title\" \"points\"]"),
// "want one of \"string, object\"". explainArgs says the same thing in the
// model's words, from the tool's own input schema: which argument, what it
// must be, what to write instead (docs/mcp.md, "Wire conventions"). It covers the
// keywords the input schemas use (type, properties, required,
// additionalProperties, items, enum); anything else falls back to the
// validator's message.

// argHints add what to do when a parameter has an unknown field, by the
// parameter's path: the usual mistakes of a model.
var argHints = map[string]string{
	"result": `a step's output goes under result.output, e.g. {"result": {"output": {...}}}; ` +
		`result.failure says why you could not do the task instead`,
	"result.usage":  "Stratum counts dispatches itself; report only what you know of usd, tokens and ms",
	"receipt.usage": "Stratum counts dispatches itself; report only what you know of usd, tokens and ms",
}

// explainArgs returns the first problem of args (a decoded JSON object)
// against the input schema s, in plain words, or "" when it finds none.
func explainArgs(s *jsonschema.Schema, args any) string {
	return explainValue(s, args, "")
}

func explainValue(s *jsonschema.Schema, v any, path string) string {
	if s == nil {
		return ""
	}
	if types := schemaTypes(s); len(types) > 0 && !slices.ContainsFunc(types, func(t string) bool { return hasJSONType(v, t) }) {
		return fmt.Sprintf("%s must be %s, not %s", argName(path), typeList(types), describeJSON(v))
	}
	if len(s.Enum) > 0 && !slices.ContainsFunc(s.Enum, func(e any) bool { return jsonEqual(e, v) }) {
		var opts []string
		for _, e := range s.Enum {
			opts = append(opts, fmt.Sprint(e))
		}
		return fmt.Sprintf("%s must be one of %s, not %s", argName(path), strings.Join(opts, ", "), describeJSON(v))
	}
	switch v := v.(type) {
	case map[string]any:
		return explainObject(s, v, path)
	case []any:
		for i, e := range v {
			if msg := explainValue(s.Items, e, fmt.Sprintf("%s[%d]", path, i)); msg != "" {
				return msg
			}
		}
	}
	return ""
}

func explainObject(s *jsonschema.Schema, v map[string]any, path string) string {
	var missing []string
	for _, name := range s.Required {
		if _, ok := v[name]; !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		where := "this tool needs"
		if path != "" {
			where = path + " needs"
		}
		var parts []string
		for _, name := range missing {
			parts = append(parts, describeArg(name, s.Properties[name]))
		}
		return fmt.Sprintf("%s %s; add %s", where, strings.Join(parts, " and "), plural(len(missing), "it", "them"))
	}
	if isFalse(s.AdditionalProperties) {
		var unknown []string
		for name := range v {
			if _, ok := s.Properties[name]; !ok {
				unknown = append(unknown, name)
			}
		}
		if len(unknown) > 0 {
			slices.Sort(unknown)
			msg := fmt.Sprintf("%s %s %s", quoteList(unknown), plural(len(unknown), "is not", "are not"), knownFields(s, path, len(unknown) > 1))
			if hint := argHints[path]; hint != "" {
				msg += ": " + hint
			}
			return msg
		}
	}
	names := make([]string, 0, len(v))
	for name := range v {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		p := s.Properties[name]
		if p == nil {
			p = s.AdditionalProperties
		}
		if msg := explainValue(p, v[name], joinPath(path, name)); msg != "" {
			return msg
		}
	}
	return ""
}

// knownFields says what the object at path accepts: "an argument of this
// tool (it takes runId)" or "fields of result (it takes output, ...)".
func knownFields(s *jsonschema.Schema, path string, many bool) string {
	var names []string
	for name := range s.Properties {
		names = append(names, name)
	}
	slices.Sort(names)
	takes := "nothing"
	if len(names) > 0 {
		takes = strings.Join(names, ", ")
	}
	what := "a field of " + path
	switch {
	case path == "" && many:
		what = "arguments of this tool"
	case path == "":
		what = "an argument of this tool"
	case many:
		what = "fields of " + path
	}
	return what + " (it takes " + takes + ")"
}

// describeArg names a missing argument with its type and description:
// `"runId" (a string: the run's id)`.
func describeArg(name string, s *jsonschema.Schema) string {
	out := fmt.Sprintf("%q", name)
	if s == nil {
		return out
	}
	var what []string
	if types := schemaTypes(s); len(types) > 0 {
		what = append(what, typeList(types))
	}
	if s.Description != "" {
		what = append(what, s.Description)
	}
	if len(what) > 0 {
		out += " (" + strings.Join(what, ": ") + ")"
	}
	return out
}

func argName(path string) string {
	if path == "" {
		return "the arguments"
	}
	return path
}

func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func schemaTypes(s *jsonschema.Schema) []string {
	if s.Type != "" {
		return []string{s.Type}
	}
	return s.Types
}

// typeList is "a string", "a string or an object", "an object, an array,
// a string, a number, a boolean or null" (null last and without article).
func typeList(types []string) string {
	var named []string
	null := false
	for _, t := range types {
		if t == "null" {
			null = true
			continue
		}
		named = append(named, article(t))
	}
	if null {
		named = append(named, "null")
	}
	switch len(named) {
	case 0:
		return "null"
	case 1:
		return named[0]
	}
	return strings.Join(named[:len(named)-1], ", ") + " or " + named[len(named)-1]
}

func article(t string) string {
	switch t {
	case "object", "array", "integer":
		return "an " + t
	}
	return "a " + t
}

func hasJSONType(v any, t string) bool {
	switch t {
	case "null":
		return v == nil
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "number":
		_, ok := v.(float64)
		return ok
	case "integer":
		f, ok := v.(float64)
		return ok && f == float64(int64(f))
	}
	return false
}

// describeJSON names a value for a message: `the number 5`, `the string
// "hi"`, `an object`, `an array`, `null`.
func describeJSON(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		if len(v) > 40 {
			v = v[:40] + "..."
		}
		return fmt.Sprintf("the string %q", v)
	case bool:
		return fmt.Sprintf("the boolean %v", v)
	case float64:
		return fmt.Sprintf("the number %v", v)
	}
	return fmt.Sprint(v)
}

func jsonEqual(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(ja) == string(jb)
}

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " and " + q[len(q)-1]
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
