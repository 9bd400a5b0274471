package expr

import (
	"errors"
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
