package driver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stratum-go/stratum/agent"
	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/ir"
	"github.com/stratum-go/stratum/store"
)

// fixture is a store, a workspace and a Driver+Engine pair over them.
type fixture struct {
	t      *testing.T
	store  *store.FileStore
	ws     string
	mu     sync.Mutex
	events []engine.Event
	notes  []string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	dir := t.TempDir()
	st, err := store.NewFileStore(filepath.Join(dir, "flows"), nil)
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, store: st, ws: ws}
}

// driver makes a Driver with opts (events and notices recorded) and an
// Engine using its Dispatcher.
func (f *fixture) driver(opts Options) (*Driver, *engine.Engine) {
	opts.Event = func(ev engine.Event) {
		f.mu.Lock()
		f.events = append(f.events, ev)
		f.mu.Unlock()
	}
	opts.Notice = func(s string) {
		f.mu.Lock()
		f.notes = append(f.notes, s)
		f.mu.Unlock()
	}
	if opts.PollInterval == 0 {
		opts.PollInterval = 10 * time.Millisecond
	}
	d := New(opts)
	e := engine.New(f.store, engine.Options{Dispatcher: d.Dispatcher(), Workspace: engine.WorkspacePolicy{Default: f.ws},
		Evaluator: Shell{}, Workspaces: &GitWorkspaces{TempDir: f.t.TempDir()}})
	f.t.Cleanup(e.Close)
	return d, e
}

// trace is the recorded events as "type(step)" strings, ledger debits
// left out.
func (f *fixture) trace() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, ev := range f.events {
		if strings.HasSuffix(string(ev.Type), "debit") || ev.Type == engine.EventAttemptStarted {
			continue
		}
		s := string(ev.Type)
		if ev.StepID != "" {
			s += "(" + ev.StepID + ")"
		}
		out = append(out, s)
	}
	return out
}

// script writes an executable sh agent and returns its path.
func script(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "agent.sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\nset -eu\nreq=$(cat)\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

var (
	quickstartOnce sync.Once
	quickstartPath string
	quickstartErr  error
)

// quickstartAgent builds examples/agents/quickstart-agent once.
func quickstartAgent(t *testing.T) string {
	t.Helper()
	quickstartOnce.Do(func() {
		dir, err := os.MkdirTemp("", "stratum-driver-test-")
		if err != nil {
			quickstartErr = err
			return
		}
		quickstartPath = filepath.Join(dir, "quickstart-agent")
		out, err := exec.Command("go", "build", "-o", quickstartPath, "../examples/agents/quickstart-agent").CombinedOutput()
		if err != nil {
			quickstartErr = fmt.Errorf("go build: %v: %s", err, out)
		}
	})
	if quickstartErr != nil {
		t.Fatal(quickstartErr)
	}
	return quickstartPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if quickstartPath != "" {
		os.RemoveAll(filepath.Dir(quickstartPath))
	}
	os.Exit(code)
}

func plan(t *testing.T, spec string) *ir.Plan {
	t.Helper()
	p, ds := ir.Build([]byte(spec))
	if len(ds) > 0 {
		t.Fatalf("spec: %v", ds)
	}
	return p
}

const retrySpec = `version: 1
contracts:
  Draft:
    text: string
    confidence: number
flows:
  entry: main
  main:
    input:
      topic: string
    output:
      from: "${draft.output}"
      contract: Draft
    steps:
      - id: outline
        do: "Outline ${input.topic}"
        out: Draft
      - id: draft
        after: [outline]
        do: "Draft from ${outline.output.text}"
        out: Draft
        ensure:
          - expr: "result.confidence >= 0.8"
`

// The quickstart agent answers draft wrongly on attempt 1: the driver
// reports the rejection and the retry carries previousFailure.
func TestDriveRetriesWithFailureContext(t *testing.T) {
	f := newFixture(t)
	d, e := f.driver(Options{Agent: quickstartAgent(t)})
	out, err := d.Start(context.Background(), e, engine.PlanRequest{Spec: []byte(retrySpec), Input: js(map[string]any{"topic": "go"})})
	if err != nil {
		t.Fatal(err)
	}
	if out.Response.Status != engine.StatusCompleted || !out.Finished() {
		t.Fatalf("status %s, failure %+v", out.Response.Status, out.Response.Failure)
	}
	if b, _ := json.Marshal(out.Response.Output); !strings.Contains(string(b), `"confidence":0.9`) {
		t.Errorf("output %s", b)
	}
	want := []string{"planned", "ready(outline)", "result(outline)", "ready(draft)", "result(draft)", "ready(draft)", "result(draft)", "completed"}
	if tr := f.trace(); !slices.Equal(tr, want) {
		t.Errorf("trace %v, want %v", tr, want)
	}
	a, err := e.Audit(context.Background(), out.RunID)
	if err != nil {
		t.Fatal(err)
	}
	att := a.Steps["draft"].Attempts
	if len(att) != 2 || att[0].Failure == nil || !strings.Contains(att[0].Failure.Reason, "result.confidence >= 0.8") {
		t.Fatalf("draft attempts %+v", att)
	}
	if att[1].Model != "quickstart-agent" {
		t.Errorf("telemetry model %q, want the command's name", att[1].Model)
	}
}

// Two independent steps are handed to agents at the same time: each agent
// waits until the other has started.
func TestDriveRunsIndependentStepsConcurrently(t *testing.T) {
	f := newFixture(t)
	marks := t.TempDir()
	agentPath := script(t, fmt.Sprintf(`
case "$req" in *'"stepId":"a"'*) me=a other=b ;; *) me=b other=a ;; esac
touch %[1]s/$me
i=0
while [ ! -e %[1]s/$other ]; do
  i=$((i+1)); [ $i -gt 100 ] && { echo "the other step never started" >&2; exit 1; }
  sleep 0.05
done
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
	d, e := f.driver(Options{Agent: agentPath})
	out, err := d.Start(context.Background(), e, engine.PlanRequest{Spec: []byte(spec), Input: js(map[string]any{})})
	if err != nil {
		t.Fatal(err)
	}
	if out.Response.Status != engine.StatusCompleted {
		t.Fatalf("status %s: %+v (a and b did not run concurrently)", out.Response.Status, out.Response.Failure)
	}
}

const gateSpec = `version: 1
contracts:
  V:
    v: string
flows:
  entry: main
  main:
    input: {}
    max_rounds: 2
    output:
      from: "${work.output}"
      contract: V
    steps:
      - id: work
        do: "work"
        out: V
      - id: review
        after: [work]
        gate:
          on_approve: null
          on_revise: work
          on_kill: null
`

func okAgent(t *testing.T) string {
	return script(t, `echo '{"v": "ok"}'`)
}

func TestDriveGateModes(t *testing.T) {
	ctx := context.Background()
	t.Run("approve", func(t *testing.T) {
		f := newFixture(t)
		d, e := f.driver(Options{Agent: okAgent(t), Gates: GateApprove})
		out, err := d.Start(ctx, e, engine.PlanRequest{Spec: []byte(gateSpec), Input: js(map[string]any{})})
		if err != nil || out.Response.Status != engine.StatusCompleted {
			t.Fatalf("%v %+v", err, out)
		}
	})
	t.Run("kill", func(t *testing.T) {
		f := newFixture(t)
		d, e := f.driver(Options{Agent: okAgent(t), Gates: GateKill})
		out, err := d.Start(ctx, e, engine.PlanRequest{Spec: []byte(gateSpec), Input: js(map[string]any{})})
		if err != nil || out.Response.Status != engine.StatusFailed || out.Response.Failure.Reason != "gate review killed flow" {
			t.Fatalf("%v %+v", err, out.Response)
		}
	})
	t.Run("stop then resume", func(t *testing.T) {
		f := newFixture(t)
		d, e := f.driver(Options{Agent: okAgent(t)})
		out, err := d.Start(ctx, e, engine.PlanRequest{Spec: []byte(gateSpec), Input: js(map[string]any{})})
		if err != nil {
			t.Fatal(err)
		}
		if out.Finished() || len(out.Gates) != 1 || out.Gates[0].StepID != "review" || out.Gates[0].GateToken == "" {
			t.Fatalf("want a stop at review, got %+v", out)
		}
		// A person revises from elsewhere; the resumed drive reruns work
		// and stops at the gate's next round.
		if _, err := e.ResolveGate(ctx, engine.GateRequest{RunID: out.RunID, StepID: "review", Decision: "revise", GateToken: out.Gates[0].GateToken}); err != nil {
			t.Fatal(err)
		}
		out2, err := d.Resume(ctx, e, out.RunID)
		if err != nil {
			t.Fatal(err)
		}
		if len(out2.Gates) != 1 || out2.Gates[0].GateToken == out.Gates[0].GateToken || out2.Gates[0].Round != 1 {
			t.Fatalf("want a new round of review, got %+v", out2.Gates)
		}
	})
	t.Run("ask", func(t *testing.T) {
		f := newFixture(t)
		var asked []string
		ask := func(ctx context.Context, g engine.GateView) (GateAnswer, error) {
			asked = append(asked, g.StepID)
			if len(asked) == 1 {
				return GateAnswer{Decision: engine.DecisionRevise}, nil
			}
			return GateAnswer{Decision: engine.DecisionApprove}, nil
		}
		d, e := f.driver(Options{Agent: okAgent(t), Gates: GateAsk, AskGate: ask})
		out, err := d.Start(ctx, e, engine.PlanRequest{Spec: []byte(gateSpec), Input: js(map[string]any{})})
		if err != nil || out.Response.Status != engine.StatusCompleted {
			t.Fatalf("%v %+v", err, out)
		}
		if !slices.Equal(asked, []string{"review", "review"}) {
			t.Errorf("asked %v", asked)
		}
	})
	t.Run("ask without an answer stops", func(t *testing.T) {
		f := newFixture(t)
		ask := func(context.Context, engine.GateView) (GateAnswer, error) { return GateAnswer{}, ErrNoAnswer }
		d, e := f.driver(Options{Agent: okAgent(t), Gates: GateAsk, AskGate: ask})
		out, err := d.Start(ctx, e, engine.PlanRequest{Spec: []byte(gateSpec), Input: js(map[string]any{})})
		if err != nil || out.Finished() || len(out.Gates) != 1 {
			t.Fatalf("%v %+v", err, out)
		}
	})
	t.Run("ask withdrawn when decided elsewhere", func(t *testing.T) {
		f := newFixture(t)
		other := engine.New(f.store, engine.Options{}) // another process
		defer other.Close()
		withdrawn := make(chan struct{})
		ask := func(ctx context.Context, g engine.GateView) (GateAnswer, error) {
			if _, err := other.ResolveGate(context.Background(), engine.GateRequest{RunID: g.RunID, StepID: g.StepID, Decision: "approve", GateToken: g.GateToken}); err != nil {
				return GateAnswer{}, err
			}
			<-ctx.Done() // the question stays open until withdrawn
			close(withdrawn)
			return GateAnswer{}, ctx.Err()
		}
		d, e := f.driver(Options{Agent: okAgent(t), Gates: GateAsk, AskGate: ask})
		out, err := d.Start(ctx, e, engine.PlanRequest{Spec: []byte(gateSpec), Input: js(map[string]any{})})
		if err != nil || out.Response.Status != engine.StatusCompleted {
			t.Fatalf("%v %+v", err, out)
		}
		select {
		case <-withdrawn:
		default:
			t.Error("the question was not withdrawn")
		}
	})
	t.Run("wait for another process", func(t *testing.T) {
		f := newFixture(t)
		d, e := f.driver(Options{Agent: okAgent(t), Gates: GateWait})
		other := engine.New(f.store, engine.Options{})
		defer other.Close()
		decided := make(chan struct{})
		// The other process's write may still be finishing (its index)
		// when the drive sees the decision: wait for it before the
		// directory is removed.
		defer func() { <-decided }()
		go func() {
			defer close(decided)
			// Decide as soon as the gate is listed.
			for i := 0; i < 500; i++ {
				gates, _ := other.ListGates(ctx, "")
				if len(gates) == 1 {
					_, _ = other.ResolveGate(ctx, engine.GateRequest{RunID: gates[0].RunID, StepID: "review", Decision: "approve", GateToken: gates[0].GateToken})
					return
				}
				time.Sleep(10 * time.Millisecond)
			}
		}()
		out, err := d.Start(ctx, e, engine.PlanRequest{Spec: []byte(gateSpec), Input: js(map[string]any{})})
		if err != nil || out.Response.Status != engine.StatusCompleted {
			t.Fatalf("%v %+v", err, out)
		}
	})
}

// An agent that cannot start halts the drive, leaving the run intact; a
// resume with a working agent finishes it.
func TestDriveHaltAndResume(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	missing := &agent.Resolver{LookPath: func(string) (string, error) { return "", exec.ErrNotFound }}
	d, e := f.driver(Options{Resolver: missing}) // steps use claude, not "installed"
	_, err := d.Start(ctx, e, engine.PlanRequest{Spec: []byte(retrySpec), Input: js(map[string]any{"topic": "x"})})
	var halt *HaltError
	if !errors.As(err, &halt) || halt.StepID != "outline" || !errors.Is(err, agent.ErrNotFound) {
		t.Fatalf("want a halt at outline for a missing claude, got %v", err)
	}
	st, err := e.Status(ctx, halt.RunID)
	if err != nil || st.Status != engine.StatusReady {
		t.Fatalf("run after the halt: %v %+v", err, st)
	}
	d2, e2 := f.driver(Options{Agent: quickstartAgent(t)})
	out, err := d2.Resume(ctx, e2, halt.RunID)
	if err != nil || out.Response.Status != engine.StatusCompleted {
		t.Fatalf("resume: %v %+v", err, out)
	}
}

// A cancel from another process stops the agent that is running and ends
// the drive with the run cancelled.
func TestDriveObservesCancel(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	started := filepath.Join(t.TempDir(), "started")
	slow := script(t, fmt.Sprintf("touch %s\nsleep 30\necho '{}'\n", started))
	d, e := f.driver(Options{Agent: slow})
	other := engine.New(f.store, engine.Options{})
	defer other.Close()
	cancelled := make(chan struct{})
	defer func() { <-cancelled }() // its write may finish after the drive saw it
	go func() {
		defer close(cancelled)
		for i := 0; i < 1000; i++ {
			if _, err := os.Stat(started); err == nil {
				runs, _ := other.ListRuns(ctx)
				if len(runs) == 1 {
					_, _ = other.Cancel(ctx, runs[0].RunID, "test")
					return
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	begin := time.Now()
	out, err := d.Start(ctx, e, engine.PlanRequest{Spec: []byte(retrySpec), Input: js(map[string]any{"topic": "x"})})
	if err != nil || out.Response.Status != engine.StatusCancelled {
		t.Fatalf("%v %+v", err, out)
	}
	if time.Since(begin) > 20*time.Second {
		t.Errorf("the drive waited for the agent instead of stopping it")
	}
}

// An interrupted drive returns a HaltError wrapping the context's cause.
func TestDriveInterrupted(t *testing.T) {
	f := newFixture(t)
	slow := script(t, "sleep 30\necho '{}'\n")
	d, e := f.driver(Options{Agent: slow})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := d.Start(ctx, e, engine.PlanRequest{Spec: []byte(retrySpec), Input: js(map[string]any{"topic": "x"})})
	var halt *HaltError
	if !errors.As(err, &halt) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v", err)
	}
}

func TestContractFieldOrder(t *testing.T) {
	c := &engine.Contract{Root: "Draft", Contracts: map[string]map[string]string{
		"Draft":  {"text": "string", "confidence": "number", "sources": "Source[]"},
		"Source": {"line": "integer", "file": "string"},
	}}
	const spec = `version: 1
contracts:
  Source:
    file: string
    line: integer
  Draft:
    text: string
    confidence: number
    sources: Source[]
flows:
  entry: m
  m:
    input: {}
    output:
      from: "${a.output}"
      contract: Draft
    steps:
      - id: a
        do: "x"
        out: Draft
`
	names := func(ac *agent.Contract) []string {
		var out []string
		for _, f := range ac.Fields {
			out = append(out, f.Name)
		}
		return out
	}
	withPlan := agentContract(plan(t, spec), c)
	if got := names(withPlan); !slices.Equal(got, []string{"text", "confidence", "sources"}) {
		t.Errorf("declaration order: %v", got)
	}
	if len(withPlan.Contracts) != 1 || !slices.Equal(names(&withPlan.Contracts[0]), []string{"file", "line"}) {
		t.Errorf("referenced contracts: %+v", withPlan.Contracts)
	}
	without := agentContract(nil, c)
	if got := names(without); !slices.Equal(got, []string{"confidence", "sources", "text"}) {
		t.Errorf("sorted order: %v", got)
	}
	b, _ := json.Marshal(agent.Input(agent.Request{Contract: withPlan}))
	if !strings.Contains(string(b), `{"name":"text","type":"string","optional":false}`) {
		t.Errorf("agent input %s", b)
	}
}

// Consumer fanout items are ready entries the driver hands to agents like
// do steps.
func TestDriveConsumerFanout(t *testing.T) {
	f := newFixture(t)
	agentPath := script(t, `
case "$req" in
*'"stepId":"fan/'*) item=$(printf '%s' "$req" | sed 's/.*"task":"Check \([a-z]*\)".*/\1/'); echo '{"v": "'$item'"}' ;;
*) echo '{"v": "all"}' ;;
esac
`)
	const spec = `version: 1
contracts:
  V:
    v: string
flows:
  entry: main
  main:
    input:
      xs: string[]
    output:
      from: "${done.output}"
      contract: V
    steps:
      - id: fan
        fanout:
          over: "${input.xs}"
          concurrency: 2
          isolation: none
          require: all
          merge: sequential
          dispatch: consumer
          steps:
            - do: "Check ${item}"
              out: V
      - id: done
        do: "Summarize ${fan.output}"
        out: V
`
	d, e := f.driver(Options{Agent: agentPath})
	out, err := d.Start(context.Background(), e, engine.PlanRequest{Spec: []byte(spec), Input: js(map[string]any{"xs": []any{"a", "b", "c"}})})
	if err != nil || out.Response.Status != engine.StatusCompleted {
		t.Fatalf("%v %+v", err, out)
	}
	a, _ := e.Audit(context.Background(), out.RunID)
	b, _ := json.Marshal(a.Steps["fan"].Output)
	if string(b) != `[{"v":"a"},{"v":"b"},{"v":"c"}]` {
		t.Errorf("fan output %s", b)
	}
}

// js is the JSON of v, for requests the tests build from Go values.
func js(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
