package driver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratum-go/stratum/engine"
)

const editSpec = `version: 1
contracts:
  V:
    v: string
flows:
  entry: main
  main:
    input: {}
    output:
      from: "${check.output}"
      contract: V
    steps:
      - id: edit
        do: "edit"
        out: V
        ensure:
          - expr: "result.v == \"ok\""
      - id: check
        after: [edit]
        do: "check"
        out: V
`

// An agent that edits the files of a git workspace: attempt 1 of edit
// changes README and adds a file and is rejected, attempt 2 changes
// README again and is accepted; check changes nothing. Each attempt's
// changes are recorded with it (HEAD, the trees, the stat) and its patch
// is read back with Engine.Patch; the user's index is never touched (the
// agent's edits stay unstaged).
func TestDriveRecordsDoStepChanges(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	gitRepo(t, f.ws)
	head := strings.TrimSpace(gitOut(t, f.ws, "rev-parse", "HEAD"))
	agentPath := script(t, `
case "$req" in
*'"stepId":"edit"'*'"previousFailure":null'*) echo 'first edit' >> README; echo new > added.txt; echo '{"v": "not yet"}' ;;
*'"stepId":"edit"'*) echo 'second edit' >> README; echo '{"v": "ok"}' ;;
*) echo '{"v": "ok"}' ;;
esac
`)
	d, e := f.driver(Options{Agent: agentPath})
	out, err := d.Start(ctx, e, engine.PlanRequest{Spec: []byte(editSpec), Input: js(map[string]any{}), WorkspaceRoot: f.ws})
	if err != nil {
		t.Fatal(err)
	}
	if out.Response.Status != engine.StatusCompleted {
		t.Fatalf("status %s: %+v", out.Response.Status, out.Response.Failure)
	}
	a, err := e.Audit(ctx, out.RunID)
	if err != nil {
		t.Fatal(err)
	}
	att := a.Steps["edit"].Attempts
	if len(att) != 2 || att[0].Changes == nil || att[1].Changes == nil {
		t.Fatalf("edit attempts %+v", att)
	}
	first, second := att[0].Changes, att[1].Changes
	if first.HeadBefore != head || first.HeadAfter != head || first.TreeBefore == first.TreeAfter || second.TreeBefore != first.TreeAfter {
		t.Errorf("changes %+v then %+v (HEAD %s)", first, second, head)
	}
	if !strings.Contains(first.Stat, "README") || !strings.Contains(first.Stat, "added.txt") || strings.Contains(second.Stat, "added.txt") || first.PatchBytes == 0 {
		t.Errorf("stats %q then %q", first.Stat, second.Stat)
	}
	if c := a.Steps["check"].Attempts[0].Changes; c == nil || c.PatchBytes != 0 || c.Stat != "" || c.TreeBefore != c.TreeAfter {
		t.Errorf("a step that changed nothing: %+v", c)
	}
	for i, want := range map[int]string{1: "+first edit", 2: "+second edit", 0: "+second edit"} {
		p, err := e.Patch(ctx, out.RunID, "edit", -1, i)
		if err != nil || !strings.Contains(string(p), want) || (i != 1 && strings.Contains(string(p), "added.txt")) {
			t.Errorf("patch of attempt %d: %v\n%s", i, err, p)
		}
	}
	if staged := gitOut(t, f.ws, "diff", "--cached", "--name-only"); staged != "" {
		t.Errorf("the measurement staged %q", staged)
	}
	if status := gitOut(t, f.ws, "status", "--porcelain"); status != " M README\n?? added.txt\n" {
		t.Errorf("status after the run %q", status)
	}
}

// Outside a git repository nothing is measured and nothing is said.
func TestDriveOutsideGitRecordsNoChanges(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	d, e := f.driver(Options{Agent: script(t, `echo x >> file.txt; echo '{"v": "ok"}'`)})
	out, err := d.Start(ctx, e, engine.PlanRequest{Spec: []byte(editSpec), Input: js(map[string]any{}), WorkspaceRoot: f.ws})
	if err != nil || out.Response.Status != engine.StatusCompleted {
		t.Fatalf("%v %+v", err, out)
	}
	a, err := e.Audit(ctx, out.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if c := a.Steps["edit"].Attempts[0].Changes; c != nil {
		t.Errorf("changes outside git: %+v", c)
	}
	if len(f.notes) > 0 {
		t.Errorf("notices %q", f.notes)
	}
}

// Two steps that edit the workspace at the same time: each one's stat
// says the other worked there meanwhile; a patch over the limit is not
// recorded and the stat says why.
func TestDriveChangesOfConcurrentStepsAndLargePatches(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	gitRepo(t, f.ws)
	marks := t.TempDir()
	agentPath := script(t, fmt.Sprintf(`
case "$req" in *'"stepId":"a"'*) me=a other=b ;; *'"stepId":"b"'*) me=b other=a ;; *) echo '{"v": "c"}'; exit 0 ;; esac
echo $me > $me.txt
touch %[1]s/$me
i=0
while [ ! -e %[1]s/$other ]; do i=$((i+1)); [ $i -gt 100 ] && exit 1; sleep 0.05; done
echo '{"v": "'$me'"}'
`, marks))
	const spec = `version: 1
contracts:
  V:
    v: string
flows:
  entry: main
  main:
    input: {}
    output:
      from: "${c.output}"
      contract: V
    steps:
      - id: a
        do: "a"
        out: V
        attempts: 1
      - id: b
        do: "b"
        out: V
        attempts: 1
      - id: c
        do: "c after ${a.output.v} and ${b.output.v}"
        out: V
`
	d, e := f.driver(Options{Agent: agentPath, PatchLimit: 10})
	out, err := d.Start(ctx, e, engine.PlanRequest{Spec: []byte(spec), Input: js(map[string]any{}), WorkspaceRoot: f.ws})
	if err != nil || out.Response.Status != engine.StatusCompleted {
		t.Fatalf("%v %+v", err, out)
	}
	a, err := e.Audit(ctx, out.RunID)
	if err != nil {
		t.Fatal(err)
	}
	for me, other := range map[string]string{"a": "b", "b": "a"} {
		c := a.Steps[me].Attempts[0].Changes
		if c == nil || !strings.Contains(c.Stat, me+".txt") || !strings.Contains(c.Stat, "("+other+" worked in the same workspace at the same time") ||
			!strings.Contains(c.Stat, "over the 10 bytes limit: it was not recorded") || !c.PatchOmitted || c.PatchBytes <= 10 {
			t.Errorf("%s: changes %+v", me, c)
		}
	}
	if _, err := os.Stat(filepath.Join(f.ws, "a.txt")); err != nil {
		t.Fatal(err)
	}
}
