package engine

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unsafe"
)

// The state document holds the live part of a run only: between two
// points at the same place in the index's chunk cycle it grows by one seq
// per chunk of finished steps, never by the steps' states; and each
// finished step's state is written once.
func TestStateDocumentStaysSmall(t *testing.T) {
	h := newHarness(t, Options{})
	big := strings.Repeat("x", 2000)
	const n = 3*coldChunkSize + 20
	r := h.plan(linearN(n), map[string]any{})
	sizes := map[int]int{}
	for step := 1; r.Status == StatusReady; step++ {
		en := r.Ready[0]
		var err error
		r, err = h.e.StepDone(h.ctx, StepDoneRequest{RunID: r.RunID, StepID: en.ID, DispatchToken: en.DispatchToken,
			Result: StepResult{Output: js(map[string]any{"v": big})}})
		if err != nil {
			t.Fatal(err)
		}
		snap, err := h.store.Load(h.ctx, r.RunID)
		if err != nil {
			t.Fatal(err)
		}
		sizes[step] = len(snap.State)
		var d struct {
			Steps map[string]json.RawMessage `json:"steps"`
		}
		if err := json.Unmarshal(snap.State, &d); err != nil {
			t.Fatal(err)
		}
		for id, raw := range d.Steps {
			if strings.Contains(string(raw), `"succeeded"`) {
				t.Fatalf("after step %d: finished step %s is in the state document", step, id)
			}
		}
	}
	wantStatus(t, r, StatusCompleted)
	from, to := coldChunkSize+10, 3*coldChunkSize+10
	if grew := sizes[to] - sizes[from]; grew > 2*16 {
		t.Fatalf("the document grew by %d bytes over %d finished steps (sizes %d at step %d, %d at step %d)", grew, to-from, sizes[from], from, sizes[to], to)
	}
	written := 0
	for _, typ := range h.allEventTypes(r.RunID) {
		if typ == string(evStepState) {
			written++
		}
	}
	if written != n {
		t.Fatalf("%d finished-step records for %d steps, want one each", written, n)
	}
	// A fresh process reads the finished steps back from the log.
	e2 := h.reopen(Options{})
	a, err := e2.Audit(h.ctx, r.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Steps) != n || a.Steps["s30"].Status != StepSucceeded || !strings.Contains(jsonOf(t, a.Steps["s30"].Output.Data), big) {
		t.Fatalf("audit steps %d, s30 %s", len(a.Steps), dump(a.Steps["s30"])[:200])
	}
	for _, ev := range a.Events {
		if internalEvent(string(ev.Type)) {
			t.Fatalf("internal event %s in the audit", ev.Type)
		}
	}
}

// After a revert, tokens issued in the reverted future are refused.
func TestRevertRotatesTokens(t *testing.T) {
	h := newHarness(t, Options{})
	r := h.plan(twoSteps, map[string]any{"x": "X"})
	if _, err := h.e.Commit(h.ctx, r.RunID, "start"); err != nil {
		t.Fatal(err)
	}
	old := entry(t, r, "a").DispatchToken
	rv, err := h.e.Revert(h.ctx, r.RunID, "start")
	if err != nil {
		t.Fatal(err)
	}
	if entry(t, rv, "a").DispatchToken == old {
		t.Fatal("revert kept the ready step's token")
	}
	_, err = h.e.StepDone(h.ctx, StepDoneRequest{RunID: r.RunID, StepID: "a", DispatchToken: old, Result: StepResult{Output: json.RawMessage(`{"v":"A"}`)}})
	wantCode(t, err, ErrStaleToken)
	// A fresh process can revert too (the snapshot and finished steps are
	// read back from the log).
	r = h.ok(rv, "a", `{"v":"A"}`)
	if _, err := h.e.Commit(h.ctx, r.RunID, "mid"); err != nil {
		t.Fatal(err)
	}
	r = h.ok(r, "b", `{"v":"B"}`)
	e2 := h.reopen(Options{})
	rv, err = e2.Revert(h.ctx, r.RunID, "mid")
	if err != nil {
		t.Fatal(err)
	}
	if en := entry(t, rv, "b"); en.Do != "b A" {
		t.Fatalf("after revert %s", dump(rv))
	}
}

// A change to a finished step read back from the log is kept, whether or
// not the code that made it marked the step as changed; an unchanged one
// is not written again.
func TestLoadedFinishedStepChangeKept(t *testing.T) {
	h := newHarness(t, Options{})
	r := h.plan(linearN(3), map[string]any{})
	for r.Status == StatusReady {
		en := r.Ready[0]
		var err error
		r, err = h.e.StepDone(h.ctx, StepDoneRequest{RunID: r.RunID, StepID: en.ID, DispatchToken: en.DispatchToken,
			Result: StepResult{Output: js(map[string]any{"v": en.ID})}})
		if err != nil {
			t.Fatal(err)
		}
	}
	wantStatus(t, r, StatusCompleted)
	before := len(h.allEventTypes(r.RunID))
	for _, change := range []bool{false, true} {
		if _, err := h.e.mutate(h.ctx, r.RunID, func(tx *txn) error {
			root := tx.rootScope()
			st := root.peekID("s1")
			if st == nil || st.coldSeq == 0 {
				t.Fatalf("s1 was not read from the log: %+v", st)
			}
			if change {
				st.Spent.Dispatches += 7 // no touch(): settleLoaded must see it
				tx.emit(EventType("test.changed"), "s1", map[string]any{})
			}
			tx.engineWork = true
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if !change && len(h.allEventTypes(r.RunID)) != before {
			t.Fatalf("an unchanged finished step was written again: %v", h.allEventTypes(r.RunID)[before:])
		}
	}
	e2 := h.reopen(Options{})
	a, err := e2.Audit(h.ctx, r.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if got := a.Steps["s1"].Spent.Dispatches; got != 8 {
		t.Fatalf("s1 dispatches %v after the change, want 8", got)
	}
}

// A fanout's settled items move into records: the state document holds
// the live items and fewer than a chunk of settled ones, whatever the
// fanout's size; a fresh process reads every item back, in the middle of
// the fanout and at its end.
func TestFanoutItemsOutOfTheDocument(t *testing.T) {
	h := newHarness(t, Options{})
	const n = 5*fanoutChunkSize + 7
	items := make([]string, n)
	for i := range items {
		items[i] = fmt.Sprintf("item-%03d-%s", i, strings.Repeat("x", 100))
	}
	r := h.plan(fanoutSpec(4), map[string]any{"items": items})
	maxItems := 0
	for reported := 0; r.Status == StatusReady && r.Ready[0].FanoutItem != nil; reported++ {
		en := r.Ready[0]
		var err error
		r, err = h.e.StepDone(h.ctx, StepDoneRequest{RunID: r.RunID, StepID: en.ID, DispatchToken: en.DispatchToken,
			Result: StepResult{Output: js(map[string]any{"value": en.ID})}})
		if err != nil {
			t.Fatal(err)
		}
		snap, err := h.store.Load(h.ctx, r.RunID)
		if err != nil {
			t.Fatal(err)
		}
		var d struct {
			Steps map[string]struct {
				Fanout *struct {
					Over  json.RawMessage   `json:"over"`
					Items []json.RawMessage `json:"items"`
				} `json:"fanout"`
			} `json:"steps"`
		}
		if err := json.Unmarshal(snap.State, &d); err != nil {
			t.Fatal(err)
		}
		if f := d.Steps["fan"].Fanout; f != nil {
			maxItems = max(maxItems, len(f.Items))
			if f.Over != nil {
				t.Fatalf("after %d reports the document holds the fanout's array", reported+1)
			}
		}
		if reported == n/2 { // a fresh process continues from the middle
			e2 := h.reopen(Options{})
			a, err := e2.Audit(h.ctx, r.RunID)
			if err != nil {
				t.Fatal(err)
			}
			f := a.Steps["fan"].Fanout
			if len(f.Items) != n || f.Items[3].Status != StepSucceeded || jsonOf(t, f.Over.Data) != string(js(items)) {
				t.Fatalf("a fresh process reads %d items (item 3: %s)", len(f.Items), dump(f.Items[3]))
			}
			h.e = e2
		}
	}
	if maxItems >= fanoutChunkSize+4 || maxItems == 0 {
		t.Fatalf("the document held up to %d items of %d", maxItems, n)
	}
	en := entry(t, r, "after")
	r = h.report(r, en.ID, StepResult{Output: js(map[string]any{"value": "done"})})
	wantStatus(t, r, StatusCompleted)
	a := h.reopen(Options{})
	audit, err := a.Audit(h.ctx, r.RunID)
	if err != nil {
		t.Fatal(err)
	}
	f := audit.Steps["fan"].Fanout
	for i, it := range f.Items {
		if it.Index != i || it.Status != StepSucceeded || jsonOf(t, it.Output.Data) != fmt.Sprintf(`{"value":"fan/%d"}`, i) {
			t.Fatalf("item %d after completion: %s", i, dump(it))
		}
	}
	if len(f.Items) != n {
		t.Fatalf("%d items after completion, want %d", len(f.Items), n)
	}
}

// pristineItem must check every field of an item: an item that differs
// from a new one in any field is not left out of the document. Each
// field is set to a non-zero value in turn.
func TestPristineItemCoversEveryField(t *testing.T) {
	f := &fanoutState{Gen0: 7, ItemEpoch: 2}
	if !f.pristineItem(f.newItem(3)) {
		t.Fatal("a new item is not pristine")
	}
	typ := reflect.TypeOf(itemState{})
	for i := 0; i < typ.NumField(); i++ {
		it := f.newItem(3)
		v := reflect.ValueOf(it).Elem().Field(i)
		v = reflect.NewAt(v.Type(), unsafe.Pointer(v.UnsafeAddr())).Elem() // unexported fields too
		switch v.Kind() {
		case reflect.Bool:
			v.SetBool(!v.Bool())
		case reflect.Int, reflect.Int64:
			v.SetInt(v.Int() + 1)
		case reflect.String:
			v.SetString(v.String() + "x")
		case reflect.Slice:
			v.Set(reflect.Append(v, reflect.Zero(v.Type().Elem())))
		case reflect.Pointer:
			v.Set(reflect.New(v.Type().Elem()))
		case reflect.Struct: // Value
			v.FieldByName("Present").SetBool(true)
		default:
			t.Fatalf("field %s: kind %s not handled by this test", typ.Field(i).Name, v.Kind())
		}
		if f.pristineItem(it) {
			t.Errorf("an item with %s changed is taken for a new one", typ.Field(i).Name)
		}
	}
}
