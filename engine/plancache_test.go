package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/stratum-go/stratum/store"
)

// The plan cache keeps to its byte budget: distinct specs past it evict
// others, a spec larger than the whole budget is compiled and used but
// not kept, and the estimate never drifts from the plans it holds.
func TestPlanCacheBoundedByBytes(t *testing.T) {
	defer func(n int) { maxPlanBytes = n }(maxPlanBytes)
	e := New(nil, Options{})
	one, err := e.compileSource([]byte(linearN(20)))
	if err != nil {
		t.Fatal(err)
	}
	size := one.estimate
	maxPlanBytes = 3*size + size/2
	for i := 0; i < 8; i++ {
		spec := linearN(20) + fmt.Sprintf("# spec %d\n", i) // a comment: the same plan, the same digest
		if _, err := e.compileSource([]byte(spec)); err != nil {
			t.Fatal(err)
		}
		spec = linearN(20 + i) // a distinct plan
		if _, err := e.compileSource([]byte(spec)); err != nil {
			t.Fatal(err)
		}
		sum := 0
		for _, c := range e.plans {
			sum += c.estimate
		}
		if sum != e.planBytes || e.planBytes > maxPlanBytes || len(e.plans) > 3 {
			t.Fatalf("after %d specs: %d plans, %d bytes estimated, %d counted, budget %d", i+1, len(e.plans), e.planBytes, sum, maxPlanBytes)
		}
	}
	maxPlanBytes = size - 1
	e2 := New(nil, Options{})
	if c, err := e2.compileSource([]byte(linearN(20))); err != nil || c == nil || len(e2.plans) != 0 || e2.planBytes != 0 {
		t.Fatalf("a plan over the budget: %v, %d cached, %d bytes", err, len(e2.plans), e2.planBytes)
	}
}

// The decoded-state cache keeps to its byte budget: states past it evict
// others, a state larger than the whole budget is not kept, and the count
// never drifts from the states it holds.
func TestStateCacheBoundedByBytes(t *testing.T) {
	defer func(n int) { maxCachedRunBytes = n }(maxCachedRunBytes)
	e := New(store.NewMemory(), Options{})
	defer e.Close()
	ctx := t.Context()
	plan := func() string {
		r, err := e.Plan(ctx, PlanRequest{Spec: []byte(linearN(20)), Input: json.RawMessage(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		return r.RunID
	}
	first := plan()
	one := e.cache[first].size
	maxCachedRunBytes = 3*one + one/2
	for i := 0; i < 8; i++ {
		plan()
		sum := 0
		for _, c := range e.cache {
			sum += c.size
		}
		if sum != e.cacheBytes || e.cacheBytes > maxCachedRunBytes || len(e.cache) > 3 {
			t.Fatalf("after %d runs: %d states, %d bytes estimated, %d counted, budget %d", i+2, len(e.cache), e.cacheBytes, sum, maxCachedRunBytes)
		}
	}
	maxCachedRunBytes = one / 2 // a run's document varies by a few bytes (its times)
	id := plan()
	if _, ok := e.cache[id]; ok {
		t.Fatal("a state over the budget was kept")
	}
	if _, err := e.Status(ctx, id); err != nil {
		t.Fatalf("a state not kept is read again: %v", err)
	}
}

// A refusal of a call that asked for new entries only carries every ready
// entry whole, contracts included: only a success's answer leaves out the
// entries the caller has, and those alone are made without contracts.
func TestOnlyNewRefusalCarriesContracts(t *testing.T) {
	e := New(store.NewMemory(), Options{})
	defer e.Close()
	ctx := t.Context()
	r, err := e.Plan(ctx, PlanRequest{Spec: []byte(independentSteps(3)), Input: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.StepDone(ctx, StepDoneRequest{RunID: r.RunID, StepID: "s1", DispatchToken: "not-the-token",
		Result: StepResult{Output: json.RawMessage(`{"v":"x"}`)}, OnlyNew: true})
	var ee *Error
	if !errors.As(err, &ee) || ee.State == nil || len(ee.State.Ready) != 3 {
		t.Fatalf("a report with a wrong token: %v", err)
	}
	for _, en := range ee.State.Ready {
		if en.Contract == nil || en.Contract.Root != "V" {
			t.Errorf("the refusal's entry %s carries contract %+v", en.ID, en.Contract)
		}
	}
	next, err := e.StepDone(ctx, StepDoneRequest{RunID: r.RunID, StepID: "s1", DispatchToken: r.Ready[0].DispatchToken,
		Result: StepResult{Output: json.RawMessage(`{"v":"x"}`)}, OnlyNew: true})
	if err != nil || len(next.Ready) != 0 || next.StillReady != 2 {
		t.Fatalf("the answer to a report lists %d entries, %d still ready (%v)", len(next.Ready), next.StillReady, err)
	}
}
