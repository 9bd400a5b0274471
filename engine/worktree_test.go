package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stratum-go/stratum/internal/worktree"
	"github.com/stratum-go/stratum/store"
)

// gitInit makes dir a git repository with one commit (README and
// old.txt).
func gitInit(t *testing.T, dir string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is required for worktree fanout tests")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{"README": "base\n", "old.txt": "old\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gitRun(t, dir, "init", "-q")
	gitRun(t, dir, "add", ".")
	gitRun(t, dir, "commit", "-q", "-m", "base")
}

func gitRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v: %s", args, err, out)
	}
	return string(out)
}

// staged lists the files staged in the workspace.
func staged(t *testing.T, ws string) []string {
	t.Helper()
	return strings.Fields(gitRun(t, ws, "diff", "--cached", "--name-only"))
}

// noWorktrees checks that every item worktree is gone: registered ones
// and directories.
func noWorktrees(t *testing.T, ws, wtDir string) {
	t.Helper()
	if list := gitRun(t, ws, "worktree", "list", "--porcelain"); strings.Count(list, "worktree ") != 1 {
		t.Errorf("worktrees left:\n%s", list)
	}
	if entries, _ := os.ReadDir(wtDir); len(entries) != 0 {
		t.Errorf("worktree directories left: %v", entries)
	}
}

// worktreeSpec is an engine fanout with worktree isolation, followed by
// an evaluate step (which must see the merged workspace) and a do step.
func worktreeSpec(require string, preMerge []string, stages, check string) string {
	if preMerge == nil {
		preMerge = []string{}
	}
	pm, _ := json.Marshal(preMerge)
	return fmt.Sprintf(`
version: 1
contracts:
  V: {value: string}
flows:
  entry: main
  main:
    input:
      items: string[]
    output: {from: "${after.output}", contract: V}
    steps:
      - id: fan
        fanout:
          over: "${input.items}"
          concurrency: 2
          isolation: worktree
          require: %s
          merge: sequential
          pre_merge: %s
          steps:
%s
        on_fail: rescue
      - id: check
        after: [fan]
        evaluate:
          command: %s
          timeout_ms: 10000
      - id: after
        after: [check]
        do: "after ${fan.output}"
        out: V
      - id: rescue
        do: rescue
        out: V
`, require, pm, stages, strconv.Quote(check))
}

const writeStage = `            - do: "Write ${item}"
              out: V`

// writeAgent writes <name>.txt in its working directory; "noop" items
// change nothing; "bad" items write too, then fail; "conflict" items
// rewrite README; "drop" items delete old.txt.
const writeAgent = `read task; name=${task#Write }
case "$name" in noop*) printf '{"value":"%s"}' "$name"; exit 0;; esac
echo "$name" > "$name.txt"
case "$name" in
bad*) echo "refused" >&2; exit 1;;
conflict*) echo "$name" > README;;
drop*) rm old.txt;;
esac
printf '{"value":"%s"}' "$name"`

const closedVerdict = `echo '{"status":"closed","children":[],"reason":"merged"}'`

// worktreeHarness is a harness whose workspace is a git repository and
// whose item worktrees go to their own directory.
func worktreeHarness(t *testing.T, d Dispatcher) (*harness, string) {
	t.Helper()
	wtDir := filepath.Join(t.TempDir(), "worktrees")
	if err := os.Mkdir(wtDir, 0o755); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, Options{Dispatcher: d, Workspaces: &testWorkspaces{dir: wtDir}})
	gitInit(t, h.ws)
	return h, wtDir
}

// mergeEvents lists the details of a run's fanout_merge events.
func (h *harness) mergeEvents(runID string) []map[string]any {
	h.t.Helper()
	var out []map[string]any
	for _, ev := range h.audit(runID).Events {
		if ev.Type == "fanout_merge" {
			var d map[string]any
			if err := json.Unmarshal(ev.Detail, &d); err != nil {
				h.t.Fatal(err)
			}
			out = append(out, d)
		}
	}
	return out
}

// Items each writing a different file work in their own worktrees and
// are merged into the workspace in index order, after pre_merge, with a
// fanout_merge event each, before the steps after the fanout run (the
// evaluate step sees the merged files). The failed item's changes are
// not merged; every worktree is removed.
func TestWorktreeFanoutMerges(t *testing.T) {
	d := &procDispatcher{script: writeAgent}
	h, wtDir := worktreeHarness(t, d)
	check := `test -f a.txt && test -f c.txt && test ! -f bad.txt && ` + closedVerdict
	spec := worktreeSpec("3", []string{"git diff --cached --name-only > ../premerge.seen"}, writeStage, check)
	r := h.plan(spec, map[string]any{"items": []any{"a", "bad", "c", "noop"}})
	r = h.waitFor(h.e, r.RunID, notFanoutWaiting)
	if h.e.Wait(h.ctx) != nil {
		t.Fatal("wait")
	}
	en := entry(t, r, "after")
	if en.Do != `after [{"value":"a"},null,{"value":"c"},{"value":"noop"}]` {
		t.Fatalf("after %s", dump(en))
	}
	if got := staged(t, h.ws); !slices.Equal(got, []string{"a.txt", "c.txt"}) {
		t.Errorf("staged %v", got)
	}
	if _, err := os.Stat(filepath.Join(h.ws, "bad.txt")); !os.IsNotExist(err) {
		t.Error("the failed item's file was merged")
	}
	// pre_merge ran in the workspace before any patch.
	if b, err := os.ReadFile(filepath.Join(h.root, "premerge.seen")); err != nil || len(b) != 0 {
		t.Errorf("pre_merge saw %q (%v)", b, err)
	}
	merges := h.mergeEvents(r.RunID)
	if dump(merges) != `[{"itemIndex":0,"success":true},{"itemIndex":2,"success":true},{"changes":false,"itemIndex":3,"success":true}]` {
		t.Errorf("merge events %s", dump(merges))
	}
	types := h.eventTypes(r.RunID)
	last := slices.Index(types, "fanout_merge(fan)")
	if last < 0 || slices.Index(types, "result(fan)") < last+1 || slices.Index(types, "result(check)") < slices.Index(types, "result(fan)") {
		t.Errorf("events %v", types)
	}
	fan := h.persisted(r.RunID).Steps["fan"]
	for _, i := range []int{0, 2} {
		if it := fan.Fanout.Items[i]; it.PatchSeq != 0 || it.PatchBytes == 0 {
			t.Errorf("item %d patch %d/%d after the merge", i, it.PatchSeq, it.PatchBytes)
		}
	}
	if it := fan.Fanout.Items[3]; it.PatchSeq != 0 || it.PatchBytes != 0 {
		t.Errorf("item without changes: patch %d/%d", it.PatchSeq, it.PatchBytes)
	}
	if fan.Fanout.Merge == nil || fan.Fanout.Merge.Next != 4 || !fan.Fanout.Merge.PreMerged {
		t.Errorf("merge state %s", dump(fan.Fanout.Merge))
	}
	// The agents worked in worktrees of the run, told they may write.
	for _, req := range d.requests() {
		want := worktree.Prefix(r.RunID, "fan", req.ItemIndex)
		if filepath.Dir(req.Workdir) != wtDir || !strings.HasPrefix(filepath.Base(req.Workdir), want) ||
			req.Sandbox != SandboxWorkspaceWrite || req.Plan == nil {
			t.Errorf("request workdir %s sandbox %s", req.Workdir, req.Sandbox)
		}
	}
	noWorktrees(t, h.ws, wtDir)
	// Patches live in internal events, not in the state document.
	evs, err := h.store.Events(h.ctx, r.RunID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ev := range evs {
		if ev.Type == string(evPatch) {
			n++
		}
	}
	snap, _ := h.store.Load(h.ctx, r.RunID)
	if n != 2 || bytes.Contains(snap.State, []byte("a.txt")) {
		t.Errorf("%d patch events; state %s", n, snap.State)
	}
	wantStatus(t, h.ok(r, "after", `{"value":"done"}`), StatusCompleted)
}

// Stage conditions and ensures read the item's worktree; an item whose
// final stage is skipped is never merged, though it changed files.
func TestWorktreeSkippedFinalStageNotMerged(t *testing.T) {
	agent := `read task
case "$task" in
Write*) name=${task#Write }; echo "$name" > "$name.txt"; echo "$name" > "stage1-$name.txt";;
Finish*) name=${task#Finish }; echo done > "$name.done";;
esac
printf '{"value":"%s"}' "$name"`
	stages := `            - do: "Write ${item}"
              out: V
            - do: "Finish ${item}"
              when: "item != 'skip' && file_exists('stage1-' + item + '.txt')"
              out: V
              ensure:
                - expr: "file_exists(result.value + '.done')"`
	d := &procDispatcher{script: agent}
	h, wtDir := worktreeHarness(t, d)
	r := h.plan(worktreeSpec("any", nil, stages, closedVerdict), map[string]any{"items": []any{"x", "skip"}})
	r = h.waitFor(h.e, r.RunID, notFanoutWaiting)
	_ = h.e.Wait(h.ctx)
	if en := entry(t, r, "after"); en.Do != `after [{"value":"x"},null]` {
		t.Fatalf("after %s", dump(en))
	}
	fan := h.stepState(r.RunID, "fan")
	if fan.Fanout.Items[1].Status != StepSkipped || fan.Fanout.Items[0].Status != StepSucceeded || len(fan.Fanout.Items[0].Attempts) != 2 {
		t.Fatalf("items %s", dump(fan.Fanout.Items))
	}
	if got := staged(t, h.ws); !slices.Equal(got, []string{"stage1-x.txt", "x.done", "x.txt"}) {
		t.Errorf("staged %v", got)
	}
	if merges := h.mergeEvents(r.RunID); dump(merges) != `[{"itemIndex":0,"success":true}]` {
		t.Errorf("merges %s", dump(merges))
	}
	noWorktrees(t, h.ws, wtDir)
}

// require is judged before any patch touches the workspace: unmet, the
// fanout fails (routed by on_fail), no pre_merge runs, nothing merges.
func TestWorktreeRequireUnmetMergesNothing(t *testing.T) {
	h, wtDir := worktreeHarness(t, &procDispatcher{script: writeAgent})
	spec := worktreeSpec("all", []string{"touch ../premerge.ran"}, writeStage, closedVerdict)
	r := h.plan(spec, map[string]any{"items": []any{"a", "bad"}})
	r = h.waitFor(h.e, r.RunID, notFanoutWaiting)
	_ = h.e.Wait(h.ctx)
	entry(t, r, "rescue")
	fan := h.stepState(r.RunID, "fan")
	if fan.Status != StepFailed || fan.Failure.Reason != "fanout require all not met (1/2 succeeded); item 1: refused" {
		t.Fatalf("fan %s", dump(fan))
	}
	if st := gitRun(t, h.ws, "status", "--porcelain"); st != "" {
		t.Errorf("workspace changed:\n%s", st)
	}
	if _, err := os.Stat(filepath.Join(h.root, "premerge.ran")); !os.IsNotExist(err) {
		t.Error("pre_merge ran")
	}
	if m := h.mergeEvents(r.RunID); len(m) != 0 {
		t.Errorf("merges %s", dump(m))
	}
	noWorktrees(t, h.ws, wtDir)
}

// A failing pre_merge command fails the run (on_fail does not apply)
// before any patch is applied.
func TestWorktreePreMergeFails(t *testing.T) {
	h, wtDir := worktreeHarness(t, &procDispatcher{script: writeAgent})
	spec := worktreeSpec("all", []string{"true", "echo nope >&2; exit 4"}, writeStage, closedVerdict)
	r := h.plan(spec, map[string]any{"items": []any{"a", "b"}})
	r = h.waitFor(h.e, r.RunID, func(r *Response) bool { return r.Status != StatusRunning })
	_ = h.e.Wait(h.ctx)
	wantFailure(t, r, StatusFailed, `fanout merge failed: pre_merge command "echo nope >&2; exit 4" exited with status 4: `)
	if !strings.HasSuffix(r.Failure.Reason, "nope") {
		t.Errorf("reason %q", r.Failure.Reason)
	}
	if m := h.mergeEvents(r.RunID); len(m) != 1 || m[0]["success"] != false || m[0]["itemIndex"] != 0.0 {
		t.Errorf("merges %s", dump(m))
	}
	if slices.Contains(h.eventTypes(r.RunID), "routed(fan)") {
		t.Error("a merge failure was routed by on_fail")
	}
	if st := gitRun(t, h.ws, "status", "--porcelain"); st != "" {
		t.Errorf("workspace changed:\n%s", st)
	}
	noWorktrees(t, h.ws, wtDir)
}

// Two items rewriting the same file: the first merges, the second
// conflicts, fails the run, and leaves nothing of itself (no conflict
// markers, none of its other files).
func TestWorktreeConflictFails(t *testing.T) {
	h, wtDir := worktreeHarness(t, &procDispatcher{script: writeAgent})
	r := h.plan(worktreeSpec("all", nil, writeStage, closedVerdict), map[string]any{"items": []any{"conflict1", "conflict2"}})
	r = h.waitFor(h.e, r.RunID, func(r *Response) bool { return r.Status != StatusRunning })
	_ = h.e.Wait(h.ctx)
	wantFailure(t, r, StatusFailed, "fanout merge failed: item 1: the changes conflict with the workspace in README")
	if !strings.Contains(r.Failure.Reason, "nothing of them was applied") {
		t.Errorf("reason %q", r.Failure.Reason)
	}
	if b, _ := os.ReadFile(filepath.Join(h.ws, "README")); string(b) != "conflict1\n" {
		t.Errorf("README %q", b)
	}
	if got := staged(t, h.ws); !slices.Equal(got, []string{"README", "conflict1.txt"}) {
		t.Errorf("staged %v", got)
	}
	if u := gitRun(t, h.ws, "ls-files", "--unmerged"); u != "" {
		t.Errorf("conflicts left:\n%s", u)
	}
	m := h.mergeEvents(r.RunID)
	if len(m) != 2 || m[0]["success"] != true || m[1]["success"] != false || m[1]["itemIndex"] != 1.0 {
		t.Errorf("merges %s", dump(m))
	}
	noWorktrees(t, h.ws, wtDir)
}

// A patch over the limit fails the item's attempt with a clear reason.
func TestWorktreePatchLimit(t *testing.T) {
	wtDir := t.TempDir()
	h := newHarness(t, Options{Dispatcher: &procDispatcher{script: writeAgent}, Workspaces: &testWorkspaces{dir: wtDir}, PatchLimit: 100})
	gitInit(t, h.ws)
	r := h.plan(worktreeSpec("any", nil, writeStage, closedVerdict), map[string]any{"items": []any{strings.Repeat("long", 40)}})
	r = h.waitFor(h.e, r.RunID, notFanoutWaiting)
	_ = h.e.Wait(h.ctx)
	it := h.stepState(r.RunID, "fan").Fanout.Items[0]
	if it.Status != StepFailed || !strings.Contains(it.Failure.Reason, "over the 100 bytes limit of a fanout patch") {
		t.Fatalf("item %s", dump(it))
	}
	entry(t, r, "rescue")
}

// firstStepWorktreeSpec runs a do step before the fanout, so that a test
// can prepare things once the run id is known.
func firstStepWorktreeSpec() string {
	return strings.Replace(worktreeSpec("all", nil, writeStage, closedVerdict), `      - id: fan
        fanout:`, `      - {id: first, do: first, out: V}
      - id: fan
        after: [first]
        fanout:`, 1)
}

// Without a workspace root (a run record that has none) or outside a git
// repository, the fanout cannot be executed and the run fails.
func TestWorktreeNeedsWorkspace(t *testing.T) {
	t.Run("no workspace root", func(t *testing.T) {
		h, _ := worktreeHarness(t, &procDispatcher{script: writeAgent})
		r := h.plan(firstStepWorktreeSpec(), map[string]any{"items": []any{"a"}})
		ws, _ := json.Marshal(h.ws)
		_, err := h.store.Update(h.ctx, r.RunID, func(cur *store.Snapshot) (*store.Change, error) {
			doc := bytes.Replace(cur.State, []byte(`"workspaceRoot":`+string(ws)+`,`), nil, 1)
			if bytes.Equal(doc, cur.State) {
				t.Fatalf("no workspace root in %s", cur.State)
			}
			return &store.Change{State: doc}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		h.ok(r, "first", `{"value":"1"}`)
		r = h.waitFor(h.e, r.RunID, func(r *Response) bool { return r.Status != StatusRunning })
		wantFailure(t, r, StatusFailed, "fanout execution failed: worktree fanout requires workspaceRoot")
	})
	t.Run("not a repository", func(t *testing.T) {
		h := newHarness(t, Options{Dispatcher: &procDispatcher{script: writeAgent}, Workspaces: &testWorkspaces{dir: t.TempDir()}})
		r := h.plan(worktreeSpec("all", nil, writeStage, closedVerdict), map[string]any{"items": []any{"a"}})
		r = h.waitFor(h.e, r.RunID, func(r *Response) bool { return r.Status != StatusRunning })
		wantFailure(t, r, StatusFailed, "fanout execution failed: worktree isolation needs the workspace inside a git repository")
	})
}

// Worktrees a killed process left for an item are torn down before the
// item's new worktree is made; those of other runs are kept.
func TestWorktreeLeftoverTornDown(t *testing.T) {
	d := &procDispatcher{script: writeAgent}
	h, wtDir := worktreeHarness(t, d)
	r := h.plan(firstStepWorktreeSpec(), map[string]any{"items": []any{"a"}})
	left := filepath.Join(wtDir, worktree.Prefix(r.RunID, "fan", 0)+"killed")
	gitRun(t, h.ws, "worktree", "add", "-q", "--detach", left, "HEAD")
	stray := filepath.Join(wtDir, worktree.Prefix(r.RunID, "fan", 0)+"unregistered")
	other := filepath.Join(wtDir, worktree.Prefix("another-run", "fan", 0)+"x")
	for _, dir := range []string{stray, other} {
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	h.ok(r, "first", `{"value":"1"}`)
	r = h.waitFor(h.e, r.RunID, notFanoutWaiting)
	_ = h.e.Wait(h.ctx)
	entry(t, r, "after")
	for _, gone := range []string{left, stray} {
		if _, err := os.Stat(gone); !os.IsNotExist(err) {
			t.Errorf("leftover %s still there", gone)
		}
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("another run's directory was removed: %v", err)
	}
	if list := gitRun(t, h.ws, "worktree", "list", "--porcelain"); strings.Count(list, "worktree ") != 1 {
		t.Errorf("worktrees left:\n%s", list)
	}
}

// Crash and restart: a child process that drives a worktree fanout kills
// itself (SIGKILL) at a chosen point of the merge; a fresh engine resumes
// the run and finishes the merge exactly once, without dispatching the
// finished items again.
func TestWorktreeMergeCrashResume(t *testing.T) {
	for _, tc := range []struct {
		mode      string
		preMerges int // how many times pre_merge ran in all
		present   int // the item whose re-application is detected (-1: none)
	}{
		{"items-done", 1, -1}, // killed after the last item succeeded, before merging
		{"applied:0", 2, -1},  // killed after applying item 0, before recording it
		{"recorded:0", 1, -1}, // killed after recording item 0
		{"applied:2", 1, 2},   // item 2 deletes a file: re-applying it is detected
	} {
		t.Run(tc.mode, func(t *testing.T) {
			dir := t.TempDir()
			ws, root, wtDir := filepath.Join(dir, "ws"), filepath.Join(dir, "flows"), filepath.Join(dir, "wt")
			gitInit(t, ws)
			if err := os.Mkdir(wtDir, 0o755); err != nil {
				t.Fatal(err)
			}
			cmd := childCmd(t, "fanout-merge", root, ws, wtDir, tc.mode)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			err := cmd.Run()
			if ee, ok := err.(*exec.ExitError); !ok || ee.ProcessState.String() != "signal: killed" {
				t.Fatalf("child ended with %v: %s", err, stderr.String())
			}
			fs, err := store.NewFileStore(root, nil)
			if err != nil {
				t.Fatal(err)
			}
			runs, err := fs.List(context.Background())
			if err != nil || len(runs) != 1 {
				t.Fatalf("runs %v %v", runs, err)
			}
			runID := runs[0].ID
			d := &procDispatcher{script: writeAgent}
			e := New(fs, Options{Dispatcher: d, Workspace: WorkspacePolicy{Default: ws}, Workspaces: &testWorkspaces{dir: wtDir}, Evaluator: testShell{}})
			e.verifyWrites = true
			t.Cleanup(e.Close)
			h := &harness{t: t, ctx: context.Background(), root: dir, store: fs, e: e, ws: ws}
			if _, err := e.Resume(h.ctx, runID); err != nil {
				t.Fatal(err)
			}
			r := h.waitFor(e, runID, notFanoutWaiting)
			ctx, cancel := context.WithTimeout(h.ctx, 20*time.Second)
			defer cancel()
			if err := e.Wait(ctx); err != nil {
				t.Fatal(err)
			}
			if en := entry(t, r, "after"); en.Do != `after [{"value":"a"},{"value":"b"},{"value":"drop"}]` {
				t.Fatalf("after %s", dump(en))
			}
			if n := d.calls.Load(); n != 0 {
				t.Errorf("%d items dispatched again", n)
			}
			merges := h.mergeEvents(runID)
			var got []string
			for _, m := range merges {
				got = append(got, fmt.Sprintf("%v:%v:%v", m["itemIndex"], m["success"], m["alreadyPresent"] == true))
			}
			want := []string{"0:true:false", "1:true:false", "2:true:false"}
			if tc.present >= 0 {
				want[tc.present] = fmt.Sprintf("%d:true:true", tc.present)
			}
			if !slices.Equal(got, want) {
				t.Errorf("merges %v, want %v", got, want)
			}
			if got := staged(t, ws); !slices.Equal(got, []string{"a.txt", "b.txt", "drop.txt", "old.txt"}) {
				t.Errorf("staged %v", got)
			}
			for _, name := range []string{"a", "b", "drop"} {
				if b, _ := os.ReadFile(filepath.Join(ws, name+".txt")); string(b) != name+"\n" {
					t.Errorf("%s.txt: %q", name, b)
				}
			}
			if b, _ := os.ReadFile(filepath.Join(dir, "premerge.log")); strings.Count(string(b), "ran\n") != tc.preMerges {
				t.Errorf("pre_merge ran %q, want %d times", b, tc.preMerges)
			}
			noWorktrees(t, ws, wtDir)
			if _, err := fs.Verify(h.ctx, runID, store.VerifyOptions{}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// killStore kills its own process (SIGKILL) at a point of a worktree
// fanout's merge named by mode: "items-done" right after the write that
// records the third successful item, "applied:N" inside the write that
// records item N's merge (its patch is applied, the record never
// written), "recorded:N" right after that write.
type killStore struct {
	store.Store
	mode      string
	mu        sync.Mutex
	successes int
}

func (k *killStore) Update(ctx context.Context, runID string, fn func(cur *store.Snapshot) (*store.Change, error)) (store.Head, error) {
	kind, arg, _ := strings.Cut(k.mode, ":")
	merged, succeeded := -1, 0
	head, err := k.Store.Update(ctx, runID, func(cur *store.Snapshot) (*store.Change, error) {
		ch, err := fn(cur)
		if ch == nil {
			return ch, err
		}
		for _, ev := range ch.Events {
			var d struct {
				Detail struct {
					ItemIndex int  `json:"itemIndex"`
					Success   bool `json:"success"`
				} `json:"detail"`
			}
			_ = json.Unmarshal(ev.Data, &d)
			switch {
			case ev.Type == "fanout_merge":
				merged = d.Detail.ItemIndex
			case ev.Type == "fanout_attempt_result" && d.Detail.Success:
				succeeded++
			}
		}
		if kind == "applied" && strconv.Itoa(merged) == arg {
			killSelf()
		}
		return ch, err
	})
	if err != nil {
		return head, err
	}
	k.mu.Lock()
	k.successes += succeeded
	n := k.successes
	k.mu.Unlock()
	if kind == "items-done" && succeeded > 0 && n == 3 || kind == "recorded" && strconv.Itoa(merged) == arg {
		killSelf()
	}
	return head, err
}

// killSelf ends this process at once, as a crash does (SIGKILL on Unix,
// TerminateProcess on Windows).
func killSelf() {
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		_ = p.Kill()
	}
	select {} // the signal is on its way
}

// mergeCrashChild plans a worktree fanout run of three items on a store
// that kills the process at the point mode names (see killStore).
func mergeCrashChild(root, ws, wtDir, mode string) int {
	ctx := context.Background()
	fs, err := store.NewFileStore(root, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	e := New(&killStore{Store: fs, mode: mode}, Options{Dispatcher: &procDispatcher{script: writeAgent},
		Workspace: WorkspacePolicy{Default: ws}, Workspaces: &testWorkspaces{dir: wtDir}, Evaluator: testShell{}})
	spec := strings.Replace(worktreeSpec("all", []string{"echo ran >> ../premerge.log"}, writeStage, closedVerdict), "concurrency: 2", "concurrency: 3", 1)
	r, err := e.Plan(ctx, PlanRequest{Spec: []byte(spec), Input: js(map[string]any{"items": []any{"a", "b", "drop"}})})
	if err != nil {
		fmt.Fprintln(os.Stderr, "plan:", err)
		return 1
	}
	_ = e.Wait(ctx)
	a, err := e.Audit(ctx, r.RunID)
	fmt.Fprintf(os.Stderr, "the fanout finished without reaching the kill point: %v\n", err)
	if err == nil {
		fmt.Fprintf(os.Stderr, "%s %s\n", a.Status, dump(a.Steps["fan"]))
	}
	return 3
}

// An item agent that replaces its worktree with a link to a secret
// directory cannot lead its stage's file functions there: the worktree is
// opened through an os.Root of the directory it was made in (its anchor),
// and the ensure fails saying the root was replaced.
func TestWorktreeSwappedForALinkIsRefused(t *testing.T) {
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	agent := fmt.Sprintf(`read task
here=$(pwd)
mv "$here" "$here.old" && ln -s %s "$here"
printf '{"value":"x"}'`, strconv.Quote(outside))
	stages := `            - do: "Write ${item}"
              out: V
              ensure:
                - expr: "file_contains('secret.txt', 's3cret')"`
	h, _ := worktreeHarness(t, &procDispatcher{script: agent})
	r := h.plan(worktreeSpec("all", nil, stages, closedVerdict), map[string]any{"items": []any{"a"}})
	r = h.waitFor(h.e, r.RunID, notFanoutWaiting)
	_ = h.e.Wait(h.ctx)
	fan := h.stepState(r.RunID, "fan")
	it := fan.Fanout.Items[0]
	if it.Status != StepFailed || len(it.Attempts) == 0 {
		t.Fatalf("the item read through the swapped worktree: %s", dump(fan.Fanout.Items))
	}
	// The first attempt's ensure met the swapped worktree (a retry then
	// finds a link where its directory was).
	if first := it.Attempts[0]; first.Failure == nil || !strings.Contains(first.Failure.Reason, "no longer inside") {
		t.Fatalf("item failure %s, want the worktree refused as replaced", dump(first))
	}
}
