package ir

import (
	"math"
	"strings"
	"testing"

	"github.com/stratum-go/stratum/expr"
)

func TestParseType(t *testing.T) {
	valid := map[string]string{
		"string": "string", "integer": "integer", "number": "number", "boolean": "boolean",
		"object": "object", "array": "array", "string?": "string?", "string[]": "list(string)",
		"string[][]": "list(list(string))", "Item[]": "list(Item)", "Item[][]?": "list(list(Item))?",
		"(a|b)[]": "list(enum(a,b))", "(only)[]": "list(enum(only))", "(a|b)[][]": "list(list(enum(a,b)))",
		"object[]": "list(object)", "array[]": "list(array)", "draft|final": "enum(draft,final)",
		"string|number": "enum(string,number)", "a b|c-d./e": "enum(a b,c-d./e)", "String": "String",
		"(x y|z[1])[]": "list(enum(x y,z[1]))", "Item?": "Item?",
	}
	for src, want := range valid {
		ty, why := parseType(src)
		if ty == nil {
			t.Errorf("parseType(%q) failed: %s", src, why)
			continue
		}
		if got := typeShape(ty); got != want {
			t.Errorf("parseType(%q) = %s, want %s", src, got, want)
		}
		if ty.String() != src {
			t.Errorf("String() = %q, want %q", ty.String(), src)
		}
	}
	for _, src := range []string{"", "?", "string??", "string?[]", "(a|b)?[]", "[]", " string", "string ", "date",
		"result_shape", "List<string>", "Foo-Bar", "a||b", "|a", "(a|)[]", "a|(b)", "(a|b)", "lower"} {
		if ty, _ := parseType(src); ty != nil {
			t.Errorf("parseType(%q) = %s, want an error", src, typeShape(ty))
		}
	}
}

func typeShape(t *Type) string {
	var s string
	switch t.Kind {
	case TypeList:
		s = "list(" + strings.TrimSuffix(typeShape(t.Elem), "?") + ")"
	case TypeEnum:
		s = "enum(" + strings.Join(t.Enum, ",") + ")"
	case TypeContract:
		s = t.Name
	default:
		s = map[TypeKind]string{TypeString: "string", TypeInteger: "integer", TypeNumber: "number",
			TypeBoolean: "boolean", TypeObject: "object", TypeArray: "array"}[t.Kind]
	}
	if t.Optional {
		s += "?"
	}
	return s
}

func obj(kv ...any) *expr.Object {
	o := expr.NewObject(len(kv) / 2)
	for i := 0; i+1 < len(kv); i += 2 {
		o.Set(kv[i].(string), kv[i+1])
	}
	return o
}

func TestContractValidate(t *testing.T) {
	p := mustBuild(t, `
version: 1
contracts:
  Person:
    name: string
    age: integer?
    tags: "(a|b)[]"
    extra: object?
    list: array?
  Out:
    people: Person[]
    score: number
    ok: boolean
    mode: draft|final
flows:
  entry: main
  main:
    input: {people: "Person[]", note: "string?"}
    output: {from: "${a.output}", contract: Out}
    steps:
      - {id: a, do: x, out: Out}
`)
	out := p.Contract("Out")
	good := obj("people", []any{obj("name", "x", "tags", []any{"a"}), obj("name", "y", "age", 2.0, "tags", []any{}, "extra", obj("z", 1.0), "list", []any{1.0, "q"})},
		"score", 1.5, "ok", true, "mode", "final")
	if errs := out.Validate(good, "result"); len(errs) != 0 {
		t.Fatalf("good value rejected: %v", errs)
	}
	// The same through map[string]any.
	if errs := out.Validate(map[string]any{"people": []any{}, "score": 0.0, "ok": false, "mode": "draft"}, "result"); len(errs) != 0 {
		t.Fatalf("map value rejected: %v", errs)
	}
	cases := []struct {
		name  string
		value any
		paths []string
	}{
		{"not an object", "x", []string{"result"}},
		{"null", nil, []string{"result"}},
		{"missing and extra", obj("people", []any{}, "score", 1.0, "ok", true, "bogus", 1.0), []string{"result.bogus", "result.mode"}},
		{"wrong types", obj("people", "no", "score", "1", "ok", 1.0, "mode", "other"), []string{"result.people", "result.score", "result.ok", "result.mode"}},
		{"nested", obj("people", []any{obj("name", nil, "age", 1.5, "tags", []any{"c"})}, "score", 1.0, "ok", true, "mode", "draft"),
			[]string{"result.people[0].name", "result.people[0].age", "result.people[0].tags[0]"}},
		{"optional null is fine, object must be an object", obj("people", []any{obj("name", "n", "age", nil, "tags", []any{}, "extra", []any{})}, "score", 1.0, "ok", true, "mode", "draft"),
			[]string{"result.people[0].extra"}},
		// What a Go caller can pass and JSON cannot hold.
		{"non-finite numbers", obj("people", []any{}, "score", math.NaN(), "ok", true, "mode", "draft"), []string{"result.score"}},
		{"map with an undeclared field", map[string]any{"people": []any{}, "score": math.Inf(1), "ok": true, "mode": "draft", "zz": 1.0},
			[]string{"result.zz", "result.score"}},
	}
	for _, c := range cases {
		errs := out.Validate(c.value, "result")
		var got []string
		for _, e := range errs {
			got = append(got, e.Path)
			if e.Message == "" {
				t.Errorf("%s: empty message", c.name)
			}
		}
		if strings.Join(got, " ") != strings.Join(c.paths, " ") {
			t.Errorf("%s: paths %v, want %v (%v)", c.name, got, c.paths, errs)
		}
	}
	in := p.EntryFlow().Input
	errs := in.Validate(obj("people", []any{obj("name", 3.0, "tags", []any{})}), "input")
	if len(errs) != 1 || errs[0].Path != "input.people[0].name" || errs[0].Error() != "input.people[0].name: expected a string, got the number 3" {
		t.Errorf("input errors = %v", errs)
	}
	// Type.Validate on a field type.
	f, _ := out.Field("score")
	if errs := f.Type.Validate(2.0, "x"); errs != nil {
		t.Error(errs)
	}
	ag, _ := p.Contract("Person").Field("age")
	if errs := ag.Type.Validate(nil, "x"); errs != nil {
		t.Error("optional accepts null")
	}
}
