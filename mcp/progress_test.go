package mcp

import (
	"context"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stratum-go/stratum/agent"
	"github.com/stratum-go/stratum/driver"
	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/judge"
	"github.com/stratum-go/stratum/store"
)

// TestProgressNotifications: a call whose client sent a progress token is
// told it is still running at every interval, and a foreground agent run
// forwards the agent's progress; without a token nothing is sent.
func TestProgressNotifications(t *testing.T) {
	fake := buildFakeAgents(t)
	root := t.TempDir()
	flows, err := store.NewFileStore(filepath.Join(root, "flows"), nil)
	if err != nil {
		t.Fatal(err)
	}
	agentsStore, err := store.NewFileStore(filepath.Join(root, "agents"), nil)
	if err != nil {
		t.Fatal(err)
	}
	eng := engine.New(flows, engine.Options{})
	t.Cleanup(eng.Close)
	look := func(name string) (string, error) { return filepath.Join(fake, name), nil }
	runs := driver.NewAgentRuns(agentsStore, eng, nil, driver.AgentRunOptions{Resolver: &agent.Resolver{LookPath: look}})
	t.Cleanup(runs.Close)
	srv, err := NewServer(Deps{Engine: eng, Agents: runs, ProgressInterval: 20 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cs, got := progressClient(t, srv)

	args := map[string]any{"agent": "claude", "prompt": "Think. SLEEP_MS: 300", "cwd": root}
	params := &sdk.CallToolParams{Name: "stratum_agent_run", Arguments: args}
	params.SetProgressToken("p1")
	res, err := cs.CallTool(ctx, params)
	if err != nil || res.IsError {
		t.Fatalf("agent run: %v %+v", err, res)
	}
	ticks, forwarded := 0, 0
	seen := got()
	for i, p := range seen {
		if p.ProgressToken != "p1" || p.Progress != float64(i+1) {
			t.Errorf("notification %d: %+v", i, p)
		}
		switch {
		case strings.Contains(p.Message, "is still working"):
			ticks++
		case strings.HasPrefix(p.Message, "claude:"):
			forwarded++
		}
	}
	n := len(seen)
	if ticks < 2 || forwarded < 1 {
		t.Errorf("%d ticks and %d agent lines in %d notifications", ticks, forwarded, n)
	}

	// Without a token: none.
	if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "stratum_agent_run", Arguments: args}); err != nil {
		t.Fatal(err)
	}
	if len(got()) != n {
		t.Errorf("%d notifications for a call without a progress token", len(got())-n)
	}
}

// TestProgressJudgedStepDone: a step_done whose ensure a judge decides
// (a real judge command that takes a while) sends progress to a client
// that gave a token.
func TestProgressJudgedStepDone(t *testing.T) {
	flows, err := store.NewFileStore(filepath.Join(t.TempDir(), "flows"), nil)
	if err != nil {
		t.Fatal(err)
	}
	slow := &judge.CommandJudge{Command: `sleep 0.3; echo '{"holds": true, "reason": "faithful"}'`}
	eng := engine.New(flows, engine.Options{Judge: slow})
	t.Cleanup(eng.Close)
	srv, err := NewServer(Deps{Engine: eng, ProgressInterval: 20 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cs, got := progressClient(t, srv)

	spec := `version: 1
contracts:
  Summary: {text: string}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${summary.output}", contract: Summary}
    steps:
      - id: summary
        do: Summarise the change.
        out: Summary
        ensure:
          - judged: {statement: "the summary is faithful", stakes: cheap}
`
	plan, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "stratum_plan", Arguments: map[string]any{"spec": spec}})
	if err != nil || plan.IsError {
		t.Fatalf("plan: %v %+v", err, plan)
	}
	body := plan.StructuredContent.(map[string]any)
	entry := body["ready"].([]any)[0].(map[string]any)
	params := &sdk.CallToolParams{Name: "stratum_step_done", Arguments: map[string]any{"runId": body["runId"], "stepId": "summary",
		"dispatchToken": entry["dispatchToken"], "result": map[string]any{"output": map[string]any{"text": "it adds leases"}}}}
	params.SetProgressToken(7)
	res, err := cs.CallTool(ctx, params)
	if err != nil || res.IsError {
		t.Fatalf("step_done: %v %+v", err, res)
	}
	if s := res.StructuredContent.(map[string]any)["status"]; s != "completed" {
		t.Fatalf("step_done: status %v", s)
	}
	ticks := 0
	for _, p := range got() {
		if strings.Contains(p.Message, "stratum_step_done is still working") {
			ticks++
		}
	}
	if ticks < 2 {
		t.Errorf("%d progress notifications during a judged step_done of 300 ms (every 20 ms)", ticks)
	}
}

// progressClient connects an in-memory client to srv that records the
// progress notifications it receives; got returns those so far.
func progressClient(t *testing.T, srv *sdk.Server) (cs *sdk.ClientSession, got func() []*sdk.ProgressNotificationParams) {
	t.Helper()
	ctx := context.Background()
	st, ct := sdk.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []*sdk.ProgressNotificationParams
	cs, err = sdk.NewClient(&sdk.Implementation{Name: "test", Version: "0"}, &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, req.Params)
		}}).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Wait() })
	return cs, func() []*sdk.ProgressNotificationParams {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}
}
