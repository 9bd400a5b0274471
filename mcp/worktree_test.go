package mcp

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// gitWorkspace makes a git repository with one commit.
func gitWorkspace(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is required for worktree fanout tests")
	}
	ws := filepath.Join(t.TempDir(), "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "README"), []byte("base\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"commit", "-q", "-m", "base"}} {
		gitOutput(t, ws, args...)
	}
	return ws
}

func gitOutput(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v: %s", args, err, out)
	}
	return string(out)
}

// TestStdioWorktreeFanout: under `stratum mcp`, an engine fanout with
// isolation: worktree runs each item in its own git worktree (not in the
// shared workspace) and merges the succeeded items' changes into the
// workspace, in index order, before the step after the fanout is handed
// to the client.
func TestStdioWorktreeFanout(t *testing.T) {
	home := t.TempDir()
	ws := gitWorkspace(t)
	dirs := filepath.Join(t.TempDir(), "dirs.log")
	agentPath := filepath.Join(t.TempDir(), "agent.sh")
	script := `#!/bin/sh
req=$(cat)
name=$(printf '%s' "$req" | sed 's/.*"task":"Write \([a-z]*\)".*/\1/')
pwd >> ` + dirs + `
echo "$name" > "$name.txt"
echo "changed by $name" >> README.$name
echo '{"value": "'$name'"}'
`
	if err := os.WriteFile(agentPath, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	p := startServer(t, home, "--agent", agentPath, "--allow-agents", "--allow-commands", "--allow-root", ws)
	spec := `version: 1
contracts:
  V: {value: string}
flows:
  entry: main
  main:
    input: {items: "string[]"}
    output: {from: "${finish.output}", contract: V}
    steps:
      - id: fan
        fanout:
          over: "${input.items}"
          concurrency: 2
          isolation: worktree
          require: all
          merge: sequential
          pre_merge: ["git diff --cached --name-only > ../premerge.seen"]
          steps:
            - do: "Write ${item}"
              out: V
      - id: finish
        after: [fan]
        do: "Finish"
        out: V
`
	r := p.call("stratum_plan", map[string]any{"spec": spec, "input": map[string]any{"items": []any{"alpha", "beta"}}, "workspaceRoot": ws})
	run := runID(t, r)
	d := newDriver(t, p.call)
	d.answer = func(e map[string]any) (any, string) {
		// The fanout's changes are in the workspace before finish is handed out.
		got := strings.Fields(gitOutput(t, ws, "diff", "--cached", "--name-only"))
		if want := []string{"README.alpha", "README.beta", "alpha.txt", "beta.txt"}; !slices.Equal(got, want) {
			t.Errorf("%s handed out with %v staged, want %v", e["id"], got, want)
		}
		return map[string]any{"value": "finished"}, ""
	}
	d.drive(r).mustStatus(t, "completed")
	if d.steps != 1 {
		t.Errorf("%d client steps, want 1 (finish)", d.steps)
	}
	logged, err := os.ReadFile(dirs)
	if err != nil {
		t.Fatal(err)
	}
	wds := strings.Fields(string(logged))
	if len(wds) != 2 {
		t.Fatalf("agent directories %q", wds)
	}
	for _, wd := range wds {
		if wd == ws || !strings.HasPrefix(filepath.Base(wd), "stratum-"+run+".fan.") {
			t.Errorf("an item ran in %s, not in its own worktree", wd)
		}
		if _, err := os.Stat(wd); !os.IsNotExist(err) {
			t.Errorf("worktree %s was not removed", wd)
		}
	}
	if list := gitOutput(t, ws, "worktree", "list", "--porcelain"); strings.Count(list, "worktree ") != 1 {
		t.Errorf("worktrees left:\n%s", list)
	}
	if b, err := os.ReadFile(filepath.Join(filepath.Dir(ws), "premerge.seen")); err != nil || len(b) != 0 {
		t.Errorf("pre_merge saw %q (%v)", b, err)
	}
	a := p.call("stratum_audit", map[string]any{"runId": run}).mustStatus(t, "completed")
	var merges []string
	for _, ev := range a.Body["events"].([]any) {
		if ev := ev.(map[string]any); ev["type"] == "fanout_merge" {
			b, _ := json.Marshal(ev["detail"])
			merges = append(merges, string(b))
		}
	}
	if want := []string{`{"itemIndex":0,"success":true}`, `{"itemIndex":1,"success":true}`}; !slices.Equal(merges, want) {
		t.Errorf("fanout_merge events %v, want %v", merges, want)
	}
}
