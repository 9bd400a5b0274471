package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratum-go/stratum/expr"
	"github.com/stratum-go/stratum/store"
)

// storeForm is v as the store keeps it: keys sorted at every level,
// numbers as written, no HTML escaping (docs/storage.md).
func storeForm(t *testing.T, v []byte) []byte {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	var x any
	if err := dec.Decode(&x); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(x); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// A value read back from the store's form with the order a ref records
// is the value written, key order included; a sorted one needs no order.
func TestKeyOrderRestoresTheValue(t *testing.T) {
	for _, tc := range []struct {
		json      string
		needOrder bool
	}{
		{`{"path":"x"}`, false},
		{`{"a":1,"b":{"c":[1,{"d":2,"e":3}]}}`, false},
		{`"text"`, false},
		{`[1,"two",null,true]`, false},
		{`{"z":1,"a":2}`, true},
		{`{"a":{"y":[{"q":1,"b":"<&>\u2028"}],"c":"x"},"k":1}`, true},
		{`[{"b":1,"a":2},3,[{"d":1,"c":{"f":1,"e":2}}]]`, true},
		// index keys come first, ascending, in both orders
		{`{"10":1,"2":2,"b":3,"a":4}`, true},
		{`{"10":1,"2":2,"a":3}`, false},
		{`{"":1,"é":2,"e":3}`, true},
		{`{"n":1e21,"m":0.1,"l":-0}`, true},
	} {
		v, err := expr.DecodeJSON([]byte(tc.json))
		if err != nil {
			t.Fatal(err)
		}
		want, _ := expr.EncodeJSON(v)
		o := orderOf(v)
		if (o != nil) != tc.needOrder {
			t.Errorf("%s: order %s, want one: %v", tc.json, dump(o), tc.needOrder)
		}
		// The order is itself kept in a record and read back.
		var back *keyOrder
		if err := json.Unmarshal(storeForm(t, []byte(dump(o))), &back); err != nil {
			t.Fatal(err)
		}
		stored, err := expr.DecodeJSON(storeForm(t, want))
		if err != nil {
			t.Fatal(err)
		}
		got, err := applyOrder(stored, back)
		if err != nil {
			t.Fatalf("%s: %v", tc.json, err)
		}
		if b, _ := expr.EncodeJSON(got); !bytes.Equal(b, want) {
			t.Errorf("%s: read back as %s", tc.json, b)
		}
		if !sameData(got, v) {
			t.Errorf("%s: sameData false for the value read back", tc.json)
		}
	}
}

// An order that does not fit the value read back is refused.
func TestKeyOrderMismatchRefused(t *testing.T) {
	v, _ := expr.DecodeJSON([]byte(`{"a":1,"b":2}`))
	for _, o := range []*keyOrder{
		{Keys: []string{"b"}},
		{Keys: []string{"b", "c"}},
		{Keys: []string{"b", "a", "c"}},
		{Sub: map[string]*keyOrder{"c": {Keys: []string{"x"}}}},
		{Sub: map[string]*keyOrder{"a": {Keys: []string{"x"}}}},
	} {
		if _, err := applyOrder(v, o); err == nil {
			t.Errorf("order %s applied to %s", dump(o), dump(v))
		}
	}
	arr, _ := expr.DecodeJSON([]byte(`[1]`))
	if _, err := applyOrder(arr, &keyOrder{Sub: map[string]*keyOrder{"1": {Keys: []string{"a"}}}}); err == nil {
		t.Error("an order for element 1 of a one-element array was applied")
	}
}

// sameData tells values apart by content and key order.
func TestSameData(t *testing.T) {
	dec := func(s string) any {
		v, err := expr.DecodeJSON([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{`{"a":1,"b":2}`, `{"a":1,"b":2}`, true},
		{`{"a":1,"b":2}`, `{"b":2,"a":1}`, false},
		{`{"a":[1,2]}`, `{"a":[1,3]}`, false},
		{`{"a":[1,2]}`, `{"a":[1,2,3]}`, false},
		{`1`, `"1"`, false},
		{`null`, `null`, true},
		{`null`, `false`, false},
		{`"x"`, `"x"`, true},
		{`true`, `true`, true},
	} {
		if got := sameData(dec(tc.a), dec(tc.b)); got != tc.same {
			t.Errorf("sameData(%s, %s) = %v", tc.a, tc.b, got)
		}
	}
}

// onceSpec is a two-step flow whose output is its second step's.
const onceSpec = `version: 1
contracts:
  V: {v: string, big: string, m: object}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${b.output}", contract: V}
    steps:
      - {id: a, do: a, out: V}
      - {id: b, do: "b after ${a.output.v}", after: [a], out: V}
`

// A large output is in the log once: in its result event. The step's
// record and the completed event refer to it; a fresh process reads the
// step's output (key order included) back from there, continues from it,
// and audits it as the process that wrote it does.
func TestResultStoredOnce(t *testing.T) {
	h := newFileHarness(t, Options{})
	big := func(tag string) string { return tag + strings.Repeat("x", 64<<10) }
	out := func(tag string) string {
		return fmt.Sprintf(`{"v":"%s","m":{"z":[{"b":1,"a":2}],"c":"<&>"},"big":"%s"}`, tag, big(tag))
	}
	r := h.plan(onceSpec, map[string]any{})
	r = h.ok(r, "a", out("A"))
	// Another process continues: a's output is read back from the log.
	e2 := h.reopen(Options{})
	en := entry(t, r, "b")
	if en.Do != "b after A" {
		t.Fatalf("b's task %q", en.Do)
	}
	r, err := e2.StepDone(h.ctx, StepDoneRequest{RunID: r.RunID, StepID: "b", DispatchToken: en.DispatchToken, Result: StepResult{Output: json.RawMessage(out("B"))}})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, r, StatusCompleted)
	log := readLog(t, h, r.RunID)
	for _, tag := range []string{"A", "B"} {
		if n := bytes.Count(log, []byte(big(tag))); n != 1 {
			t.Errorf("the output of step %s is %d times in the log, want once", strings.ToLower(tag), n)
		}
	}
	var audits [][]byte
	for _, e := range []*Engine{h.e, e2, h.reopen(Options{})} {
		a, err := e.Audit(h.ctx, r.RunID)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"a", "b"} {
			tag := strings.ToUpper(id)
			sv := a.Steps[id]
			if got, _ := expr.EncodeJSON(sv.Output.Data); string(got) != out(tag) {
				t.Fatalf("step %s's output read back as %.120s", id, got)
			}
			if got, _ := expr.EncodeJSON(sv.Attempts[0].Result.Data); string(got) != out(tag) {
				t.Fatalf("step %s's attempt's result read back as %.120s", id, got)
			}
		}
		var done CompletedDetail
		last := a.Events[len(a.Events)-1]
		if last.Type != EventCompleted || last.DecodeDetail(&done) != nil {
			t.Fatalf("last event %s", dump(last))
		}
		if !bytes.Contains(last.Detail, []byte(big("B"))) || !bytes.HasPrefix(last.Detail, []byte(`{"output":{"big":`)) {
			t.Fatalf("completed event shown as %.200s", last.Detail)
		}
		b, _ := json.Marshal(a)
		audits = append(audits, b)
	}
	for i := 1; i < len(audits); i++ {
		if !bytes.Equal(audits[0], audits[i]) {
			t.Fatalf("audit %d differs from the writer's", i)
		}
	}
	// Without the result events the audit's events pass kept, the steps
	// pass reads them from the log.
	defer func(n int) { maxKeptRecords = n }(maxKeptRecords)
	maxKeptRecords = 0
	a, err := h.reopen(Options{}).Audit(h.ctx, r.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(a); !bytes.Equal(b, audits[0]) {
		t.Fatal("audit without kept records differs")
	}
	if _, err := h.files.Verify(h.ctx, r.RunID, store.VerifyOptions{}); err != nil {
		t.Fatal(err)
	}
}

// readLog is the run's events.jsonl.
func readLog(t *testing.T, h *harness, runID string) []byte {
	t.Helper()
	var found []byte
	err := filepath.Walk(h.files.Root(), func(p string, info os.FileInfo, err error) error {
		if err == nil && info.Name() == "events.jsonl" && filepath.Base(filepath.Dir(p)) == runID {
			found, err = os.ReadFile(p)
		}
		return err
	})
	if err != nil || found == nil {
		t.Fatalf("no log of run %s: %v", runID, err)
	}
	return found
}

// A record whose ref names an event that is not a result is corrupt.
func TestRefToAnotherEventIsCorrupt(t *testing.T) {
	_, err := decodeStepRecord("r", "step record", []byte(`{"status":"succeeded","attempts":[],"outputRef":{"seq":2}}`),
		func(r *valueRef) (Value, error) {
			_, err := resultOf("r", store.Event{Seq: r.Seq, Type: string(EventPlanned), Data: []byte(`{"detail":{}}`)})
			return Value{}, err
		})
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("err %v, want ErrCorrupt", err)
	}
}
