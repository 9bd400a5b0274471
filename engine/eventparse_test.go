package engine

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stratum-go/stratum/expr"
)

// The hand-written readers of event data agree with encoding/json on the
// store's form of any value, wherever they answer.
func FuzzEventParse(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"stepId":"a"}`, `{"detail":{"attempt":1},"stepId":"a"}`, `{"detail":"x\",\"stepId\":\"y"}`,
		`{"detail":{"a":{"stepId":"x"}}}`, `{"detail":{"json":"{\"a\":\"<\\u0026>\\n\\ud83d\\ude00\"}"},"stepId":"s/1"}`,
		`{"detail":{"json":"{}","revisionDigest":"ab"}}`, `{"detail":{"attempt":12,"result":{"b":[1,{"result":2}]}},"stepId":"x"}`,
		`{"detail":{"attempt":1,"failure":{"reason":"r"},"result":1}}`, `{"detail":[1,"stepId"],"stepId":"q\"x"}`,
		`{"detail":{"json":"\ud800"}}`, `{"detail":"line\nnext\u0001\r\"\\"}`, `{"detail":{"json":"\u00e9\t\b\f\/"}}`,
	} {
		f.Add([]byte(s))
	}
	// Members sorted between detail and stepId.
	for _, s := range []string{`{"detail":1,"other":"x","stepId":"s"}`, `{"detail":{"a":1},"owner":"o"}`,
		`{"detail":"a\"b","p":[1],"stepId":"s"}`, `{"detail":[1,[2]],"q":null,"stepId":"s"}`, `{"detail":true,"r":{},"stepId":"s"}`,
		`{"detail":-1.5e3,"r":"s","stepId":"s"}`,
		// Members sorted after result in a result detail.
		`{"detail":{"attempt":1,"result":{"a":1},"usage":{"ms":5}},"stepId":"s"}`, `{"detail":{"attempt":1,"result":1,"zzz":2}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if !json.Valid(in) {
			return
		}
		data := storeForm(t, in)
		var want struct {
			StepID any             `json:"stepId"`
			Detail json.RawMessage `json:"detail"`
		}
		wantErr := json.Unmarshal(data, &want)
		if id, detail, ok := splitEventData(data); ok {
			if wantErr != nil {
				t.Fatalf("%s: split, encoding/json says %v", data, wantErr)
			}
			ws, _ := want.StepID.(string)
			if id != ws || !bytes.Equal(detail, want.Detail) {
				t.Fatalf("%s: split (%q, %s), encoding/json (%v, %s)", data, id, detail, want.StepID, want.Detail)
			}
		}
		if wantErr != nil || len(want.Detail) == 0 {
			return
		}
		var d struct {
			JSON   *string         `json:"json"`
			Result json.RawMessage `json:"result"`
		}
		derr := json.Unmarshal(want.Detail, &d)
		if p, ok := recordJSON(want.Detail); ok {
			if derr != nil || d.JSON == nil || string(p) != *d.JSON {
				t.Fatalf("%s: record payload %q, encoding/json %v %v", want.Detail, p, d.JSON, derr)
			}
		}
		if r, ok := loggedResultOf(want.Detail); ok {
			if derr != nil || !bytes.Equal(r, d.Result) {
				t.Fatalf("%s: result %s, encoding/json %s %v", want.Detail, r, d.Result, derr)
			}
		}
		var s string
		serr := json.Unmarshal(want.Detail, &s)
		if u, ok := expr.UnquoteJSON(want.Detail); ok && (serr != nil || u != s) {
			t.Fatalf("%s: unquoted %q, encoding/json %q %v", want.Detail, u, s, serr)
		}
	})
}

// parseColdRefs reads what encoding/json reads, wherever it answers.
func FuzzColdRefs(f *testing.F) {
	for _, s := range []string{`[]`, `[{"id":"s1","seq":8,"status":"succeeded"},{"id":"s2","seq":12}]`,
		`[{"id":"a\"b","seq":1}]`, `[{"id":"s","seq":01}]`, `[{"id":"s","seq":1,"status":""}]`, `[{"id":"s","seq":1},]`,
		`[{"id":"s","seq":99999999999999999999}]`, `[{"id":"s","seq":1,"extra":1}]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, ok := parseColdRefs(b)
		if !ok {
			return
		}
		var want []coldRef
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatalf("%s: parsed as %v, encoding/json says %v", b, got, err)
		}
		if len(want) == 0 && len(got) == 0 {
			return
		}
		if dump(got) != dump(want) {
			t.Fatalf("%s: parsed as %s, encoding/json %s", b, dump(got), dump(want))
		}
	})
}
