package web

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/judge"
	"github.com/stratum-go/stratum/store"
)

// TestRunPageChain: the run page says the chain verifies, with its head;
// after one byte of an event is changed on disk it says the chain is
// broken and where, instead of showing the edited history as fact.
func TestRunPageChain(t *testing.T) {
	h := newHarness(t)
	runID := h.plan(gateSpec, `{"topic": "tides"}`)
	status, err := h.eng.Status(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	complete(t, h.eng, runID, status)
	rep, err := h.store.Verify(context.Background(), runID, store.VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	code, body := h.get("/runs/" + runID)
	if code != 200 || !strings.Contains(body, `chain verified · `) || !strings.Contains(body, `title="head `+rep.Head.Hash+`"`) {
		t.Fatalf("intact run: %d\n%s", code, body)
	}
	if strings.Contains(body, "chain broken") {
		t.Fatal("an intact chain is shown broken")
	}
	log := filepath.Join(h.dir, "flows", runID, "events.jsonl")
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(b, []byte("Write about tides"))
	if i < 0 {
		t.Fatalf("the task is not in the log:\n%s", b)
	}
	copy(b[i:], "Write about TIDES")
	if err := os.WriteFile(log, b, 0o600); err != nil {
		t.Fatal(err)
	}
	code, body = h.get("/runs/" + runID)
	if code != 200 || !strings.Contains(body, `chain broken`) || !strings.Contains(body, "is corrupt") {
		t.Fatalf("edited run: %d\n%s", code, body)
	}
	if strings.Contains(body, "chain verified") || strings.Contains(body, "TIDES") {
		t.Errorf("the edited history is shown as fact:\n%s", body)
	}
}

// TestRunPageContent: the run page shows each step with its rendered
// task, its attempts (a rejected one with its ensure failure) and its
// output, the spend against the budget, and the event log.
func TestRunPageContent(t *testing.T) {
	// The judge is a real program: it holds every statement.
	judgeCmd := filepath.Join(t.TempDir(), "judge.sh")
	if err := os.WriteFile(judgeCmd, []byte("#!/bin/sh\ncat >/dev/null\necho '{\"holds\": true, \"reason\": \"it <does>\", \"model\": \"test-judge\"}'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	j, err := judge.FromEnv(func(k string) string {
		if k == judge.EnvCommand {
			return judgeCmd
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarnessWith(t, func(o *engine.Options) { o.Judge = j })
	const spec = `version: 1
contracts:
  Draft:
    text: string
    score: number
flows:
  entry: main
  main:
    input: { topic: string }
    budget: { tokens: 100 }
    output: { from: "${work.output}", contract: Draft }
    steps:
      - id: work
        do: "Write about ${input.topic}"
        out: Draft
        ensure:
          - expr: "result.score >= 0.8"
          - judged: { statement: "the text is good", stakes: cheap }
`
	runID := h.plan(spec, `{"topic": "tides"}`)
	st, err := h.eng.Status(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	r := st.Ready[0]
	st, err = h.eng.StepDone(context.Background(), stepDone(runID, r.ID, r.DispatchToken, `{"text": "meh", "score": 0.2}`, `{"tokens": 30}`))
	if err != nil {
		t.Fatal(err)
	}
	r = st.Ready[0]
	if _, err := h.eng.StepDone(context.Background(), stepDone(runID, r.ID, r.DispatchToken, `{"text": "good", "score": 0.9}`, `{"tokens": 40}`)); err != nil {
		t.Fatal(err)
	}
	code, body := h.get("/runs/" + runID)
	if code != 200 {
		t.Fatalf("status %d", code)
	}
	for _, want := range []string{
		`<span class="badge st-completed">completed</span>`,
		`<pre>Write about tides</pre>`,
		`attempt 1: rejected by its ensure`,
		`ensure &#34;result.score &gt;= 0.8&#34; failed`,
		`attempt 2: accepted`,
		`&#34;text&#34;: &#34;good&#34;`,
		`<td>tokens</td><td>70</td><td>100</td>`,
		`<meter min="0" max="100" value="70" high="80">`,
		`data-node="main/work"`,
		`<td>planned flow main<details>`,
		`work: attempt 2 accepted`,
		`judged “the text is good”: holds — it &lt;does&gt; (test-judge)`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the run page lacks %q", want)
		}
	}
	if t.Failed() {
		t.Log(body)
	}
	if code, _ := h.get("/runs/00000000-0000-4000-8000-000000000000"); code != 404 {
		t.Errorf("an unknown run: status %d, want 404", code)
	}
	if code, _ := h.get("/runs/" + runID + "/patch?step=work"); code != 404 {
		t.Errorf("a step without changes: patch status %d, want 404", code)
	}
}
