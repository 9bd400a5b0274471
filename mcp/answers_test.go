package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// fanoutGateSpec is a consumer fanout over input.files followed by a gate.
const fanoutGateSpec = `version: 1
contracts:
  Note: {text: string}
  Notes: {notes: "Note[]"}
flows:
  entry: main
  main:
    input: {files: "string[]"}
    max_rounds: 1
    output: {from: "${collect.output}", contract: Notes}
    steps:
      - id: read
        fanout:
          over: "${input.files}"
          dispatch: consumer
          isolation: none
          merge: sequential
          concurrency: 4
          require: all
          steps:
            - do: "Summarise ${item}"
              out: Note
      - id: review
        after: [read]
        gate: {on_approve: null, on_revise: read, on_kill: null}
      - id: collect
        after: [review]
        set:
          notes: "result.read"
        out: Notes
`

// answerBytes drives a consumer fanout of n items and a gate over stdio
// as a model would (keeping the entries each answer gives it), and
// returns the bytes of every answer: text content plus structured
// content, as they travel to the client.
func answerBytes(t *testing.T, n int) (text, structured int) {
	p := startServer(t, t.TempDir())
	files := make([]string, n)
	for i := range files {
		files[i] = fmt.Sprintf("src/file%03d.go", i)
	}
	measure := func(name string, args any) map[string]any {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		defer cancel()
		res, err := p.cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %v", name, err, res)
		}
		text += len(res.Content[0].(*sdk.TextContent).Text)
		b, _ := json.Marshal(res.StructuredContent)
		structured += len(b)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		return m
	}
	state := measure("stratum_plan", map[string]any{"spec": fanoutGateSpec, "input": map[string]any{"files": files}})
	runID := state["runId"]
	var queue []map[string]any
	for state["status"] == "ready" {
		for _, e := range state["ready"].([]any) {
			queue = append(queue, e.(map[string]any))
		}
		if len(queue) == 0 {
			t.Fatalf("status ready but no entry to work on: %v", state)
		}
		en := queue[0]
		queue = queue[1:]
		state = measure("stratum_step_done", map[string]any{"runId": runID, "stepId": en["id"], "dispatchToken": en["dispatchToken"],
			"result": map[string]any{"output": map[string]any{"text": "ok"}}})
	}
	gates := measure("stratum_gates", map[string]any{"runId": runID})["gates"].([]any)
	g := gates[0].(map[string]any)
	state = measure("stratum_gate_resolve", map[string]any{"runId": runID, "stepId": "review", "decision": "approve",
		"gateToken": g["gateToken"], "digest": g["digest"]})
	if state["status"] != "completed" {
		t.Fatalf("final state %v", state)
	}
	return text, structured
}

// The answers to a run grow linearly with its items: each report's
// answer carries what that report changed, not everything pending. The
// gate view shows every item's output (bounded by the view's limit), so
// it is linear in the items too.
func TestAnswersGrowLinearly(t *testing.T) {
	if testing.Short() {
		t.Skip("drives three runs over stdio")
	}
	per := map[int]float64{}
	for _, n := range []int{10, 50, 200} {
		text, structured := answerBytes(t, n)
		per[n] = float64(text+structured) / float64(n)
		t.Logf("%3d items + a gate: %7d bytes of text answers, %7d of structured content, %6.0f bytes per item (text ~%d tokens)",
			n, text, structured, per[n], text/4)
	}
	for _, n := range []int{50, 200} {
		if per[n] > 1.5*per[10] {
			t.Errorf("answer bytes per item grow with the run: %.0f at %d items against %.0f at 10", per[n], n, per[10])
		}
	}
}
