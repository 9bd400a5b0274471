package driver

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stratum-go/stratum/engine"
)

// gitRepo makes a repository with one commit in dir.
func gitRepo(t *testing.T, dir string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is required for worktree isolation tests")
	}
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	run("init", "-q")
	if err := os.WriteFile(filepath.Join(dir, "README"), []byte("base\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run("add", "README")
	run("commit", "-q", "-m", "base")
}

func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return string(out)
}

const worktreeSpec = `version: 1
contracts:
  R:
    value: string
flows:
  entry: main
  main:
    input:
      names: string[]
    output:
      from: "${done.output}"
      contract: R
    steps:
      - id: fan
        fanout:
          over: "${input.names}"
          concurrency: 2
          isolation: worktree
          require: any
          merge: sequential
          pre_merge: ["touch premerge.ran"]
          steps:
            - do: "Write ${item}"
              out: R
              attempts: 1
      - id: done
        after: [fan]
        do: "Finish"
        out: R
`

// Driven by `stratum run`'s driver, each item of an engine worktree
// fanout works in its own git worktree (made by the engine); the changes
// of the items that succeeded are merged into the workspace in item
// order after pre_merge, before the step after the fanout runs; the
// failed item's are not; every worktree is removed. The driver acts on
// no event to get there.
func TestWorktreeIsolation(t *testing.T) {
	f := newFixture(t)
	gitRepo(t, f.ws)
	dirs := filepath.Join(t.TempDir(), "dirs.log")
	agentPath := script(t, fmt.Sprintf(`
name=$(printf '%%s' "$req" | sed 's/.*"task":"Write \([a-z]*\)".*/\1/')
if [ -z "${req##*Finish*}" ]; then
  [ -f alpha.txt ] && [ ! -f beta.txt ] || { echo "the merge did not happen first" >&2; exit 1; }
  echo '{"value": "done"}'; exit 0
fi
pwd >> %s
echo "$name" > "$name.txt"
echo "changed by $name" >> README
if [ "$name" = beta ]; then echo "beta refuses" >&2; exit 1; fi
echo '{"value": "'$name'"}'
`, dirs))
	d, e := f.driver(Options{Agent: agentPath})
	out, err := d.Start(context.Background(), e, engine.PlanRequest{Spec: []byte(worktreeSpec), Input: js(map[string]any{"names": []any{"alpha", "beta"}})})
	if err != nil {
		t.Fatal(err)
	}
	if out.Response.Status != engine.StatusCompleted {
		t.Fatalf("status %s: %+v", out.Response.Status, out.Response.Failure)
	}
	// The agents ran in worktrees, not in the workspace, and those are gone.
	logged, err := os.ReadFile(dirs)
	if err != nil {
		t.Fatal(err)
	}
	wds := strings.Fields(string(logged))
	if len(wds) != 2 {
		t.Fatalf("agent directories %q", wds)
	}
	for _, wd := range wds {
		if wd == f.ws || !strings.HasPrefix(filepath.Base(wd), "stratum-"+out.RunID+".fan.") {
			t.Errorf("agent ran in %s, want a worktree of the run", wd)
		}
		if _, err := os.Stat(wd); !os.IsNotExist(err) {
			t.Errorf("worktree %s was not removed", wd)
		}
	}
	if list := gitOut(t, f.ws, "worktree", "list", "--porcelain"); strings.Count(list, "worktree ") != 1 {
		t.Errorf("worktrees left:\n%s", list)
	}
	// alpha's changes are merged (staged); beta's are not.
	staged := strings.Fields(gitOut(t, f.ws, "diff", "--cached", "--name-only"))
	if !slices.Equal(staged, []string{"README", "alpha.txt"}) {
		t.Errorf("staged %v, want README and alpha.txt", staged)
	}
	if _, err := os.Stat(filepath.Join(f.ws, "beta.txt")); !os.IsNotExist(err) {
		t.Error("the failed item's file was merged")
	}
	if b, _ := os.ReadFile(filepath.Join(f.ws, "README")); string(b) != "base\nchanged by alpha\n" {
		t.Errorf("README %q", b)
	}
	if _, err := os.Stat(filepath.Join(f.ws, "premerge.ran")); err != nil {
		t.Errorf("pre_merge did not run: %v", err)
	}
	if tr := f.trace(); !slices.Contains(tr, "fanout_merge(fan)") {
		t.Errorf("trace %v", tr)
	}
}

// Two items that change the same line conflict: the merge fails the run
// (the engine is told, not cancelled by the driver) with the reason,
// before anything after the fanout runs, and the conflicting item's
// changes are not half applied.
func TestWorktreeMergeConflictFails(t *testing.T) {
	f := newFixture(t)
	gitRepo(t, f.ws)
	agentPath := script(t, `
name=$(printf '%s' "$req" | sed 's/.*"task":"Write \([a-z]*\)".*/\1/')
[ -z "${req##*Finish*}" ] && { echo "done must not run after a failed merge" >&2; exit 1; }
echo "$name" > README
echo '{"value": "'$name'"}'
`)
	d, e := f.driver(Options{Agent: agentPath})
	out, err := d.Start(context.Background(), e, engine.PlanRequest{Spec: []byte(worktreeSpec), Input: js(map[string]any{"names": []any{"alpha", "beta"}})})
	if err != nil {
		t.Fatal(err)
	}
	if out.Response.Status != engine.StatusFailed || !strings.HasPrefix(out.Response.Failure.Reason, "fanout merge failed: item 1: the changes conflict with the workspace in README") {
		t.Fatalf("status %s %+v", out.Response.Status, out.Response.Failure)
	}
	if b, _ := os.ReadFile(filepath.Join(f.ws, "README")); string(b) != "alpha\n" {
		t.Errorf("README %q", b)
	}
	if list := gitOut(t, f.ws, "worktree", "list", "--porcelain"); strings.Count(list, "worktree ") != 1 {
		t.Errorf("worktrees left:\n%s", list)
	}
}

// Without a git repository, a worktree fanout cannot be executed: the
// run fails with the reason.
func TestWorktreeNeedsRepository(t *testing.T) {
	f := newFixture(t)
	d, e := f.driver(Options{Agent: okAgent(t)})
	out, err := d.Start(context.Background(), e, engine.PlanRequest{Spec: []byte(worktreeSpec), Input: js(map[string]any{"names": []any{"alpha"}})})
	if err != nil {
		t.Fatal(err)
	}
	if out.Response.Status != engine.StatusFailed || !strings.Contains(out.Response.Failure.Reason, "fanout execution failed: worktree isolation needs the workspace inside a git repository") {
		t.Fatalf("status %s %+v", out.Response.Status, out.Response.Failure)
	}
}

const consumerWorktreeSpec = `version: 1
contracts:
  R:
    value: string
flows:
  entry: main
  main:
    input:
      names: string[]
    output:
      from: "${done.output}"
      contract: R
    max_rounds: 2
    steps:
      - id: fan
        fanout:
          over: "${input.names}"
          concurrency: 2
          isolation: worktree
          require: any
          merge: sequential
          dispatch: consumer
          pre_merge: ["touch premerge.ran"]
          steps:
            - do: "Write ${item}"
              out: R
              attempts: 1
      - id: review
        after: [fan]
        gate:
          on_approve: null
          on_revise: fan
          on_kill: null
      - id: done
        after: [review]
        do: "Finish"
        out: R
`

// For a consumer fanout the driver is the consumer: it runs each item in
// its own worktree and merges the succeeded items' changes (after
// pre_merge, in index order) when its last report settles the fanout,
// before the gate after it is decided.
func TestConsumerWorktreeFanout(t *testing.T) {
	f := newFixture(t)
	gitRepo(t, f.ws)
	agentPath := script(t, `
name=$(printf '%s' "$req" | sed 's/.*"task":"Write \([a-z]*\)".*/\1/')
[ -z "${req##*Finish*}" ] && { echo '{"value": "done"}'; exit 0; }
[ "$(pwd)" = "$WS" ] && { echo "ran in the workspace" >&2; exit 1; }
echo "$name" > "$name.txt"
if [ "$name" = beta ]; then echo "beta refuses" >&2; exit 1; fi
echo '{"value": "'$name'"}'
`)
	t.Setenv("WS", f.ws)
	d, e := f.driver(Options{Agent: agentPath, Gates: GateStop})
	out, err := d.Start(context.Background(), e, engine.PlanRequest{Spec: []byte(consumerWorktreeSpec), Input: js(map[string]any{"names": []any{"alpha", "beta", "gamma"}})})
	if err != nil {
		t.Fatal(err)
	}
	if out.Finished() || len(out.Gates) != 1 {
		t.Fatalf("want a stop at the gate: %+v", out.Response)
	}
	staged := strings.Fields(gitOut(t, f.ws, "diff", "--cached", "--name-only"))
	if !slices.Equal(staged, []string{"alpha.txt", "gamma.txt"}) {
		t.Errorf("staged %v", staged)
	}
	if _, err := os.Stat(filepath.Join(f.ws, "premerge.ran")); err != nil {
		t.Errorf("pre_merge did not run: %v", err)
	}
	if list := gitOut(t, f.ws, "worktree", "list", "--porcelain"); strings.Count(list, "worktree ") != 1 {
		t.Errorf("worktrees left:\n%s", list)
	}
}
