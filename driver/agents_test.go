package driver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stratum-go/stratum/agent"
	"github.com/stratum-go/stratum/engine"
)

const twoStepSpec = `version: 1
contracts:
  V:
    v: string
flows:
  entry: main
  main:
    input: {}
    output:
      from: "${b.output}"
      contract: V
    steps:
      - id: a
        do: "a"
        out: V
      - id: b
        do: "b after ${a.output.v}"
        out: V
`

// stdinOf reads the request a recording agent saved for step id.
func stdinOf(t *testing.T, dir, id string) agent.CommandInput {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, id+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var in agent.CommandInput
	if err := json.Unmarshal(b, &in); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return in
}

// recordingAgent saves each request as DIR/<stepId>.json and answers.
func recordingAgent(t *testing.T, dir string) string {
	return script(t, fmt.Sprintf(`id=$(printf '%%s' "$req" | sed 's/.*"stepId":"\([^"]*\)".*/\1/' | tr / _)
printf '%%s' "$req" > %s/$id.json
echo "working on $id" >&2
echo '{"v": "ok"}'
`, dir))
}

// The person's options reach every attempt; the per-step hook changes
// them for one step.
func TestDriveAgentOptions(t *testing.T) {
	f := newFixture(t)
	dir := t.TempDir()
	var mu sync.Mutex
	var progress []string
	setup := AgentSetup{
		Options: agent.Options{Sandbox: agent.SandboxWorkspaceWrite, Model: "m1", Effort: "high", Timeout: time.Minute},
		ForStep: func(step string, o agent.Options) agent.Options {
			if step == "b" {
				o.Sandbox = agent.SandboxDangerFullAccess
			}
			return o
		},
		Progress: func(id, line string) {
			mu.Lock()
			defer mu.Unlock()
			progress = append(progress, id+": "+line)
		},
	}
	d, e := f.driver(Options{Agent: recordingAgent(t, dir), Agents: setup})
	out, err := d.Start(context.Background(), e, engine.PlanRequest{Spec: []byte(twoStepSpec), Input: js(map[string]any{})})
	if err != nil || out.Response.Status != engine.StatusCompleted {
		t.Fatalf("%v %+v", err, out)
	}
	a, b := stdinOf(t, dir, "a"), stdinOf(t, dir, "b")
	if a.Sandbox != agent.SandboxWorkspaceWrite || a.Model != "m1" || a.Effort != "high" || a.TimeoutMs != 60000 {
		t.Errorf("step a got %+v", a)
	}
	if b.Sandbox != agent.SandboxDangerFullAccess || b.Model != "m1" {
		t.Errorf("step b got %+v (the per-step hook did not apply)", b)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Contains(progress, "a: agent.sh: working on a") || !slices.Contains(progress, "b: agent.sh: working on b") {
		t.Errorf("progress %q", progress)
	}
}

// Without options a do step is read-only, as before.
func TestDriveDefaultSandboxIsReadOnly(t *testing.T) {
	f := newFixture(t)
	dir := t.TempDir()
	d, e := f.driver(Options{Agent: recordingAgent(t, dir)})
	if _, err := d.Start(context.Background(), e, engine.PlanRequest{Spec: []byte(twoStepSpec), Input: js(map[string]any{})}); err != nil {
		t.Fatal(err)
	}
	if in := stdinOf(t, dir, "a"); in.Sandbox != agent.SandboxReadOnly || in.TimeoutMs != 0 {
		t.Errorf("step a got %+v", in)
	}
}

// The measured wall time of each attempt is reported as ms usage, so a
// flow's budget.ms stops a run whose agents take too long.
func TestDriveReportsMeasuredTime(t *testing.T) {
	f := newFixture(t)
	slow := script(t, "sleep 0.05\necho '{\"v\": \"ok\"}'\n")
	spec := strings.Replace(twoStepSpec, "    input: {}\n", "    input: {}\n    budget: {ms: 20}\n", 1)
	d, e := f.driver(Options{Agent: slow})
	out, err := d.Start(context.Background(), e, engine.PlanRequest{Spec: []byte(spec), Input: js(map[string]any{})})
	if err != nil {
		t.Fatal(err)
	}
	if out.Response.Status != engine.StatusBudgetExhausted {
		t.Fatalf("status %s %+v, want the ms budget exhausted", out.Response.Status, out.Response.Failure)
	}
	a, _ := e.Audit(context.Background(), out.RunID)
	if att := a.Steps["a"].Attempts; len(att) != 1 || att[0].Usage == nil || att[0].Usage.MS <= 0 {
		t.Errorf("attempts of a %+v, want ms usage", att)
	}
}

// An agent that cannot run at all (a logged-out claude, an offline codex:
// shapes captured from the real CLIs) halts the drive without using an
// attempt; a resume with a working agent finishes the run.
func TestDriveUnavailableAgentHalts(t *testing.T) {
	tests := []struct {
		agent, capture string
		kind           agent.UnavailableKind
	}{
		{"claude", "../agent/testdata/claude/not-logged-in.jsonl", agent.UnavailableAuth},
		{"codex", "../agent/testdata/codex/no-network.jsonl", agent.UnavailableNetwork},
	}
	for _, tt := range tests {
		t.Run(tt.agent, func(t *testing.T) {
			ctx := context.Background()
			f := newFixture(t)
			capture, err := filepath.Abs(tt.capture)
			if err != nil {
				t.Fatal(err)
			}
			fake := script(t, fmt.Sprintf("cat %s\nexit 1\n", capture))
			resolver := &agent.Resolver{LookPath: func(name string) (string, error) {
				if name != tt.agent {
					return "", fmt.Errorf("%s: not found", name)
				}
				return fake, nil
			}}
			d, e := f.driver(Options{Agent: tt.agent, Resolver: resolver})
			_, err = d.Start(ctx, e, engine.PlanRequest{Spec: []byte(twoStepSpec), Input: js(map[string]any{})})
			var halt *HaltError
			var un *agent.UnavailableError
			if !errors.As(err, &halt) || halt.StepID != "a" || !errors.As(err, &un) || un.Kind != tt.kind {
				t.Fatalf("want a halt at a for an unavailable %s (%s), got %v", tt.agent, tt.kind, err)
			}
			a, err := e.Audit(ctx, halt.RunID)
			if err != nil {
				t.Fatal(err)
			}
			if st := a.Steps["a"]; st.Status != engine.StepReady || len(st.Attempts) != 0 {
				t.Fatalf("step a after the halt: %s with attempts %+v, want ready with none", st.Status, st.Attempts)
			}
			d2, e2 := f.driver(Options{Agent: okAgent(t)})
			out, err := d2.Resume(ctx, e2, halt.RunID)
			if err != nil || out.Response.Status != engine.StatusCompleted {
				t.Fatalf("resume: %v %+v", err, out)
			}
		})
	}
}

// An agent that outlives the attempt's time limit is stopped and the
// attempt fails, naming the limit; the retry carries that failure.
func TestDriveAttemptTimeLimit(t *testing.T) {
	f := newFixture(t)
	marks := t.TempDir()
	hangOnce := script(t, fmt.Sprintf(`if [ ! -e %[1]s/first ]; then touch %[1]s/first; sleep 30; fi
echo '{"v": "ok"}'
`, marks))
	d, e := f.driver(Options{Agent: hangOnce, Agents: AgentSetup{Options: agent.Options{Timeout: 300 * time.Millisecond}}})
	out, err := d.Start(context.Background(), e, engine.PlanRequest{Spec: []byte(twoStepSpec), Input: js(map[string]any{})})
	if err != nil || out.Response.Status != engine.StatusCompleted {
		t.Fatalf("%v %+v", err, out)
	}
	a, _ := e.Audit(context.Background(), out.RunID)
	att := a.Steps["a"].Attempts
	if len(att) != 2 || att[0].Failure == nil || att[0].Failure.Reason != "agent timed out after 300ms (the attempt's time limit); its process group was stopped" {
		t.Fatalf("attempts of a %+v", att)
	}
}

// At the run's time limit the agent at work is stopped, its attempt is
// recorded as failed naming the limit, and the drive halts resumably.
func TestDriveRunTimeLimit(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	hang := script(t, "sleep 30\necho '{\"v\": \"late\"}'\n")
	d, e := f.driver(Options{Agent: hang, RunTimeout: 300 * time.Millisecond})
	_, err := d.Start(ctx, e, engine.PlanRequest{Spec: []byte(twoStepSpec), Input: js(map[string]any{})})
	var halt *HaltError
	var limit *RunTimeLimitError
	if !errors.As(err, &halt) || !errors.As(err, &limit) || limit.Limit != 300*time.Millisecond {
		t.Fatalf("want a halt at the run's time limit, got %v", err)
	}
	a, err := e.Audit(ctx, halt.RunID)
	if err != nil {
		t.Fatal(err)
	}
	att := a.Steps["a"].Attempts
	if len(att) != 1 || att[0].Failure == nil || !strings.HasPrefix(att[0].Failure.Reason, "stopped at the run's time limit of 300ms") {
		t.Fatalf("attempts of a %+v", att)
	}
	if a.Status != engine.StatusRunning {
		t.Errorf("status %s, want the run left running", a.Status)
	}
}

// Engine fanout items get the person's options (a worktree item may write
// it) and report measured time.
func TestDispatcherOptionsAndUsage(t *testing.T) {
	dir := t.TempDir()
	x := NewDispatcher(nil, recordingAgent(t, dir)).WithAgents(AgentSetup{Options: agent.Options{Model: "m2", Sandbox: agent.SandboxDangerFullAccess}})
	for i, sandbox := range []string{engine.SandboxReadOnly, engine.SandboxWorkspaceWrite} {
		res, err := x.Dispatch(context.Background(), engine.DispatchRequest{RunID: "r", StepID: "fan", ItemIndex: i, Agent: "claude",
			Prompt: "p", Attempt: 1, Workdir: dir, Sandbox: sandbox})
		if err != nil || res.Failure != "" {
			t.Fatalf("%v %+v", err, res)
		}
		if res.Usage.MS <= 0 || res.Telemetry == nil {
			t.Errorf("item %d: usage %+v telemetry %+v, want measured ms", i, res.Usage, res.Telemetry)
		}
	}
	if in := stdinOf(t, dir, "fan_0"); in.Model != "m2" || in.Sandbox != agent.SandboxDangerFullAccess {
		t.Errorf("item 0 got %+v", in)
	}
	if in := stdinOf(t, dir, "fan_1"); in.Model != "m2" || in.Sandbox != agent.SandboxWorkspaceWrite {
		t.Errorf("item 1 (worktree) got %+v", in)
	}
}
