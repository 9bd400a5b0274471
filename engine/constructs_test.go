package engine

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stratum-go/stratum/expr"
	"github.com/stratum-go/stratum/judge"
)

// Carry: the initial value comes from plan; a revise rewrites it from the
// reviewed step's output, with provenance, and the rewritten value is what
// the next round reads.
const carrySpec = `
version: 1
contracts:
  Plan: {wave: string}
  Work: {next: string}
flows:
  entry: main
  main:
    input: {goal: string}
    output: {from: "${work.output}", contract: Work}
    max_rounds: 3
    carry:
      wave:
        initial: "${plan.output.wave}"
        on_revise:
          review: "${work.output.next}"
    steps:
      - id: plan
        do: "plan ${input.goal}"
        out: Plan
      - id: work
        after: [plan]
        do: "work on ${wave}"
        out: Work
      - id: review
        after: [work]
        gate: {on_approve: null, on_revise: work, on_kill: null}
`

func TestCarryAcrossRevise(t *testing.T) {
	h := newHarness(t, Options{})
	r := h.plan(carrySpec, map[string]any{"goal": "g"})
	r = h.ok(r, "plan", `{"wave":"w1"}`)
	if en := entry(t, r, "work"); en.Do != "work on w1" {
		t.Fatalf("work do %q", en.Do)
	}
	r = h.ok(r, "work", `{"next":"w2"}`)
	r = h.resolve(r.RunID, "review", DecisionRevise)
	if en := entry(t, r, "work"); en.Do != "work on w2" {
		t.Fatalf("round 2 work do %q", en.Do)
	}
	a := h.audit(r.RunID)
	c := a.Carry["wave"]
	if c == nil || c.Value.Data != "w2" || c.Provenance.Kind != "revise" || c.Provenance.Gate != "review" ||
		c.Provenance.Round != 1 || c.Provenance.GateToken == "" || c.Provenance.SourceStep != "plan" {
		t.Fatalf("carry %s", dump(c))
	}
	r = h.ok(r, "work", `{"next":"w3"}`)
	r = h.resolve(r.RunID, "review", DecisionApprove)
	wantStatus(t, r, StatusCompleted)
	n := 0
	for _, ty := range h.eventTypes(r.RunID) {
		if strings.HasPrefix(ty, "carry_updated") {
			n++
		}
	}
	if n != 2 {
		t.Fatalf("carry_updated events %d", n)
	}
}

const setSpec = `
version: 1
contracts:
  A: {summary: string, score: number}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${norm.output}", contract: A}
    steps:
      - id: analyze
        do: analyze
        out: A
      - id: norm
        after: [analyze]
        set:
          summary: "result.analyze.summary"
          score: "result.analyze.score * 2"
        out: A
        ensure:
          - expr: "result.score >= 0"
`

func TestSet(t *testing.T) {
	h := newHarness(t, Options{})
	r := h.plan(setSpec, map[string]any{})
	r = h.ok(r, "analyze", `{"summary":"s","score":2}`)
	wantStatus(t, r, StatusCompleted)
	if jsonOf(t, r.Output) != `{"summary":"s","score":4}` {
		t.Fatalf("output %s", jsonOf(t, r.Output))
	}
	// An ensure failure of a set step fails the run: no retry.
	r = h.plan(setSpec, map[string]any{})
	r = h.ok(r, "analyze", `{"summary":"s","score":-1}`)
	wantFailure(t, r, StatusFailed, `set "norm": ensure "result.score >= 0" failed`)
	// An expression error fails with the error, not a silent false.
	r = h.plan(strings.Replace(setSpec, "result.analyze.score * 2", "result.analyze.missing", 1), map[string]any{})
	r = h.ok(r, "analyze", `{"summary":"s","score":1}`)
	wantFailure(t, r, StatusFailed, `field "score"`)
}

func evaluateSpec(command string, timeout int) string {
	return `
version: 1
contracts:
  V: {status: string, children: array, reason: string}
flows:
  entry: main
  main:
    input: {n: number}
    output: {from: "${check.output}", contract: V}
    steps:
      - id: check
        evaluate:
          command: ` + strconv.Quote(command) + `
          in: "${input.n}"
          timeout_ms: ` + itoa(timeout) + `
        out: V
`
}

func TestEvaluate(t *testing.T) {
	h := newHarness(t, Options{})
	// stdin carries the rendered input; the command runs in the workspace.
	if err := os.WriteFile(filepath.Join(h.ws, "marker"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := `read n; test -f marker && printf "{\"status\":\"closed\",\"children\":[],\"reason\":\"n=%s\"}" "$n"`
	r := h.plan(evaluateSpec(cmd, 5000), map[string]any{"n": 7})
	wantStatus(t, r, StatusCompleted)
	if jsonOf(t, r.Output) != `{"status":"closed","children":[],"reason":"n=7"}` {
		t.Fatalf("output %s", jsonOf(t, r.Output))
	}
	for _, tc := range []struct{ cmd, reason string }{
		{`echo oops >&2; exit 3`, "command exited with a non-zero status (exit 3: oops)"},
		{`echo not json`, "output was not valid JSON"},
		{`echo '{"status":"open","children":[],"reason":"r"}'`, "an open verdict needs at least one child"},
	} {
		r := h.plan(evaluateSpec(tc.cmd, 5000), map[string]any{"n": 1})
		wantFailure(t, r, StatusFailed, tc.reason)
	}
}

func TestEvaluateTimeoutKillsGroup(t *testing.T) {
	h := newHarness(t, Options{})
	pidFile := filepath.Join(h.ws, "child.pid")
	// The command leaves a grandchild in its process group; the timeout
	// must kill it too.
	cmd := `sleep 30 & echo $! > child.pid; wait`
	r := h.plan(evaluateSpec(cmd, 300), map[string]any{"n": 1})
	wantFailure(t, r, StatusFailed, "evaluate: command timed out")
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid := strings.TrimSpace(string(b))
	// SIGKILL takes effect when the process is next scheduled: on a busy
	// machine it may still be running for a moment after the run failed.
	// It must be gone (or a zombie) soon after; one that lives for 10 s
	// of the 30 it sleeps was not killed.
	var status []byte
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if status, err = os.ReadFile("/proc/" + pid + "/stat"); err != nil || strings.Contains(string(status), ") Z ") {
			return
		}
	}
	t.Fatalf("grandchild %s survived the timeout: %s", pid, status)
}

// A judge that holds when the value mentions the word in its statement.
type wordJudge struct{ calls int }

func (j *wordJudge) Judge(_ context.Context, req judge.Request) (judge.Verdict, error) {
	j.calls++
	if req.Criterion == "explode" {
		return judge.Verdict{}, errors.New("backend down")
	}
	value, _ := req.Context.(*expr.Object).Get("result")
	s := compactJSON(value)
	holds := strings.Contains(s, req.Criterion)
	return judge.Verdict{Holds: holds, Reason: "checked " + s, Model: "judge-1", Usage: judge.Usage{Tokens: 100, USD: 0.01}}, nil
}

const judgedSpec = `
version: 1
contracts:
  V: {v: string}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${a.output}", contract: V}
    steps:
      - id: a
        do: a
        out: V
        ensure:
          - judged: {statement: STATEMENT, stakes: default}
`

func TestJudged(t *testing.T) {
	spec := strings.Replace(judgedSpec, "STATEMENT", "moon", 1)
	t.Run("no judge fails closed", func(t *testing.T) {
		h := newHarness(t, Options{})
		r := h.plan(spec, map[string]any{})
		r = h.ok(r, "a", `{"v":"moon"}`)
		en := entry(t, r, "a")
		if !strings.Contains(en.PreviousFailure.Reason, "judged predicate requires a configured judge runner") {
			t.Fatalf("entry %s", dump(en))
		}
	})
	t.Run("judge", func(t *testing.T) {
		j := &wordJudge{}
		h := newHarness(t, Options{Judge: j})
		r := h.plan(spec, map[string]any{})
		r = h.ok(r, "a", `{"v":"sun"}`)
		en := entry(t, r, "a")
		if !strings.Contains(en.PreviousFailure.Reason, `ensure judged "moon" failed: checked`) {
			t.Fatalf("entry %s", dump(en))
		}
		r = h.ok(r, "a", `{"v":"moon"}`)
		wantStatus(t, r, StatusCompleted)
		if r.Ledger.Spent.Tokens != 200 || j.calls != 2 {
			t.Fatalf("ledger %s calls %d", dump(r.Ledger), j.calls)
		}
		types := h.eventTypes(r.RunID)
		if n := countPrefix(types, "judged(a)"); n != 2 {
			t.Fatalf("judged events %d: %v", n, types)
		}
	})
	t.Run("judge error fails closed", func(t *testing.T) {
		h := newHarness(t, Options{Judge: &wordJudge{}})
		r := h.plan(strings.Replace(judgedSpec, "STATEMENT", "explode", 1), map[string]any{})
		r = h.ok(r, "a", `{"v":"x"}`)
		if en := entry(t, r, "a"); !strings.Contains(en.PreviousFailure.Reason, "judged predicate failed: backend down") {
			t.Fatalf("entry %s", dump(en))
		}
	})
	t.Run("flow budget breach by the judge", func(t *testing.T) {
		h := newHarness(t, Options{Judge: &wordJudge{}})
		r := h.plan(strings.Replace(spec, "input: {}", "input: {}\n    budget: {tokens: 50}", 1), map[string]any{})
		r = h.ok(r, "a", `{"v":"moon"}`)
		wantFailure(t, r, StatusBudgetExhausted, "flow budget exhausted (judged predicate)")
	})
}

func countPrefix(xs []string, p string) int {
	n := 0
	for _, x := range xs {
		if strings.HasPrefix(x, p) {
			n++
		}
	}
	return n
}

func TestFilePredicates(t *testing.T) {
	h := newHarness(t, Options{})
	spec := `
version: 1
contracts:
  V: {v: string}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${a.output}", contract: V}
    steps:
      - id: a
        do: a
        out: V
        attempts: 3
        ensure:
          - file_exists: out/report.txt
          - file_contains: {path: out/report.txt, text: PASS}
`
	r := h.plan(spec, map[string]any{})
	r = h.ok(r, "a", `{"v":"1"}`)
	if en := entry(t, r, "a"); !strings.Contains(en.PreviousFailure.Reason, `file_exists(\"out/report.txt\")`) {
		t.Fatalf("entry %s", dump(en))
	}
	_ = os.MkdirAll(filepath.Join(h.ws, "out"), 0o755)
	_ = os.WriteFile(filepath.Join(h.ws, "out", "report.txt"), []byte("FAIL"), 0o644)
	r = h.ok(r, "a", `{"v":"2"}`)
	if en := entry(t, r, "a"); !strings.Contains(en.PreviousFailure.Reason, "file_contains") {
		t.Fatalf("entry %s", dump(en))
	}
	_ = os.WriteFile(filepath.Join(h.ws, "out", "report.txt"), []byte("PASS"), 0o644)
	r = h.ok(r, "a", `{"v":"3"}`)
	wantStatus(t, r, StatusCompleted)
	// The jail: a path out of the workspace fails the predicate.
	r = h.plan(strings.Replace(spec, "out/report.txt", "../escape.txt", 2), map[string]any{})
	r = h.ok(r, "a", `{"v":"1"}`)
	if en := entry(t, r, "a"); !strings.Contains(en.PreviousFailure.Reason, "validation_error") {
		t.Fatalf("entry %s", dump(en))
	}
}

func TestBudgets(t *testing.T) {
	base := `
version: 1
contracts:
  V: {v: string}
flows:
  entry: main
  sub:
    input: {}
    output: {from: "${c.output}", contract: V}
    steps:
      - {id: c, do: c, out: V}
  main:
    input: {}
    output: {from: "${b.output}", contract: V}
    FLOWBUDGET
    steps:
      - id: a
        do: a
        out: V
        TASKBUDGET
      - id: w
        after: [a]
        run: sub
        with: {}
        SUBBUDGET
        on_fail: b
      - id: b
        do: b
        out: V
`
	mk := func(flow, task, sub string) string {
		s := strings.Replace(base, "FLOWBUDGET", flow, 1)
		s = strings.Replace(s, "TASKBUDGET", task, 1)
		return strings.Replace(s, "SUBBUDGET", sub, 1)
	}
	t.Run("flow", func(t *testing.T) {
		h := newHarness(t, Options{})
		r := h.plan(mk("budget: {usd: 1}", "", ""), map[string]any{})
		r = h.report(r, "a", StepResult{Output: json.RawMessage(`{"v":"x"}`), Usage: js(map[string]any{"usd": 1.5})})
		wantFailure(t, r, StatusBudgetExhausted, "flow budget exhausted")
		if r.Ledger.Spent.USD != 1.5 || r.Ledger.Budget.USD != 1 {
			t.Fatalf("ledger %s", dump(r.Ledger))
		}
	})
	t.Run("task", func(t *testing.T) {
		h := newHarness(t, Options{})
		r := h.plan(mk("", "budget: {tokens: 100}", ""), map[string]any{})
		r = h.report(r, "a", StepResult{Output: json.RawMessage(`{"v":"x"}`), Usage: js(map[string]any{"tokens": 150})})
		// Once the task ledger is over a declared key, every further
		// reservation for the step fails too: the retry cannot be issued.
		wantFailure(t, r, StatusFailed, "task budget exhausted")
		if r.Failure.Attempt != 2 {
			t.Fatalf("failure %s", dump(r.Failure))
		}
	})
	t.Run("subflow", func(t *testing.T) {
		h := newHarness(t, Options{})
		r := h.plan(mk("", "", "budget: {tokens: 10}"), map[string]any{})
		r = h.ok(r, "a", `{"v":"x"}`)
		r = h.report(r, "w/c", StepResult{Output: json.RawMessage(`{"v":"x"}`), Usage: js(map[string]any{"tokens": 20})})
		en := entry(t, r, "b") // the run step failed; its on_fail routes to b
		if !strings.Contains(en.PreviousFailure.Reason, "subflow budget exhausted") {
			t.Fatalf("entry %s", dump(en))
		}
	})
	t.Run("dispatches", func(t *testing.T) {
		h := newHarness(t, Options{})
		r := h.plan(mk("budget: {dispatches: 2}", "", ""), map[string]any{})
		r = h.ok(r, "a", `{"v":"x"}`)                     // w/c reserves the 2nd dispatch
		r = h.report(r, "w/c", StepResult{Failure: "no"}) // a retry would be the 3rd
		wantFailure(t, r, StatusBudgetExhausted, "flow budget exhausted")
	})
}

func TestSubflowFailureAndDeadEnd(t *testing.T) {
	spec := `
version: 1
contracts:
  V: {v: string}
flows:
  entry: main
  sub:
    input: {}
    output: {from: "${c.output}", contract: V}
    steps:
      - {id: c, do: c, out: V, attempts: 1}
  main:
    input: {}
    output: {from: "${w.output}", contract: V}
    steps:
      - {id: w, run: sub, with: {}}
`
	h := newHarness(t, Options{})
	r := h.plan(spec, map[string]any{})
	r = h.report(r, "w/c", StepResult{Failure: "child broke"})
	wantFailure(t, r, StatusFailed, `subflow "sub": child broke`)
	types := h.eventTypes(r.RunID)
	if !slices.Equal(types, []string{"planned", "ready(w/c)", "result(w/c)", "result(w)", "failed"}) {
		t.Fatalf("events %v", types)
	}
}

func TestResumeInFreshEngine(t *testing.T) {
	h := newHarness(t, Options{})
	r := h.plan(twoSteps, map[string]any{"x": "X"})
	tok := entry(t, r, "a").DispatchToken
	e2 := h.reopen(Options{})
	r2, err := e2.Resume(h.ctx, r.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if r2.RevisionDigest != r.RevisionDigest || entry(t, r2, "a").DispatchToken != tok || r2.Ledger.Spent.Dispatches != 1 {
		t.Fatalf("resume %s: same token, no second debit", dump(r2))
	}
	r3, err := e2.StepDone(h.ctx, StepDoneRequest{RunID: r.RunID, StepID: "a", DispatchToken: tok, Result: StepResult{Output: json.RawMessage(`{"v":"A"}`)}})
	if err != nil {
		t.Fatal(err)
	}
	// The first engine continues from the second's state (its cache is
	// stale and must be detected).
	r4, err := h.e.StepDone(h.ctx, StepDoneRequest{RunID: r.RunID, StepID: "b", DispatchToken: entry(t, r3, "b").DispatchToken,
		Result: StepResult{Output: json.RawMessage(`{"v":"B"}`)}})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, r4, StatusCompleted)
	types := h.eventTypes(r.RunID)
	if !slices.Equal(types, []string{"planned", "ready(a)", "resumed", "result(a)", "ready(b)", "result(b)", "completed"}) {
		t.Fatalf("events %v", types)
	}
}

func TestCancel(t *testing.T) {
	h := newHarness(t, Options{})
	r := h.plan(twoSteps, map[string]any{"x": "X"})
	tok := entry(t, r, "a").DispatchToken
	c, err := h.e.Cancel(h.ctx, r.RunID, "user stop")
	if err != nil {
		t.Fatal(err)
	}
	if c.Status != StatusCancelled || !c.FlowSettled || !slices.Equal(c.Burned.Steps, []string{"a"}) {
		t.Fatalf("cancel %s", dump(c))
	}
	_, err = h.e.StepDone(h.ctx, StepDoneRequest{RunID: r.RunID, StepID: "a", DispatchToken: tok})
	wantCode(t, err, ErrRunCancelled)
	_, err = h.e.Resume(h.ctx, r.RunID)
	wantCode(t, err, ErrRunCancelled)
	_, err = h.e.Commit(h.ctx, r.RunID, "x")
	wantCode(t, err, ErrRunCancelled)
	_, err = h.e.UsageReport(h.ctx, r.RunID, Receipt{DispatchID: "d", Source: "s", Usage: js(map[string]any{"tokens": 1})})
	wantCode(t, err, ErrRunCancelled)
	again, err := h.e.Cancel(h.ctx, r.RunID, "")
	if err != nil || again.Reason != "already_cancelled" || !again.FlowSettled {
		t.Fatalf("second cancel %s %v", dump(again), err)
	}
	if a := h.audit(r.RunID); a.Status != StatusCancelled || a.Steps["a"].DispatchToken != "" {
		t.Fatalf("audit %s", dump(a.Steps))
	}
	// A finished run is left alone.
	r = h.drive(h.plan(twoSteps, map[string]any{"x": "X"}), script{"a": {`{"v":"1"}`}, "b": {`{"v":"2"}`}})
	c, err = h.e.Cancel(h.ctx, r.RunID, "")
	if err != nil || c.Reason != "already_completed" || c.FlowSettled {
		t.Fatalf("cancel completed %s %v", dump(c), err)
	}
}

func TestCheckpoints(t *testing.T) {
	h := newHarness(t, Options{})
	r := h.plan(twoSteps, map[string]any{"x": "X"})
	c, err := h.e.Commit(h.ctx, r.RunID, "  start ")
	if err != nil || c.Label != "start" || *c.CurrentStepID != "a" || c.StepNumber != 1 {
		t.Fatalf("commit %s %v", dump(c), err)
	}
	r = h.ok(r, "a", `{"v":"A"}`)
	c, err = h.e.Commit(h.ctx, r.RunID, "after-a")
	if err != nil || c.StepNumber != 2 || !slices.Equal(c.Checkpoints, []string{"start", "after-a"}) {
		t.Fatalf("commit %s %v", dump(c), err)
	}
	r = h.ok(r, "b", `{"v":"B"}`)
	wantStatus(t, r, StatusCompleted)
	spent := r.Ledger.Spent

	// Revert a completed run to "after-a": b is ready again with a new
	// token, spend does not go down.
	rv, err := h.e.Revert(h.ctx, r.RunID, "after-a")
	if err != nil {
		t.Fatal(err)
	}
	if rv.RevertedTo != "after-a" || rv.Status != StatusReady || rv.Ledger.Spent.Dispatches < spent.Dispatches {
		t.Fatalf("revert %s", dump(rv))
	}
	// Label reuse keeps its position.
	c, err = h.e.Commit(h.ctx, r.RunID, "start")
	if err != nil || !slices.Equal(c.Checkpoints, []string{"start", "after-a"}) {
		t.Fatalf("reuse %s %v", dump(c), err)
	}
	_, err = h.e.Revert(h.ctx, r.RunID, "nope")
	e := wantCode(t, err, ErrCheckpointNotFound)
	if !slices.Equal(e.Available, []string{"start", "after-a"}) {
		t.Fatalf("available %v", e.Available)
	}
	_, err = h.e.Commit(h.ctx, r.RunID, "  ")
	wantCode(t, err, ErrInvalidLabel)
	r = h.ok(rv, "b", `{"v":"B2"}`)
	wantStatus(t, r, StatusCompleted)
	if jsonOf(t, r.Output) != `{"v":"B2"}` {
		t.Fatalf("output %s", jsonOf(t, r.Output))
	}
	types := h.eventTypes(r.RunID)
	if !slices.Contains(types, "checkpoint_reverted") || countPrefix(types, "completed") != 2 {
		t.Fatalf("events %v", types)
	}
}

func TestUsageReport(t *testing.T) {
	h := newHarness(t, Options{})
	r := h.plan(strings.Replace(twoSteps, "input: {x: string}", "input: {x: string}\n    budget: {usd: 1}", 1), map[string]any{"x": "X"})
	ok, err := h.e.UsageReport(h.ctx, r.RunID, Receipt{DispatchID: "d1", StepID: "a", Source: "agent", Usage: js(map[string]any{"usd": 0.4}), USDSource: "reported"})
	if err != nil || ok.Status != "ok" || ok.Seq != 1 || ok.Ledger.Spent.USD != 0.4 {
		t.Fatalf("report %s %v", dump(ok), err)
	}
	dup, err := h.e.UsageReport(h.ctx, r.RunID, Receipt{DispatchID: "d1", Source: "agent", Usage: js(map[string]any{"usd": 0.4}), USDSource: "reported"})
	if err != nil || dup.Status != "duplicate" || dup.Seq != 1 || dup.Ledger.Spent.USD != 0.4 {
		t.Fatalf("duplicate %s %v", dump(dup), err)
	}
	for _, bad := range []Receipt{
		{DispatchID: "legacy:1", Source: "s", Usage: js(map[string]any{"tokens": 1})},
		{DispatchID: "d", Source: "", Usage: js(map[string]any{"tokens": 1})},
		{DispatchID: "d", Source: "s", Usage: js(map[string]any{"dispatches": 1})},
		{DispatchID: "d", Source: "s", Usage: js(map[string]any{"usd": 1})},
	} {
		_, err := h.e.UsageReport(h.ctx, r.RunID, bad)
		wantCode(t, err, ErrInvalidReceipt)
	}
	_, err = h.e.UsageReport(h.ctx, r.RunID, Receipt{DispatchID: "d9", StepID: "zz", Source: "s", Usage: js(map[string]any{"tokens": 1})})
	wantCode(t, err, ErrInvalidStep)
	ex, err := h.e.UsageReport(h.ctx, r.RunID, Receipt{DispatchID: "d2", Source: "agent", Usage: js(map[string]any{"usd": 0.7}), USDSource: "estimated"})
	if err != nil || ex.Budget != "flow_exhausted" {
		t.Fatalf("exhaust %s %v", dump(ex), err)
	}
	st, _ := h.e.Status(h.ctx, r.RunID)
	wantFailure(t, st, StatusBudgetExhausted, "usage report d2")
}

func TestPollCursor(t *testing.T) {
	h := newHarness(t, Options{})
	r := h.plan(twoSteps, map[string]any{"x": "X"})
	p, err := h.e.Poll(h.ctx, r.RunID, 0)
	if err != nil || len(p.Events) != 2 || p.Events[0].Type != "planned" || p.Status != StatusReady || len(p.Ready) != 1 {
		t.Fatalf("poll %s %v", dump(p), err)
	}
	cursor := p.NextCursor
	r = h.ok(r, "a", `{"v":"A"}`)
	p, err = h.e.Poll(h.ctx, r.RunID, cursor)
	if err != nil || len(p.Events) != 2 || p.Events[0].Type != "result" || p.Events[1].Type != "ready" || p.NextCursor <= cursor {
		t.Fatalf("poll %s %v", dump(p), err)
	}
	if p2, err := h.e.Poll(h.ctx, r.RunID, p.NextCursor); err != nil || len(p2.Events) != 0 {
		t.Fatalf("poll at head %s %v", dump(p2), err)
	}
	_, err = h.e.Poll(h.ctx, r.RunID, 99)
	wantCode(t, err, ErrInvalidCursor)
}
