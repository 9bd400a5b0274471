package guard

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// DecodeRequest decodes a JSON object of guard arguments into dst (a
// pointer to one of the *Request structs) strictly: the value must be an
// object (empty input means {}), every key must be a declared argument, a
// required argument (a field whose json tag has no omitempty) must be
// present and not null, and an optional argument given as null takes its
// default. Every failure is invalid_argument. It is the CLI's reading of
// the same request structs the MCP tools use.
func DecodeRequest(data []byte, dst any) error {
	rv := reflect.ValueOf(dst)
	if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("guard: DecodeRequest needs a pointer to a struct, got %T", dst)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		data = []byte("{}")
	}
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&raw); err != nil || raw == nil {
		return errorf(CodeInvalidArgument, "guard arguments must be one JSON object")
	}
	if dec.More() {
		return errorf(CodeInvalidArgument, "guard arguments must be one JSON object (found data after it)")
	}
	st := rv.Elem().Type()
	fields := map[string]int{}
	var required []string
	for i := range st.NumField() {
		f := st.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		fields[name] = i
		if !slices.Contains(strings.Split(opts, ","), "omitempty") {
			required = append(required, name)
		}
	}
	for _, k := range sortedKeys(raw) {
		i, ok := fields[k]
		if !ok {
			return errorf(CodeInvalidArgument, "unexpected guard argument %q", k)
		}
		v := raw[k]
		if string(bytes.TrimSpace(v)) == "null" {
			if slices.Contains(required, k) {
				return errorf(CodeInvalidArgument, "guard argument %q must not be null", k)
			}
			continue
		}
		if err := json.Unmarshal(v, rv.Elem().Field(i).Addr().Interface()); err != nil {
			return errorf(CodeInvalidArgument, "guard argument %q: %v", k, unmarshalReason(err))
		}
	}
	for _, k := range required {
		if _, ok := raw[k]; !ok {
			return errorf(CodeInvalidArgument, "missing required guard argument %q", k)
		}
	}
	return nil
}

func unmarshalReason(err error) string {
	if te, ok := err.(*json.UnmarshalTypeError); ok {
		return fmt.Sprintf("expected %s, got JSON %s", te.Type, te.Value)
	}
	return err.Error()
}
