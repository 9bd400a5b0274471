package expr

import (
	"math"
	"testing"
)

func TestEqual(t *testing.T) {
	obj := func(kv ...any) *Object {
		o := NewObject(len(kv) / 2)
		for i := 0; i < len(kv); i += 2 {
			o.Set(kv[i].(string), kv[i+1])
		}
		return o
	}
	nan := math.NaN()
	tenth := 0.1 // a variable: constant arithmetic would be exact
	m := map[string]any{"a": 1.0}
	tests := []struct {
		name string
		a, b any
		want bool
	}{
		{"null", nil, nil, true},
		{"null and false", nil, false, false},
		{"booleans", true, true, true},
		{"booleans differ", true, false, false},
		{"7 and 7.0", 7.0, 7.0, true},
		{"-0 and 0", math.Copysign(0, -1), 0.0, true},
		{"0.1+0.2 and 0.3", tenth + 0.2, 0.3, false},
		{"NaN and itself", nan, nan, false},
		{"number and string", 1.0, "1", false},
		{"0 and false", 0.0, false, false},
		{"empty string and null", "", nil, false},
		{"strings", "café", "café", true},
		{"strings are not normalised", "e\u0301", "\u00e9", false},
		{"empty arrays", []any{}, []any{}, true},
		{"nil and empty array", []any(nil), []any{}, true},
		{"arrays", []any{1.0, "a", nil}, []any{1.0, "a", nil}, true},
		{"array order matters", []any{1.0, 2.0}, []any{2.0, 1.0}, false},
		{"array lengths", []any{1.0}, []any{1.0, 2.0}, false},
		{"nested -0", []any{[]any{0.0}}, []any{[]any{math.Copysign(0, -1)}}, true},
		{"objects in any key order", obj("x", 1.0, "y", []any{2.0}), obj("y", []any{2.0}, "x", 1.0), true},
		{"an extra null member", obj("x", 1.0), obj("x", 1.0, "y", nil), false},
		{"a missing member on the left", obj("x", 1.0, "y", nil), obj("x", 1.0), false},
		{"same keys, other values", obj("x", 1.0), obj("x", 2.0), false},
		{"same size, other keys", obj("x", 1.0), obj("z", 1.0), false},
		{"nil *Object is empty", (*Object)(nil), obj(), true},
		{"empty object and empty array", obj(), []any{}, false},
		{"deep", obj("a", []any{obj("b", "c")}), obj("a", []any{obj("b", "c")}), true},
		{"deep difference", obj("a", []any{obj("b", "c")}), obj("a", []any{obj("b", "d")}), false},
		// Outside the model nothing is equal, not even a value to itself.
		{"int", 1, 1, false},
		{"int and float", 1, 1.0, false},
		{"map", m, m, false},
		{"[]string", []string{"a"}, []string{"a"}, false},
		{"map inside an array", []any{m}, []any{m}, false},
	}
	for _, tt := range tests {
		if got := Equal(tt.a, tt.b); got != tt.want {
			t.Errorf("%s: Equal(%#v, %#v) = %v, want %v", tt.name, tt.a, tt.b, got, tt.want)
		}
		if got := Equal(tt.b, tt.a); got != tt.want {
			t.Errorf("%s: Equal is not symmetric", tt.name)
		}
	}
}

// Equal is the == of the language: the same verdict on every pair of
// values of the std bindings.
func TestEqualIsTheOperator(t *testing.T) {
	b := mustBindings(t, std)
	rv, _ := b.Result.Value()
	res := rv.(*Object)
	keys := res.Keys()
	p, err := Compile("result.a == result.b")
	if err != nil {
		t.Fatal(err)
	}
	pairs := 0
	for _, ka := range keys {
		for _, kb := range keys {
			a, _ := res.Get(ka)
			bv, _ := res.Get(kb)
			v, err := p.Eval(Bindings{Result: Bind(obj2("a", a, "b", bv))}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if v != Equal(a, bv) {
				t.Errorf("result.%s == result.%s is %v, Equal says %v", ka, kb, v, !v.(bool))
			}
			if Equal(a, bv) != sameJSON(a, bv) {
				t.Errorf("Equal(result.%s, result.%s) = %v, the tests' oracle says %v", ka, kb, Equal(a, bv), !Equal(a, bv))
			}
			pairs++
		}
	}
	if pairs < 100 {
		t.Fatalf("only %d pairs", pairs)
	}
}

func obj2(k1 string, v1 any, k2 string, v2 any) *Object {
	o := NewObject(2)
	o.Set(k1, v1)
	o.Set(k2, v2)
	return o
}
