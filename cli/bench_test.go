package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/store"
)

// BenchmarkQueryFlows is `stratum query flows` over a store of 10,000 runs
// (QUERY_RUNS changes the count), a third each at the first step, at a
// gate and cancelled. Creating the runs takes a while on a real disk; TMPDIR=/dev/shm
// makes the set-up quick (the listing reads the same files either way).
func BenchmarkQueryFlows(b *testing.B) {
	n := 10000
	if s := os.Getenv("QUERY_RUNS"); s != "" {
		fmt.Sscan(s, &n)
	}
	ctx := context.Background()
	home := b.TempDir()
	fs, err := store.NewFileStore(filepath.Join(home, "flows"), nil)
	if err != nil {
		b.Fatal(err)
	}
	e := engine.New(fs, engine.Options{Workspace: engine.WorkspacePolicy{Default: b.TempDir()}})
	for i := 0; i < n; i++ {
		r, err := e.Plan(ctx, engine.PlanRequest{Spec: []byte(querySpec), Input: json.RawMessage(`{}`)})
		if err != nil {
			b.Fatal(err)
		}
		if i%3 == 0 {
			continue
		}
		en := r.Ready[0]
		if r, err = e.StepDone(ctx, engine.StepDoneRequest{RunID: r.RunID, StepID: en.ID, DispatchToken: en.DispatchToken,
			Result: engine.StepResult{Output: json.RawMessage(`{"v":"x"}`)}}); err != nil {
			b.Fatal(err)
		}
		if i%3 == 1 {
			continue
		}
		if _, err := e.Cancel(ctx, r.RunID, "bench"); err != nil {
			b.Fatal(err)
		}
	}
	e.Close()
	env := &Env{Stdout: io.Discard, Stderr: io.Discard, Getenv: func(k string) string {
		if k == "STRATUM_HOME" {
			return home
		}
		return ""
	}}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if code := run(ctx, env, []string{"query", "flows"}); code != 0 {
			b.Fatalf("exit %d", code)
		}
	}
}
