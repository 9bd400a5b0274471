package guard

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDecodeRequest(t *testing.T) {
	var tr TransitionRequest
	err := DecodeRequest([]byte(`{"resource_id":"r","from_state":"a","to_state":"b","artifacts":{"x":"y"},"modified_files":null,"idempotency_key":null,"resolved_by":"human"}`), &tr)
	if err != nil {
		t.Fatal(err)
	}
	want := TransitionRequest{ResourceID: "r", FromState: "a", ToState: "b", Artifacts: map[string]any{"x": "y"}, ResolvedBy: "human"}
	if diff := cmp.Diff(want, tr); diff != "" {
		t.Fatal(diff)
	}
	var rr RegisterRequest
	if err := DecodeRequest([]byte(`{"resource_id":"r","graph":{"a":"b"},"edge_predicates":{},"initial":"a","terminal":"done","workspace_root":null}`), &rr); err != nil {
		t.Fatal(err)
	}
	if rr.Terminal != "done" || rr.WorkspaceRoot != nil || rr.Graph["a"] != "b" {
		t.Fatalf("%+v", rr) // shape errors are left to validation (its order: docs/guard.md)
	}
	cases := []struct {
		name, in, msg string
		dst           any
	}{
		{"not object", `[1]`, "one JSON object", &HistoryRequest{}},
		{"string", `"x"`, "one JSON object", &HistoryRequest{}},
		{"null", `null`, "one JSON object", &HistoryRequest{}},
		{"two objects", `{} {}`, "after it", &HistoryRequest{}},
		{"unknown key", `{"resource_id":"r","override_token":"t"}`, `unexpected guard argument "override_token"`, &HistoryRequest{}},
		{"missing", `{}`, `missing required guard argument "resource_id"`, &HistoryRequest{}},
		{"empty means {}", ``, `missing required guard argument "resource_id"`, &HistoryRequest{}},
		{"required null", `{"resource_id":null}`, "must not be null", &HistoryRequest{}},
		{"wrong type", `{"resource_id":5}`, `"resource_id": expected string`, &HistoryRequest{}},
		{"artifacts array", `{"resource_id":"r","from_state":"a","to_state":"b","artifacts":[]}`, `"artifacts"`, &TransitionRequest{}},
		{"artifacts null", `{"resource_id":"r","from_state":"a","to_state":"b","artifacts":null}`, "must not be null", &TransitionRequest{}},
		{"files not strings", `{"resource_id":"r","from_state":"a","to_state":"b","artifacts":{},"modified_files":[1]}`, `"modified_files"`, &TransitionRequest{}},
		{"graph not object", `{"resource_id":"r","graph":[],"edge_predicates":{},"initial":"a"}`, `"graph"`, &RegisterRequest{}},
		{"bad json", `{"resource_id":`, "one JSON object", &HistoryRequest{}},
		// Text encoding/json would silently turn into U+FFFD (docs/guard.md,
		// "Canonical JSON").
		{"lone high surrogate", `{"resource_id":"a\ud800b"}`, `\ud800`, &HistoryRequest{}},
		{"lone low surrogate", `{"resource_id":"\uDC00"}`, `\uDC00`, &HistoryRequest{}},
		{"high then non-low", `{"resource_id":"\ud83d\u0041"}`, `\ud83d`, &HistoryRequest{}},
		{"reversed pair", `{"resource_id":"\ude00\ud83d"}`, `\ude00`, &HistoryRequest{}},
		{"surrogate at the end", `{"resource_id":"\ud83d"}`, `\ud83d`, &HistoryRequest{}},
		{"surrogate in a key", `{"resource_id":"r","from_state":"a","to_state":"b","artifacts":{"\udfff":1}}`, "surrogate", &TransitionRequest{}},
		{"invalid utf-8", "{\"resource_id\":\"a\xffb\"}", "UTF-8", &HistoryRequest{}},
	}
	for _, c := range cases {
		err := DecodeRequest([]byte(c.in), c.dst)
		wantCode(t, err, CodeInvalidArgument, c.msg)
	}
	// Pairs and escaped backslashes are fine.
	for in, want := range map[string]string{
		`{"resource_id":"\ud83d\ude00 \uD834\uDD1E"}`: "😀 𝄞",
		`{"resource_id":"\\ud800"}`:                   `\ud800`,
		`{"resource_id":"\\\ud83d\ude00"}`:            `\😀`,
		`{"resource_id":"é\u00e9"}`:                   "éé",
	} {
		var hr HistoryRequest
		if err := DecodeRequest([]byte(in), &hr); err != nil || hr.ResourceID != want {
			t.Errorf("%s: %q, %v; want %q", in, hr.ResourceID, err, want)
		}
	}
	if err := DecodeRequest([]byte(`{}`), HistoryRequest{}); err == nil || CodeOf(err) != CodeInternal {
		t.Fatalf("non-pointer destination: %v", err)
	}
}

func FuzzDecodeRequest(f *testing.F) {
	for _, s := range []string{
		`{"resource_id":"r","from_state":"a","to_state":"b","artifacts":{"x":"y"},"modified_files":["a"],"idempotency_key":null}`,
		`{"resource_id":"r","graph":{"a":["b"]},"edge_predicates":{},"initial":"a","terminal":null}`,
		``, `[]`, `{"x":1}`, `{"resource_id":null}`, `{"resource_id":"\ud83d\ude00\\ud800"}`, `{"resource_id":"\udc00"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, dst := range []any{&TransitionRequest{}, &RegisterRequest{}, &HistoryRequest{}, &MigrateRequest{}} {
			if err := DecodeRequest(data, dst); err != nil && CodeOf(err) != CodeInvalidArgument {
				t.Fatalf("error code %s: %v", CodeOf(err), err)
			}
		}
	})
}

func FuzzParseDescriptors(f *testing.F) {
	sum := `"` + strings.Repeat("a", 64) + `"`
	f.Add([]byte(`{"version":1,"descriptors":[{"id":"x","rationale":"r","from_checksum":` + sum + `,"to_policy":{"graph":{},"edge_predicates":{},"terminal":[],"stakes":{}}}]}`))
	f.Add([]byte(`{"version":1,"descriptors":[]}`))
	f.Add([]byte(`{"version":2}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ds, err := parseDescriptors(data)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, d := range ds {
			if !isDescriptorID(d.ID) || seen[d.ID] || !isChecksum(d.FromChecksum) || blank(d.Rationale) || d.ToPolicy.Graph == nil {
				t.Fatalf("accepted an invalid descriptor %+v", d)
			}
			seen[d.ID] = true
		}
	})
}
