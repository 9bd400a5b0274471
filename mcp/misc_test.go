package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gofrs/flock"
	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stratum-go/stratum/engine"
)

// TestProtocolVersions runs a short run under the oldest protocol version
// deployed agents still speak and under the newest.
func TestProtocolVersions(t *testing.T) {
	for _, v := range []string{"2025-03-26", "2025-06-18", "2025-11-25", ""} {
		t.Run("v"+v, func(t *testing.T) {
			f := newFixtureWith(t, fixtureOpts{protocol: v})
			r := f.plan(linearSpec, map[string]any{"topic": "v"}).mustStatus(t, "ready")
			r = f.done(r, "outline", outline).mustStatus(t, "ready")
			f.done(r, "draft", map[string]any{"text": "t", "words": 2}).mustStatus(t, "completed")
			f.call("stratum_audit", map[string]any{"runId": "nope"}).mustError(t, "run_not_found")
		})
	}
}

// TestDescriptionExamples checks the example in each tool's description
// is a well-formed call: JSON that the tool's input schema accepts; the
// validate example is a valid spec.
func TestDescriptionExamples(t *testing.T) {
	f := newFixture(t)
	res, err := f.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^Example: (stratum_\w+) (\{.*\})$`)
	for _, tl := range res.Tools {
		m := re.FindStringSubmatch(tl.Description)
		if m == nil || m[1] != tl.Name {
			t.Errorf("%s: no one-line example of itself", tl.Name)
			continue
		}
		var args map[string]any
		if err := json.Unmarshal([]byte(m[2]), &args); err != nil {
			t.Errorf("%s: example is not JSON: %v", tl.Name, err)
			continue
		}
		b, _ := json.Marshal(tl.InputSchema)
		var s jsonschema.Schema
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		rs, err := s.Resolve(nil)
		if err != nil {
			t.Fatal(err)
		}
		var v any = args
		if err := rs.Validate(&v); err != nil {
			t.Errorf("%s: example does not fit the input schema: %v", tl.Name, err)
		}
		if tl.Name == "stratum_validate" {
			f.call(tl.Name, args).mustStatus(t, "valid")
		}
	}
}

// TestStrictSchemas makes sure the closed schemas the tests check answers
// against do refuse an undeclared field (the check is not vacuous).
func TestStrictSchemas(t *testing.T) {
	f := newFixture(t)
	for name, rs := range f.strict {
		var v any = map[string]any{"status": "error", "undeclared": 1}
		if err := rs.Validate(&v); err == nil {
			t.Errorf("%s: closed schema accepts an undeclared field", name)
		}
	}
	r := f.plan(linearSpec, map[string]any{"topic": "x"})
	var v any = r.Body
	v.(map[string]any)["ready"].([]any)[0].(map[string]any)["extra"] = true
	if err := f.strict["stratum_plan"].Validate(&v); err == nil {
		t.Error("closed schema accepts an undeclared field in a ready entry")
	}
}

// TestPanicIsAnAnswer: a handler that panics yields an internal error
// result, and the server keeps serving.
func TestPanicIsAnAnswer(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	s := newServer(nil, log)
	boom := newTool(s, toolMeta{name: "stratum_boom", title: "boom", description: "Example: stratum_boom {}", statuses: []string{"ok"}},
		func(ctx context.Context, c *call, in struct{}) (*ValidateResult, error) { panic("kaboom") })
	fails := newTool(s, toolMeta{name: "stratum_fails", title: "fails", description: "Example: stratum_fails {}", statuses: []string{"ok"}},
		func(ctx context.Context, c *call, in struct{}) (*ValidateResult, error) {
			return nil, errors.New("disk on fire")
		})
	srv := sdk.NewServer(&sdk.Implementation{Name: "t", Version: "0"}, nil)
	boom.add(srv)
	fails.add(srv)
	st, ct := sdk.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "c", Version: "0"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cs.Close(); ss.Wait() }()
	strict := map[string]*jsonschema.Resolved{}
	for i := 0; i < 2; i++ {
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "stratum_boom", Arguments: map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		r := checkResult(t, strict, "stratum_boom", res).mustError(t, CodeInternal)
		if !strings.Contains(r.Text, "kaboom") {
			t.Errorf("panic message lost: %s", r.Text)
		}
	}
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "stratum_fails", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, strict, "stratum_fails", res).mustError(t, CodeInternal)
}

// TestRunLocked: a run whose lock another process holds past the lock
// timeout is refused with run_locked, and works again once released.
func TestRunLocked(t *testing.T) {
	f := newFixtureWith(t, fixtureOpts{lockTimeout: 100 * time.Millisecond})
	r := f.plan(linearSpec, map[string]any{"topic": "x"})
	run := runID(t, r)
	lk := flock.New(filepath.Join(f.root, run, "run.lock"))
	if ok, err := lk.TryLock(); !ok || err != nil {
		t.Fatalf("take the run lock: %v %v", ok, err)
	}
	f.done(r, "outline", outline).mustError(t, "run_locked")
	if err := lk.Unlock(); err != nil {
		t.Fatal(err)
	}
	f.done(r, "outline", outline).mustStatus(t, "ready")
}

// TestCancelledCall: a call whose client gives up does not take the
// server down.
func TestCancelledCall(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := f.cs.CallTool(ctx, &sdk.CallToolParams{Name: "stratum_validate", Arguments: map[string]any{"spec": linearSpec}}); err == nil {
		t.Error("a call with a cancelled context succeeded")
	}
	f.call("stratum_validate", map[string]any{"spec": linearSpec}).mustStatus(t, "valid")
}

// TestExampleMCPConfig: examples/mcp.json is a Claude Code .mcp.json
// that starts `stratum mcp`.
func TestExampleMCPConfig(t *testing.T) {
	var cfg struct {
		MCPServers map[string]struct {
			Type    string   `json:"type"`
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(readExample(t, "mcp.json")), &cfg); err != nil {
		t.Fatal(err)
	}
	s, ok := cfg.MCPServers["stratum"]
	if !ok || s.Command != "stratum" || strings.Join(s.Args, " ") != "mcp" || (s.Type != "" && s.Type != "stdio") {
		t.Errorf("examples/mcp.json: %+v", cfg)
	}
}

// TestCorruptRun: a run whose state fails its integrity check is refused
// with run_corrupt by every tool that reads it.
func TestCorruptRun(t *testing.T) {
	f := newFixture(t)
	run := runID(t, f.plan(linearSpec, map[string]any{"topic": "x"}))
	p := filepath.Join(f.root, run, "state.json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x55
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"stratum_audit", "stratum_resume", "stratum_flow_poll"} {
		f.call(tool, map[string]any{"runId": run}).mustError(t, "run_corrupt")
	}
}

// gatedAgent is an engine dispatcher whose agent is a real child process
// that answers only once the file release exists.
type gatedAgent struct{ release string }

func (g gatedAgent) Dispatch(ctx context.Context, req engine.DispatchRequest) (engine.DispatchResult, error) {
	cmd := exec.CommandContext(ctx, "sh", "-c", `while [ ! -e "$1" ]; do sleep 0.01; done; printf '{"value":"done"}'`, "sh", g.release)
	out, err := cmd.Output()
	if err != nil {
		return engine.DispatchResult{}, err
	}
	return engine.DispatchResult{Output: json.RawMessage(out)}, nil
}

// TestFanoutInFlight: checkpoints wait for a running engine fanout, which
// the client follows with stratum_flow_poll until the run completes.
func TestFanoutInFlight(t *testing.T) {
	release := filepath.Join(t.TempDir(), "release")
	f := newFixtureWith(t, fixtureOpts{engine: engine.Options{Dispatcher: gatedAgent{release: release}}})
	spec := `version: 1
contracts:
  Item: {value: string}
flows:
  entry: main
  main:
    input: {items: "string[]"}
    output: {from: "${fan.output[0]}", contract: Item}
    steps:
      - id: fan
        fanout:
          over: "${input.items}"
          concurrency: 2
          isolation: none
          require: all
          merge: sequential
          steps:
            - do: "Do ${item}"
              out: Item
`
	r := f.plan(spec, map[string]any{"items": []any{"a", "b"}}).mustStatus(t, "running")
	run := runID(t, r)
	if w := r.Body["waiting"].([]any); len(w) != 1 || w[0].(map[string]any)["kind"] != "fanout" {
		t.Fatalf("waiting: %s", r.Text)
	}
	f.call("stratum_commit", map[string]any{"runId": run, "label": "x"}).mustError(t, "fanout_in_flight")
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	d := newDriver(t, f.call)
	end := d.drive(f.call("stratum_flow_poll", map[string]any{"runId": run})).mustStatus(t, "completed")
	if !strings.Contains(end.Text, `"output":{"value":"done"}`) {
		t.Errorf("fanout output: %s", end.Text)
	}
	f.call("stratum_commit", map[string]any{"runId": run, "label": "x"}).mustStatus(t, "committed")
}

// TestAuditPages: stratum_audit answers the events a page at a time
// (nextEventsAfter leads on; the pages put together are the whole log),
// narrows the steps to those named, and refuses an unknown step, a bad
// limit and a cursor beyond the log.
func TestAuditPages(t *testing.T) {
	f := newFixture(t)
	r := f.plan(linearSpec, map[string]any{"topic": "x"})
	run := runID(t, r)
	f.done(r, "outline", outline).mustStatus(t, "ready")
	all := f.call("stratum_audit", map[string]any{"runId": run}).mustStatus(t, "running")
	events := all.Body["events"].([]any)
	if len(events) < 4 || all.Body["nextEventsAfter"] != nil {
		t.Fatalf("a short run's audit: %d events, nextEventsAfter %v", len(events), all.Body["nextEventsAfter"])
	}
	var paged []any
	for after, pages := 0.0, 0; ; pages++ {
		p := f.call("stratum_audit", map[string]any{"runId": run, "eventsAfter": after, "eventsLimit": 3, "steps": []string{}}).mustStatus(t, "running")
		if n := len(p.Body["events"].([]any)); n > 3 || n == 0 || len(p.Body["steps"].(map[string]any)) != 0 {
			t.Fatalf("page %d: %d events, steps %v", pages, n, p.Body["steps"])
		}
		paged = append(paged, p.Body["events"].([]any)...)
		next, ok := p.Body["nextEventsAfter"].(float64)
		if !ok {
			break
		}
		after = next
	}
	if a, b := mustJSON(t, events), mustJSON(t, paged); a != b {
		t.Fatalf("pages put together differ from the audit:\n %s\n %s", a, b)
	}
	one := f.call("stratum_audit", map[string]any{"runId": run, "steps": []string{"outline"}}).mustStatus(t, "running")
	if steps := one.Body["steps"].(map[string]any); len(steps) != 1 || steps["outline"] == nil {
		t.Fatalf("steps narrowed to outline: %v", steps)
	}
	f.call("stratum_audit", map[string]any{"runId": run, "steps": []string{"nope"}}).mustError(t, "invalid_step")
	f.call("stratum_audit", map[string]any{"runId": run, "eventsLimit": 1001}).mustError(t, "invalid_input")
	f.call("stratum_audit", map[string]any{"runId": run, "eventsAfter": 1 << 20}).mustError(t, "invalid_cursor")

	// Steps a page at a time, in declaration order: one step a page,
	// put together they are the audit's steps.
	stepsAll := all.Body["steps"].(map[string]any)
	if len(stepsAll) < 2 || all.Body["nextStepsAfter"] != nil {
		t.Fatalf("a short run's audit: %d steps, nextStepsAfter %v", len(stepsAll), all.Body["nextStepsAfter"])
	}
	pagedSteps := map[string]any{}
	var order []string
	for after, pages := "", 0; ; pages++ {
		args := map[string]any{"runId": run, "stepsLimit": 1, "eventsLimit": 1}
		if after != "" {
			args["stepsAfter"] = after
		}
		p := f.call("stratum_audit", args).mustStatus(t, "running")
		steps := p.Body["steps"].(map[string]any)
		if len(steps) != 1 || pages > len(stepsAll) {
			t.Fatalf("step page %d: %v", pages, steps)
		}
		for id, v := range steps {
			pagedSteps[id] = v
			order = append(order, id)
		}
		next, ok := p.Body["nextStepsAfter"].(string)
		if !ok {
			break
		}
		if next != order[len(order)-1] {
			t.Fatalf("nextStepsAfter %q, want the page's step %q", next, order[len(order)-1])
		}
		after = next
	}
	if a, b := mustJSON(t, stepsAll), mustJSON(t, pagedSteps); a != b {
		t.Fatalf("step pages put together differ from the audit:\n %s\n %s", a, b)
	}
	if strings.Join(order, " ") != "outline draft" {
		t.Fatalf("step pages in the order %v, want declaration order", order)
	}
	f.call("stratum_audit", map[string]any{"runId": run, "stepsAfter": "nope"}).mustError(t, "invalid_cursor")
	f.call("stratum_audit", map[string]any{"runId": run, "steps": []string{"draft"}, "stepsAfter": "outline"}).mustError(t, "invalid_cursor")
	f.call("stratum_audit", map[string]any{"runId": run, "stepsLimit": 1001}).mustError(t, "invalid_input")
	f.call("stratum_audit", map[string]any{"runId": run, "stepsLimit": -1}).mustError(t, "invalid_input")
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
