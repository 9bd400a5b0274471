package expr

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

func TestDecodeEncodeKeepsOrder(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"b":1,"a":[true,null,"x"],"c":{"z":1.5,"y":-2}}`, `{"b":1,"a":[true,null,"x"],"c":{"z":1.5,"y":-2}}`},
		{`{"a":1,"b":2,"a":3}`, `{"a":3,"b":2}`},
		{` [ ] `, `[]`},
		{`{}`, `{}`},
		{`1e2`, `100`},
		{`"\u00e9"`, `"é"`},
	}
	for _, tt := range tests {
		v, err := DecodeJSON([]byte(tt.in))
		if err != nil {
			t.Fatalf("DecodeJSON(%s): %v", tt.in, err)
		}
		got, err := EncodeJSON(v)
		if err != nil {
			t.Fatalf("EncodeJSON: %v", err)
		}
		if string(got) != tt.want {
			t.Errorf("round trip of %s = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestDecodeJSONErrors(t *testing.T) {
	for _, in := range []string{``, `{`, `[1,]`, `1 2`, `1e999`, strings.Repeat("[", MaxJSONDepth+1) + strings.Repeat("]", MaxJSONDepth+1)} {
		if _, err := DecodeJSON([]byte(in)); err == nil {
			t.Errorf("DecodeJSON(%.20q) succeeded, want an error", in)
		}
	}
	deep := strings.Repeat("[", MaxJSONDepth+1) + strings.Repeat("]", MaxJSONDepth+1)
	if _, err := DecodeJSON([]byte(deep)); !errors.Is(err, ErrJSONTooDeep) {
		t.Errorf("deep input: %v, want ErrJSONTooDeep", err)
	}
}

func TestFromGo(t *testing.T) {
	v, err := FromGo(map[string]any{"b": 1, "a": []int{1, 2}})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := EncodeJSON(v)
	if string(got) != `{"a":[1,2],"b":1}` {
		t.Errorf("FromGo = %s", got)
	}
	if _, err := FromGo(func() {}); err == nil {
		t.Error("FromGo(func) succeeded")
	}
}

// DecodeJSON orders members as JSON.parse does, whatever order the index
// keys arrive in, and agrees with building the object by Set.
func TestDecodeJSONPropertyOrder(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"b":1,"2":2,"a":3,"1":4}`, `{"1":4,"2":2,"b":1,"a":3}`},
		{`{"1":1,"x":2,"1":3,"x":4}`, `{"1":3,"x":4}`},
		{`{"4294967295":1,"4294967294":2,"01":3,"0":4,"-1":5}`, `{"0":4,"4294967294":2,"4294967295":1,"01":3,"-1":5}`},
		{`{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"a":10,"9":11}`, `{"9":11,"a":10,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9}`},
	}
	for _, tt := range tests {
		v, err := DecodeJSON([]byte(tt.in))
		if err != nil {
			t.Fatalf("DecodeJSON(%s): %v", tt.in, err)
		}
		if got := mustJSON(v); got != tt.want {
			t.Errorf("DecodeJSON(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}

	// A large object with index keys in descending order after a named
	// key: the members land in the same order as Set gives, and lookups
	// work (the decoder builds the position index itself).
	const n = 20000
	var b strings.Builder
	set := NewObject(0)
	b.WriteString(`{"name":0`)
	set.Set("name", 0.0)
	for i := n; i > 0; i-- {
		fmt.Fprintf(&b, `,"%d":%d`, i, i)
		if i%500 == 0 {
			set.Set(strconv.Itoa(i), float64(i))
		}
	}
	b.WriteString(`}`)
	v, err := DecodeJSON([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	o := v.(*Object)
	if o.Len() != n+1 || o.Keys()[0] != "1" || o.Keys()[n-1] != strconv.Itoa(n) || o.Keys()[n] != "name" {
		t.Fatalf("order of %d members: first %q, last %q", o.Len(), o.Keys()[0], o.Keys()[o.Len()-1])
	}
	for _, k := range set.Keys() {
		got, ok := o.Get(k)
		want, _ := set.Get(k)
		if !ok || got != want {
			t.Errorf("Get(%q) = %v, %v; want %v", k, got, ok, want)
		}
	}
	if _, ok := o.Get("0"); ok {
		t.Error(`Get("0") found a key that is not there`)
	}
}
