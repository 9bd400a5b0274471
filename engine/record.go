package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/stratum-go/stratum/expr"
	"github.com/stratum-go/stratum/store"
)

// A result is stored once (docs/engine.md, "What is persisted"): the
// result event that accepted an output keeps it, since it is the audit's
// primary record and must read the same to anyone; the engine's own
// records refer to it. A finished step's record (engine.step_state) holds
// a resultRef in place of each attempt's result that a result event holds
// and an outputRef in place of its output, and the completed event holds
// outputOf, the seq of the result event whose result is the flow's output,
// in place of the output. Readers put the value back: a cold load reads
// the event (through the blob cache), an audit takes it from the events it
// has just read, and the completed event is shown with its output.
//
// The store keeps events in a canonical form with object keys sorted, and
// the order of an output's keys is part of the output: a ref carries the
// order of the objects whose keys the store's form does not keep
// (keyOrder), nothing for the usual value whose keys are already sorted.

// valueRef stands for a value held by the result event Seq (its
// detail.result), with Order restoring its key order.
type valueRef struct {
	Seq   int64     `json:"seq"`
	Order *keyOrder `json:"order,omitempty"`
	// data is the value the ref stands for: a ref is written only for a
	// value that is still this one (see sameData).
	data any
}

// keyOrder is the order of an object's keys where the store's canonical
// form loses it, for a value and its members.
type keyOrder struct {
	// Keys are an object's keys that are not array indices, in their
	// order, when that order is not sorted (index keys always come
	// first, ascending: see expr.Object).
	Keys []string `json:"k,omitempty"`
	// Sub holds the orders of members (by key) or elements (by decimal
	// index) that need one.
	Sub map[string]*keyOrder `json:"s,omitempty"`
}

// orderOf is the key order of v that its canonical form loses (nil: none).
func orderOf(v any) *keyOrder {
	var o keyOrder
	switch x := v.(type) {
	case *expr.Object:
		keys := x.Keys()
		var named []string
		sorted := true
		for _, k := range keys {
			if _, index := arrayIndexKey(k); index {
				continue
			}
			if len(named) > 0 && k < named[len(named)-1] {
				sorted = false
			}
			named = append(named, k)
		}
		if !sorted {
			o.Keys = named
		}
		for _, k := range keys {
			m, _ := x.Get(k)
			if sub := orderOf(m); sub != nil {
				if o.Sub == nil {
					o.Sub = map[string]*keyOrder{}
				}
				o.Sub[k] = sub
			}
		}
	case []any:
		for i, m := range x {
			if sub := orderOf(m); sub != nil {
				if o.Sub == nil {
					o.Sub = map[string]*keyOrder{}
				}
				o.Sub[strconv.Itoa(i)] = sub
			}
		}
	default:
		return nil
	}
	if o.Keys == nil && o.Sub == nil {
		return nil
	}
	return &o
}

// arrayIndexKey reports a key expr.Object orders as an array index.
func arrayIndexKey(k string) (uint64, bool) {
	if len(k) == 0 || len(k) > 10 || (k[0] == '0' && len(k) > 1) {
		return 0, false
	}
	n, err := strconv.ParseUint(k, 10, 64)
	return n, err == nil && n <= 4294967294
}

// applyOrder gives v (as decoded from its canonical form) the key order o
// records. An order that does not fit the value is an error (a corrupt
// record).
func applyOrder(v any, o *keyOrder) (any, error) {
	if o == nil {
		return v, nil
	}
	switch x := v.(type) {
	case *expr.Object:
		out := x
		if o.Keys != nil {
			keys := x.Keys()
			out = expr.NewObject(len(keys))
			for _, k := range keys {
				if _, index := arrayIndexKey(k); index {
					m, _ := x.Get(k)
					out.Set(k, m)
				}
			}
			for _, k := range o.Keys {
				m, ok := x.Get(k)
				if !ok {
					return nil, fmt.Errorf("key order names %q, which the value does not have", k)
				}
				out.Set(k, m)
			}
			if out.Len() != len(keys) {
				return nil, fmt.Errorf("key order has %d keys for an object of %d", out.Len(), len(keys))
			}
		}
		for k, sub := range o.Sub {
			m, ok := out.Get(k)
			if !ok {
				return nil, fmt.Errorf("key order for member %q, which the value does not have", k)
			}
			m, err := applyOrder(m, sub)
			if err != nil {
				return nil, err
			}
			out.Set(k, m)
		}
		return out, nil
	case []any:
		if o.Keys != nil {
			return nil, fmt.Errorf("key order of an object for an array")
		}
		for k, sub := range o.Sub {
			i, err := strconv.Atoi(k)
			if err != nil || i < 0 || i >= len(x) {
				return nil, fmt.Errorf("key order for element %q of an array of %d", k, len(x))
			}
			if x[i], err = applyOrder(x[i], sub); err != nil {
				return nil, err
			}
		}
		return x, nil
	}
	return nil, fmt.Errorf("key order for a value that is neither an object nor an array")
}

// sameData reports whether a and b are the same value in the same key
// order (a record may refer to a logged value only while it is still that
// value).
func sameData(a, b any) bool {
	switch x := a.(type) {
	case *expr.Object:
		y, ok := b.(*expr.Object)
		if !ok {
			return false
		}
		if x == y {
			return true
		}
		kx, ky := x.Keys(), y.Keys()
		if len(kx) != len(ky) {
			return false
		}
		for i, k := range kx {
			if ky[i] != k {
				return false
			}
			mx, _ := x.Get(k)
			my, _ := y.Get(k)
			if !sameData(mx, my) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameData(x[i], y[i]) {
				return false
			}
		}
		return true
	case string:
		y, ok := b.(string)
		return ok && x == y
	case float64:
		y, ok := b.(float64)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case nil:
		return b == nil
	}
	return false
}

// recordAttempt is an attempt as a step record holds it.
type recordAttempt struct {
	Attempt
	Result    Value     `json:"result,omitzero"`
	ResultRef *valueRef `json:"resultRef,omitempty"`
}

// stepRecord is a finished step's state as its engine.step_state record
// holds it: the results a result event holds, referred to.
type stepRecord struct {
	*stepState
	Attempts  []recordAttempt `json:"attempts"`
	Output    Value           `json:"output,omitzero"`
	OutputRef *valueRef       `json:"outputRef,omitempty"`
}

// encodeStepRecord is the JSON of ss as its record holds it.
func encodeStepRecord(ss *stepState) ([]byte, error) {
	rec := stepRecord{stepState: ss, Attempts: make([]recordAttempt, len(ss.Attempts)), Output: ss.Output}
	for i, a := range ss.Attempts {
		rec.Attempts[i] = recordAttempt{Attempt: a, Result: a.Result}
		if r := a.resultRef; r != nil && a.Result.Present && sameData(r.data, a.Result.Data) {
			rec.Attempts[i].Result, rec.Attempts[i].ResultRef = Value{}, r
		}
	}
	if r := ss.outputRef; r != nil && ss.Output.Present && sameData(r.data, ss.Output.Data) {
		rec.Output, rec.OutputRef = Value{}, r
	}
	return json.Marshal(rec)
}

// refResolver gives the value a ref stands for.
type refResolver func(*valueRef) (Value, error)

// decodeStepRecord reads a step record (of either form: with refs, or
// every value in full as records were first written).
// what names the record in errors.
func decodeStepRecord(runID, what string, raw []byte, resolve refResolver) (*stepState, error) {
	ss := &stepState{}
	rec := stepRecord{stepState: ss}
	if !fastStepRecord(raw, &rec) {
		*ss = stepState{}
		rec = stepRecord{stepState: ss}
		if err := json.Unmarshal(raw, &rec); err != nil {
			return nil, fmt.Errorf("run %s: %w: %s: %v", runID, ErrCorrupt, what, err)
		}
	}
	// One value per event, shared as it was written; a record refers to
	// one or two (an attempt's result and the output), so a slice.
	var resolved []*valueRef
	get := func(r *valueRef) (Value, error) {
		for _, was := range resolved {
			if was.Seq == r.Seq && orderEqual(was.Order, r.Order) {
				r.data = was.data
				return Some(was.data), nil
			}
		}
		v, err := resolve(r)
		if err != nil {
			return Value{}, err
		}
		r.data = v.Data
		resolved = append(resolved, r)
		return v, nil
	}
	ss.Attempts = make([]Attempt, len(rec.Attempts))
	for i, ra := range rec.Attempts {
		a := ra.Attempt
		a.Result = ra.Result
		if ra.ResultRef != nil {
			v, err := get(ra.ResultRef)
			if err != nil {
				return nil, fmt.Errorf("%s, result of attempt %d: %w", what, a.Attempt, err)
			}
			a.Result, a.resultRef = v, ra.ResultRef
		}
		ss.Attempts[i] = a
	}
	ss.Output = rec.Output
	if rec.OutputRef != nil {
		v, err := get(rec.OutputRef)
		if err != nil {
			return nil, fmt.Errorf("%s, output: %w", what, err)
		}
		ss.Output, ss.outputRef = v, rec.OutputRef
	}
	return ss, nil
}

func orderEqual(a, b *keyOrder) bool {
	if a == nil || b == nil {
		return a == b
	}
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// loggedResult is the detail.result of result event seq, in the store's
// canonical form, from the blob cache or the store.
func (e *Engine) loggedResult(ctx context.Context, runID string, seq int64) ([]byte, error) {
	if raw, ok := e.blobs.getResult(runID, seq); ok {
		return raw, nil
	}
	ev, err := e.store.Event(ctx, runID, seq)
	if err != nil {
		return nil, mapStoreErr(runID, fmt.Errorf("result event %d: %w", seq, err))
	}
	raw, err := resultOf(runID, ev)
	if err != nil {
		return nil, err
	}
	e.blobs.putResult(runID, seq, raw)
	return raw, nil
}

// resultOf is the detail.result of a result event read from the log.
func resultOf(runID string, ev store.Event) ([]byte, error) {
	if ev.Type != string(EventResult) {
		return nil, fmt.Errorf("run %s: %w: event %d is %s, not the result a record refers to", runID, ErrCorrupt, ev.Seq, ev.Type)
	}
	_, detail, err := eventData(ev.Data)
	if err == nil {
		if r, ok := loggedResultOf(detail); ok {
			return r, nil
		}
	}
	var d struct {
		Result json.RawMessage `json:"result"`
	}
	if err != nil || json.Unmarshal(detail, &d) != nil || len(d.Result) == 0 {
		return nil, fmt.Errorf("run %s: %w: result event %d holds no result", runID, ErrCorrupt, ev.Seq)
	}
	return d.Result, nil
}

// refValue is the value a ref stands for, given the logged result.
func refValue(runID string, r *valueRef, logged []byte) (Value, error) {
	d, err := expr.DecodeJSON(logged)
	if err != nil {
		return Value{}, fmt.Errorf("run %s: %w: result event %d: %v", runID, ErrCorrupt, r.Seq, err)
	}
	if d, err = applyOrder(d, r.Order); err != nil {
		return Value{}, fmt.Errorf("run %s: %w: result event %d: %v", runID, ErrCorrupt, r.Seq, err)
	}
	return Some(d), nil
}

// storeResolver resolves refs from the log (through the blob cache).
func (e *Engine) storeResolver(ctx context.Context, runID string) refResolver {
	return func(r *valueRef) (Value, error) {
		logged, err := e.loggedResult(ctx, runID, r.Seq)
		if err != nil {
			return Value{}, err
		}
		return refValue(runID, r, logged)
	}
}

// linkResults gives the attempts and outputs of the finished steps about
// to be recorded a ref to the result event of this transition that holds
// the same value, and the completed event of this transition, when the
// flow's output is such a value, outputOf in place of the output.
func (t *txn) linkResults(finished []*stepStateOf) error {
	type logged struct {
		seq int64
		raw []byte
	}
	results := map[string]map[int]logged{}
	completed := -1
	for i, ev := range t.events {
		switch EventType(ev.Type) {
		case EventResult:
			var d struct {
				StepID string `json:"stepId"`
				Detail struct {
					Attempt int             `json:"attempt"`
					Result  json.RawMessage `json:"result"`
				} `json:"detail"`
			}
			if json.Unmarshal(ev.Data, &d) != nil || len(d.Detail.Result) == 0 {
				continue
			}
			if results[d.StepID] == nil {
				results[d.StepID] = map[int]logged{}
			}
			results[d.StepID][d.Detail.Attempt] = logged{seq: t.headSeq + int64(i) + 1, raw: d.Detail.Result}
		case EventCompleted:
			completed = i
		}
	}
	for _, f := range finished {
		byAttempt := results[f.id]
		ss := f.ss
		for i := range ss.Attempts {
			a := &ss.Attempts[i]
			if a.resultRef != nil || !a.Result.Present {
				continue
			}
			l, ok := byAttempt[a.Attempt]
			if !ok {
				continue
			}
			b, err := json.Marshal(a.Result)
			if err != nil {
				return fmt.Errorf("encode result of step %s: %w", f.id, err)
			}
			if bytes.Equal(b, l.raw) {
				a.resultRef = &valueRef{Seq: l.seq, Order: orderOf(a.Result.Data), data: a.Result.Data}
			}
		}
		if ss.Output.Present && (ss.outputRef == nil || !sameData(ss.outputRef.data, ss.Output.Data)) {
			ss.outputRef = nil
			for i := len(ss.Attempts) - 1; i >= 0; i-- {
				if r := ss.Attempts[i].resultRef; r != nil && sameData(r.data, ss.Output.Data) {
					ss.outputRef = r
					break
				}
			}
		}
	}
	if completed >= 0 && t.st.Output.Present {
		if r := t.refTo(t.st.Output.Data, finished); r != nil {
			raw, err := json.Marshal(map[string]any{"detail": map[string]int64{"outputOf": r.Seq}})
			if err != nil {
				return err
			}
			t.events[completed].Data = raw
		}
	}
	return nil
}

// stepStateOf is a root step's state and id.
type stepStateOf struct {
	id string
	ss *stepState
}

// refTo finds a ref, among the root steps of this transition, to a value
// the same as v.
func (t *txn) refTo(v any, finished []*stepStateOf) *valueRef {
	check := func(ss *stepState) *valueRef {
		if r := ss.outputRef; r != nil && sameData(r.data, ss.Output.Data) && sameData(r.data, v) {
			return r
		}
		for i := len(ss.Attempts) - 1; i >= 0; i-- {
			a := ss.Attempts[i]
			if r := a.resultRef; r != nil && sameData(r.data, a.Result.Data) && sameData(r.data, v) {
				return r
			}
		}
		return nil
	}
	for _, f := range finished {
		if r := check(f.ss); r != nil {
			return r
		}
	}
	for _, ss := range t.st.Steps {
		if r := check(ss); r != nil {
			return r
		}
	}
	return nil
}

// completedOutput puts back the output of a completed event that refers
// to a result event (outputOf): its detail is then what it would have
// been with the output written in it (the store's canonical form of
// {"output": …}). logged gives the result event's detail.result.
func completedOutput(detail json.RawMessage, logged func(seq int64) ([]byte, error)) (json.RawMessage, error) {
	if !bytes.HasPrefix(detail, []byte(`{"outputOf":`)) {
		return detail, nil
	}
	var d struct {
		OutputOf int64 `json:"outputOf"`
	}
	if err := json.Unmarshal(detail, &d); err != nil || d.OutputOf <= 0 {
		return nil, fmt.Errorf("%w: completed event with a bad outputOf: %s", ErrCorrupt, detail)
	}
	raw, err := logged(d.OutputOf)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(raw)+len(`{"output":}`))
	out = append(out, `{"output":`...)
	out = append(out, raw...)
	return append(out, '}'), nil
}
