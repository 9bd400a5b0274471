package mcp

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/store"
)

// inputChecks is the argument check of every tool that has one.
func inputChecks(t testing.TB) map[string]*inputCheck {
	t.Helper()
	eng := engine.New(store.NewMemory(), engine.Options{Workspace: engine.WorkspacePolicy{Default: t.TempDir()}})
	t.Cleanup(eng.Close)
	s := newServer(eng, slog.New(slog.DiscardHandler))
	checks := map[string]*inputCheck{}
	for _, tl := range s.tools() {
		if tl.input == nil {
			continue
		}
		c, err := tl.input()
		if err != nil {
			t.Fatalf("%s: %v", tl.def.Name, err)
		}
		checks[tl.def.Name] = c
	}
	if len(checks) == 0 {
		t.Fatal("no tool has an argument check")
	}
	return checks
}

// TestQuickCheckCoversEveryTool: every tool's input schema compiles for
// the quick check, so no call pays for the full validator when its
// arguments are valid. A new keyword in a schema fails this test until
// compileQuick implements it.
func TestQuickCheckCoversEveryTool(t *testing.T) {
	for name, c := range inputChecks(t) {
		if c.quick == nil {
			t.Errorf("%s: the input schema does not compile for the quick check", name)
		}
	}
}

// TestCompileQuickRefuses: a schema with a keyword the quick check does
// not implement is left to the validator alone.
func TestCompileQuickRefuses(t *testing.T) {
	one, two := 1.0, 2
	for name, s := range map[string]*jsonschema.Schema{
		"pattern":                             {Type: "string", Pattern: "^a"},
		"$ref":                                {Ref: "#/$defs/x"},
		"anyOf":                               {AnyOf: []*jsonschema.Schema{{Type: "string"}}},
		"const":                               {Const: new(any)},
		"a numeric enum":                      {Enum: []any{1.0}},
		"not":                                 {Not: &jsonschema.Schema{Type: "string"}},
		"exclusiveMinimum":                    {ExclusiveMinimum: &one},
		"minItems":                            {MinItems: &two},
		"a property's pattern":                {Properties: map[string]*jsonschema.Schema{"a": {Pattern: "x"}}},
		"an item's const":                     {Items: &jsonschema.Schema{Const: new(any)}},
		"additionalProperties with a pattern": {AdditionalProperties: &jsonschema.Schema{Pattern: "x"}},
		"$schema":                             {Schema: "http://json-schema.org/draft-07/schema#"},
		"an enum of arrays":                   {Enum: []any{[]any{"a"}}},
	} {
		if _, ok := compileQuick(s); ok {
			t.Errorf("%s: compiled, want refused", name)
		}
	}
}

// TestQuickCheckAgreesWithTheValidator: for arguments generated from
// each tool's input schema, valid and broken in every way the schema can
// be (wrong types, unknown and missing properties, numbers out of range,
// short strings, values outside an enum), the quick check says valid
// exactly when the validator does.
func TestQuickCheckAgreesWithTheValidator(t *testing.T) {
	checks := inputChecks(t)
	names := make([]string, 0, len(checks))
	for name := range checks {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		c := checks[name]
		r := rand.New(rand.NewPCG(1, uint64(len(name))))
		var valid, invalid int
		for range 400 {
			v := generate(r, c.full.Schema(), 0)
			quick, full := agree(t, name, c, v)
			if quick != full {
				continue
			}
			if full {
				valid++
			} else {
				invalid++
			}
		}
		// Both kinds, or the test says nothing about one side.
		t.Logf("%s: %d valid, %d invalid", name, valid, invalid)
		if valid == 0 || invalid == 0 {
			t.Errorf("%s: %d valid and %d invalid arguments generated, want some of both", name, valid, invalid)
		}
	}
}

// TestQuickCheckOddBounds: bounds no inferred schema has (negative
// lengths, which the validator reads literally) are judged as the
// validator judges them.
func TestQuickCheckOddBounds(t *testing.T) {
	minusOne, three := -1, 3
	for name, s := range map[string]*jsonschema.Schema{
		"maxLength -1": {Type: "string", MaxLength: &minusOne},
		"minLength -1": {Type: "string", MinLength: &minusOne},
		"maxLength 3":  {Type: "string", MaxLength: &three},
	} {
		rs, err := s.Resolve(nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		q, ok := compileQuick(s)
		if !ok {
			t.Fatalf("%s: not compiled", name)
		}
		c := &inputCheck{full: rs, quick: q}
		for _, v := range []any{"", "ab", "abcd", "éééé"} {
			agree(t, name, c, v)
		}
	}
}

// agree checks one value both ways, failing the test when they differ.
func agree(t testing.TB, name string, c *inputCheck, v any) (quick, full bool) {
	t.Helper()
	// Through JSON, as decodeArgs sees arguments.
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var decoded any
	if err := json.Unmarshal(b, &decoded); err != nil {
		t.Fatal(err)
	}
	if c.quick == nil {
		return false, false
	}
	quick = c.quick.valid(decoded)
	err = c.full.Validate(&decoded)
	full = err == nil
	if quick != full {
		t.Errorf("%s: quick check %v, validator %v (%v) for %s", name, quick, full, err, b)
	}
	return quick, full
}

// generate makes a value for schema s: mostly one that fits, sometimes
// one broken at this level.
func generate(r *rand.Rand, s *jsonschema.Schema, depth int) any {
	if r.IntN(12) == 0 || depth > 6 {
		return anyValue(r)
	}
	types := s.Types
	if s.Type != "" {
		types = []string{s.Type}
	}
	if len(s.Enum) > 0 {
		if r.IntN(5) == 0 {
			return "not-" + fmt.Sprint(s.Enum[0])
		}
		return s.Enum[r.IntN(len(s.Enum))]
	}
	typ := "object"
	if len(types) > 0 {
		typ = types[r.IntN(len(types))]
	} else if s.Properties == nil {
		return anyValue(r)
	}
	switch typ {
	case "null":
		return nil
	case "boolean":
		return r.IntN(2) == 0
	case "string":
		n := r.IntN(4)
		if s.MinLength != nil && r.IntN(3) > 0 {
			n = *s.MinLength + r.IntN(3) - 1
		}
		return strings.Repeat("é", max(n, 0))
	case "integer", "number":
		lo, hi := -10.0, 10.0
		if s.Minimum != nil {
			lo = *s.Minimum - 1
		}
		if s.Maximum != nil {
			hi = *s.Maximum + 1
		}
		switch r.IntN(4) {
		case 0:
			return lo
		case 1:
			return hi
		case 2:
			return lo + 1.5
		}
		return float64(r.IntN(20))
	case "array":
		n := r.IntN(4)
		items := make([]any, n)
		for i := range items {
			if s.Items != nil {
				items[i] = generate(r, s.Items, depth+1)
			} else {
				items[i] = anyValue(r)
			}
		}
		return items
	}
	m := map[string]any{}
	for name, ps := range s.Properties {
		required := slices.Contains(s.Required, name)
		if required && r.IntN(20) == 0 || !required && r.IntN(2) == 0 {
			continue // a required property missing, or an optional one left out
		}
		m[name] = generate(r, ps, depth+1)
	}
	if r.IntN(10) == 0 {
		m["unknown"] = anyValue(r)
	}
	return m
}

// anyValue is a value of any JSON type.
func anyValue(r *rand.Rand) any {
	switch r.IntN(7) {
	case 0:
		return nil
	case 1:
		return true
	case 2:
		return "x"
	case 3:
		return 2.5
	case 4:
		return 3.0
	case 5:
		return []any{1.0, "a"}
	}
	return map[string]any{"k": "v"}
}

// FuzzQuickCheck: for any arguments a client sends to step_done or
// plan (the calls a run makes most), the quick check never says valid
// where the validator does not, nor the reverse.
func FuzzQuickCheck(f *testing.F) {
	checks := inputChecks(f)
	for _, seed := range []string{
		`{}`,
		`{"runId":"r","stepId":"s","dispatchToken":"t","result":{"output":{"v":1}}}`,
		`{"runId":"r","stepId":"s","dispatchToken":"t","result":{"failure":"x","usage":{"tokens":-1}}}`,
		`{"runId":"r","stepId":"s","dispatchToken":"t","result":{"telemetry":{"durationMs":1,"model":""}}}`,
		`{"runId":"r","stepId":"s","dispatchToken":"t","result":null,"extra":1}`,
		`{"spec":"version: 1","input":{"a":[1,2]},"flow":"main"}`,
		`{"spec":1}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, args []byte) {
		var v any
		if json.Unmarshal(args, &v) != nil {
			return
		}
		for _, name := range []string{"stratum_step_done", "stratum_plan"} {
			c := checks[name]
			if c == nil {
				t.Fatalf("no tool %s", name)
			}
			agree(t, name, c, v)
		}
	})
}

// BenchmarkStepDoneArguments: checking and decoding a step_done's
// arguments, with the quick check and with the validator alone.
func BenchmarkStepDoneArguments(b *testing.B) {
	c := inputChecks(b)["stratum_step_done"]
	args := json.RawMessage(`{"runId":"954f91ce-f271-4210-bdf0-e33b9aaef2c1","stepId":"s2","dispatchToken":"13899fe5-c04a-4e8e-a51e-8f345de9b826","result":{"output":{"v":"done","items":[1,2,3]},"telemetry":{"durationMs":1200,"model":"m"}}}`)
	for _, mode := range []struct {
		name  string
		check *inputCheck
	}{{"quick", c}, {"validator", &inputCheck{full: c.full}}} {
		b.Run(mode.name, func(b *testing.B) {
			schema := func() (*inputCheck, error) { return mode.check, nil }
			b.ReportAllocs()
			for b.Loop() {
				if _, err := decodeArgs[stepDoneIn](args, schema); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
