package guard

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"unicode/utf8"
)

// DecodeRequest decodes a JSON object of guard arguments into dst (a
// pointer to one of the request structs, such as [*TransitionRequest])
// strictly: the value must be an
// object (empty input means {}), every key must be a declared argument, a
// required argument (a field whose json tag has no omitempty) must be
// present and not null, and an optional argument given as null takes its
// default. Every failure is [CodeInvalidArgument]. It is the CLI's reading of
// the same request structs the MCP tools use.
func DecodeRequest(data []byte, dst any) error {
	rv := reflect.ValueOf(dst)
	if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("guard: DecodeRequest needs a pointer to a struct, got %T", dst)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		data = []byte("{}")
	}
	// encoding/json would silently replace invalid UTF-8 and lone UTF-16
	// surrogate escapes with U+FFFD, so that a digest or checksum would be
	// taken over other text than the caller sent (docs/guard.md, "Canonical
	// JSON"): refuse them.
	if !utf8.Valid(data) {
		return errorf(CodeInvalidArgument, "guard arguments are not valid UTF-8")
	}
	if esc, found := loneSurrogate(data); found {
		return errorf(CodeInvalidArgument, "guard arguments contain the lone UTF-16 surrogate escape %s, which has no UTF-8 form", esc)
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

// loneSurrogate finds the first \u escape of a UTF-16 surrogate that is not
// a high surrogate immediately followed by an escaped low one. Backslashes
// only occur inside JSON strings, so the text is scanned as a whole.
func loneSurrogate(data []byte) (string, bool) {
	hex4 := func(i int) (rune, bool) {
		if i+4 > len(data) {
			return 0, false
		}
		var r rune
		for _, c := range data[i : i+4] {
			switch {
			case c >= '0' && c <= '9':
				r = r<<4 | rune(c-'0')
			case c >= 'a' && c <= 'f':
				r = r<<4 | rune(c-'a'+10)
			case c >= 'A' && c <= 'F':
				r = r<<4 | rune(c-'A'+10)
			default:
				return 0, false
			}
		}
		return r, true
	}
	for i := 0; i+1 < len(data); i++ {
		if data[i] != '\\' {
			continue
		}
		if data[i+1] != 'u' {
			i++ // an escaped character, possibly a backslash
			continue
		}
		r, ok := hex4(i + 2)
		if !ok {
			i++ // malformed: the JSON decoder reports it
			continue
		}
		switch {
		case r >= 0xD800 && r <= 0xDBFF:
			if i+12 <= len(data) && data[i+6] == '\\' && data[i+7] == 'u' {
				if lo, ok := hex4(i + 8); ok && lo >= 0xDC00 && lo <= 0xDFFF {
					i += 11
					continue
				}
			}
			return string(data[i : i+6]), true
		case r >= 0xDC00 && r <= 0xDFFF:
			return string(data[i : i+6]), true
		}
		i += 5
	}
	return "", false
}
