package mcp

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stratum-go/stratum/agent"
	"github.com/stratum-go/stratum/driver"
	"github.com/stratum-go/stratum/engine"
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
	st, ct := sdk.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []*sdk.ProgressNotificationParams
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "0"}, &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, req.Params)
		}}).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Wait() })

	args := map[string]any{"agent": "claude", "prompt": "Think. SLEEP_MS: 300", "cwd": root}
	params := &sdk.CallToolParams{Name: "stratum_agent_run", Arguments: args}
	params.SetProgressToken("p1")
	res, err := cs.CallTool(ctx, params)
	if err != nil || res.IsError {
		t.Fatalf("agent run: %v %+v", err, res)
	}
	mu.Lock()
	ticks, forwarded := 0, 0
	for i, p := range got {
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
	n := len(got)
	mu.Unlock()
	if ticks < 2 || forwarded < 1 {
		t.Errorf("%d ticks and %d agent lines in %d notifications", ticks, forwarded, n)
	}

	// Without a token: none.
	if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "stratum_agent_run", Arguments: args}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != n {
		t.Errorf("%d notifications for a call without a progress token", len(got)-n)
	}
}
