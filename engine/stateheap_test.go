package engine

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/stratum-go/stratum/store"
)

// The decoded-state cache's estimate (runHeapEstimate) holds for the run
// states that take the most heap beside their document: a fanout's items
// (pristine, live, settled with small and large outputs), a cold index,
// a large input, many live steps. Each state is made by running the
// engine, then decoded by a second engine (whose plan cache has the plan
// and whose blob cache starts empty), and its live heap measured once the
// blob cache has let go of the payloads (the state keeps what it uses).
// The test does not run in parallel: the heap is the process's.
func TestRunStateHeapWithinEstimate(t *testing.T) {
	if testing.Short() {
		t.Skip("measures the heap of large run states")
	}
	items := func(n int) []string {
		s := make([]string, n)
		for i := range s {
			s[i] = fmt.Sprintf("item-%d", i)
		}
		return s
	}
	big := strings.Repeat("x", 1000)
	digits := make([]any, 100_000)
	for i := range digits {
		digits[i] = i % 10
	}
	objects := func(n, fields int) []any {
		s := make([]any, n)
		for i := range s {
			o := map[string]any{}
			for j := range fields {
				o[fmt.Sprintf("f%d", j)] = j
			}
			s[i] = o
		}
		return s
	}
	arrays := make([]any, 5000)
	for i := range arrays {
		a := make([]any, 30)
		for j := range a {
			a[j] = j
		}
		arrays[i] = a
	}
	records := make([]any, 5000)
	for i := range records {
		records[i] = map[string]any{"path": fmt.Sprintf("src/pkg/file%d.go", i), "lines": i, "owner": fmt.Sprintf("team-%d", i%7)}
	}
	declare := func(spec, decl string) string { return strings.Replace(spec, "input: {}", "input: {"+decl+"}", 1) }
	over := func(typ string) string {
		return strings.Replace(fanoutSpec(4), `input: {items: "string[]"}`, `input: {items: "`+typ+`[]"}`, 1)
	}
	cases := []struct {
		name   string
		spec   string
		input  map[string]any
		report int    // how many ready entries are reported, in order
		output string // the output of each
	}{
		{"2,000 steps ready", independentSteps(2000), map[string]any{}, 0, `{"v":"x"}`},
		{"10 steps ready, a 200 KB input", strings.Replace(independentSteps(10), "input: {}", "input: {notes: string}", 1), map[string]any{"notes": strings.Repeat("y", 200_000)}, 0, `{"v":"x"}`},
		{"10 steps ready, an input of 100,000 digits", declare(independentSteps(10), `digits: "integer[]"`), map[string]any{"digits": digits}, 0, `{"v":"x"}`},
		{"10 steps ready, an input of 5,000 records", declare(independentSteps(10), `records: "object[]"`), map[string]any{"records": records}, 0, `{"v":"x"}`},
		{"a fanout over 5,000 objects of 20 numbers", over("object"), map[string]any{"items": objects(5000, 20)}, 0, `{"value":"x"}`},
		{"a fanout over 5,000 arrays of 30 numbers", over("array"), map[string]any{"items": arrays}, 0, `{"value":"x"}`},
		{"a linear run at step 1,000 of 2,000", linearN(2000), map[string]any{}, 1000, `{"v":"x"}`},
		{"1,000 fanout items live", fanoutSpec(1000), map[string]any{"items": items(1000)}, 0, `{"value":"x"}`},
		{"5,000 fanout items, none started", fanoutSpec(4), map[string]any{"items": items(5000)}, 0, `{"value":"x"}`},
		{"5,000 fanout items, 2,500 settled", fanoutSpec(4), map[string]any{"items": items(5000)}, 2500, `{"value":"x"}`},
		{"5,000 fanout items, 2,500 settled with 1 KB outputs", fanoutSpec(4), map[string]any{"items": items(5000)}, 2500, `{"value":"` + big + `"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := t.Context()
			st := store.NewMemory()
			e := New(st, Options{})
			defer e.Close()
			in, err := json.Marshal(c.input)
			if err != nil {
				t.Fatal(err)
			}
			r, err := e.Plan(ctx, PlanRequest{Spec: []byte(c.spec), Input: in})
			if err != nil {
				t.Fatal(err)
			}
			ready := r.Ready
			for i := 0; i < c.report; i++ {
				if len(ready) == 0 {
					if r, err = e.Status(ctx, r.RunID); err != nil {
						t.Fatal(err)
					}
					ready = r.Ready
				}
				en := ready[0]
				ready = ready[1:]
				next, err := e.StepDone(ctx, StepDoneRequest{RunID: r.RunID, StepID: en.ID, DispatchToken: en.DispatchToken, Result: StepResult{Output: json.RawMessage(c.output)}, OnlyNew: true})
				if err != nil {
					t.Fatal(err)
				}
				if next.Status != StatusReady {
					t.Fatalf("report %d: run %s", i, next.Status)
				}
				ready = append(ready, next.Ready...)
			}
			snap, err := st.Load(ctx, r.RunID)
			if err != nil {
				t.Fatal(err)
			}
			reader := New(st, Options{})
			defer reader.Close()
			if _, err := reader.compileSource([]byte(c.spec)); err != nil {
				t.Fatal(err)
			}
			v, used, most := heapOf(t, func() any {
				got, err := reader.decodeRun(ctx, snap)
				if err != nil {
					t.Fatal(err)
				}
				reader.blobs = blobCache{} // the state keeps what it uses
				return got
			})
			rs := v.(*runState)
			estimate := runHeapEstimate(snap.State, rs)
			t.Logf("document %d bytes: %d bytes of heap, estimated %d (%.2fx)", len(snap.State), used, estimate, float64(estimate)/float64(used))
			if used > int64(estimate) {
				t.Errorf("a decoded state holds %d bytes, over the cache's estimate of %d", used, estimate)
			}
			// Typed parts of a document (a live item's fields) are counted as
			// if decoded into generic values, several times what they take.
			if int64(estimate) > 6*most {
				t.Errorf("a decoded state holds %d bytes, and the estimate of %d counts it more than 6 times over", most, estimate)
			}
			runtime.KeepAlive(rs)
			runtime.KeepAlive(snap)
		})
	}
}

// independentSteps: n steps with no dependencies, all ready at once.
func independentSteps(n int) string {
	var b strings.Builder
	b.WriteString(specHead(1))
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "      - {id: s%d, do: \"do task number %d\", out: V}\n", i, i)
	}
	return b.String()
}
