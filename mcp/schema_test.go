package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestEverySchemaPropertyIsTyped walks every tool's advertised input and
// output schemas, as a client lists them: every property has a type (one,
// or an explicit union) and a description, and every array element and
// map value schema has a type. A client that cannot type a property drops
// it or its description (Codex shows such a property to its model as {}).
// Both the served cache and the inference are walked.
func TestEverySchemaPropertyIsTyped(t *testing.T) {
	for _, noCache := range []bool{false, true} {
		f := newFixtureWith(t, fixtureOpts{noCache: noCache})
		res, err := f.cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		checkTyped(t, res.Tools, noCache)
	}
}

func checkTyped(t *testing.T, tools []*sdk.Tool, inferred bool) {
	t.Helper()
	for _, tl := range tools {
		for which, s := range map[string]any{"input": tl.InputSchema, "output": tl.OutputSchema} {
			b, err := json.Marshal(s)
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			for _, p := range untypedProperties(m, "") {
				t.Errorf("%s %s schema (inferred: %v): %s", tl.Name, which, inferred, p)
			}
		}
	}
}

// untypedProperties lists the problems of a JSON schema: properties
// without type or description, element or value schemas without type.
func untypedProperties(s map[string]any, path string) []string {
	var out []string
	props, _ := s["properties"].(map[string]any)
	for name, p := range props {
		pp := path + "." + name
		ps, ok := p.(map[string]any)
		if !ok {
			out = append(out, fmt.Sprintf("%s is %v, not a schema with a type", pp, p))
			continue
		}
		if _, ok := ps["type"]; !ok {
			out = append(out, pp+" has no type")
		}
		if d, _ := ps["description"].(string); d == "" {
			out = append(out, pp+" has no description")
		}
		out = append(out, untypedProperties(ps, pp)...)
	}
	for key, suffix := range map[string]string{"items": "[]", "additionalProperties": "{}"} {
		sub, ok := s[key].(map[string]any)
		if !ok {
			continue // absent, or true/false
		}
		if _, ok := sub["type"]; !ok {
			out = append(out, path+suffix+" has no type")
		}
		out = append(out, untypedProperties(sub, path+suffix)...)
	}
	for _, key := range []string{"anyOf", "oneOf", "allOf"} {
		alts, _ := s[key].([]any)
		for i, a := range alts {
			if as, ok := a.(map[string]any); ok {
				out = append(out, untypedProperties(as, fmt.Sprintf("%s|%s[%d]", path, key, i))...)
			}
		}
	}
	return out
}
