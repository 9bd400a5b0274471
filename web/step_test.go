package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/stratum-go/stratum/engine"
)

// longHostileRun is a completed run of n steps (more than openSteps, so
// that its page shows the succeeded steps closed) in which step s5's
// first result is rejected by its contract and carries hostileOutput, and
// its accepted output is hostileOutput too. The other steps answer as
// complete does.
func longHostileRun(t testing.TB, h *harness, n int) string {
	t.Helper()
	ctx := context.Background()
	resp, err := h.eng.Plan(ctx, planRequest(chainSpec(n)))
	if err != nil {
		t.Fatal(err)
	}
	runID := resp.RunID
	rejected := false
	for len(resp.Ready) > 0 {
		r := resp.Ready[0]
		out := fmt.Sprintf(`{"text": "done %s"}`, r.ID)
		if r.ID == "s5" {
			v := map[string]string{"text": hostileOutput}
			if !rejected {
				v = map[string]string{"draft": hostileOutput}
			}
			b, _ := json.Marshal(v)
			out, rejected = string(b), true
		}
		resp, err = h.eng.StepDone(ctx, stepDone(runID, r.ID, r.DispatchToken, out, `{"tokens": 10}`))
		if err != nil {
			t.Fatalf("step_done %s: %v", r.ID, err)
		}
	}
	if resp.Status != engine.StatusCompleted {
		t.Fatalf("the run ended %s", resp.Status)
	}
	return runID
}

// TestStepPage: on a long run's page a closed step holds only its summary
// and a link to its step page, which has its task, attempts and output,
// every recorded string escaped as on the run page; an unknown step or
// run is a 404. (Who may open it: TestAuth.)
func TestStepPage(t *testing.T) {
	h := newHarness(t)
	runID := longHostileRun(t, h, openSteps+10)
	src := "/runs/" + runID + "/steps/s5"

	code, body := h.get("/runs/" + runID)
	if code != 200 {
		t.Fatalf("run page: status %d", code)
	}
	steps := between(t, body, `data-region="steps"`, `</section>`)
	card := between(t, steps, `id="step-s5"`, `</details>`)
	if !strings.Contains(card, `<a class="more" href="`+src+`">`) {
		t.Errorf("the closed step has no link to its details:\n%s", card)
	}
	if strings.Contains(steps, "window.__xss") || strings.Contains(steps, "<pre>") {
		t.Errorf("the run page holds a closed step's details:\n%s", card)
	}

	code, body = h.get(src)
	if code != 200 {
		t.Fatalf("step page: status %d\n%s", code, body)
	}
	for _, want := range []string{
		`<details class="step st-succeeded" id="step-s5" data-key="s5"`,
		`<pre>step 5 of the long run</pre>`,
		`attempt 1: rejected by its contract`,
		`attempt 2: accepted`,
		// The rejected result and the output, escaped for text.
		`&#34;draft&#34;: &#34;&lt;script&gt;window.__xss=&#39;out&#39;&lt;/script&gt;&lt;svg onload=\&#34;window.__xss=&#39;svg&#39;\&#34;&gt;`,
		`&#34;text&#34;: &#34;&lt;script&gt;window.__xss=&#39;out&#39;&lt;/script&gt;`,
		`href="/runs/` + runID + `#step-s5"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the step page lacks %s", want)
		}
	}
	if strings.Contains(body, "<script>window") || strings.Contains(body, "<svg onload") || strings.Contains(body, "<img") {
		t.Error("a hostile string reached the step page as markup")
	}
	if strings.Count(body, `class="step `) != 1 {
		t.Error("the step page shows more than its step")
	}
	if t.Failed() {
		t.Log(body)
	}

	for _, path := range []string{"/runs/" + runID + "/steps/nosuch", "/runs/" + runID + "/steps/s5/child", "/runs/00000000-0000-4000-8000-000000000000/steps/s5"} {
		if code, _ := h.get(path); code != http.StatusNotFound {
			t.Errorf("%s: status %d, want 404", path, code)
		}
	}
}

// between is the part of s from the first from to the next to.
func between(t testing.TB, s, from, to string) string {
	t.Helper()
	i := strings.Index(s, from)
	if i < 0 {
		t.Fatalf("no %s in\n%s", from, s)
	}
	j := strings.Index(s[i:], to)
	if j < 0 {
		t.Fatalf("no %s after %s", to, from)
	}
	return s[i : i+j+len(to)]
}

// testClosedStep: a closed step of a long run's page opens with a click
// and shows its attempts and output, fetched then, with a hostile string
// in them as text; a step reached from the graph opens the same way; and
// without JavaScript the closed step's link opens its step page.
func testClosedStep(t *testing.T) {
	h := newHarness(t)
	ctx := tab(t)
	runID := longHostileRun(t, h, openSteps+10)
	do(t, ctx, "open the run", chromedp.Navigate(h.srv.URL+"/runs/"+runID+"?token="+testToken))
	waitJS(t, ctx, "the steps", `document.querySelectorAll('section.steps > details.step').length === `+fmt.Sprint(openSteps+10))
	if !evalJS[bool](t, ctx, `(() => { const s = document.getElementById('step-s5'); return !s.open && s.querySelector(':scope > a.more') !== null && s.querySelector('pre, details') === null; })()`) {
		t.Fatal("the closed step s5 holds its details before it is opened")
	}
	do(t, ctx, "open s5", chromedp.Click(chromedp.CSS(`#step-s5 > summary`)))
	waitJS(t, ctx, "s5's details", `document.querySelectorAll('#step-s5 > details.attempt').length === 2`)
	for what, expr := range map[string]string{
		"the task":              `document.querySelector('#step-s5').textContent.includes('step 5 of the long run')`,
		"the rejected attempt":  `document.querySelector('#step-s5 > details.attempt.rejected summary').textContent.includes('attempt 1: rejected by its contract')`,
		"the rejected result":   `document.querySelector('#step-s5 > details.attempt.rejected').textContent.includes(` + jsString(`"draft": "<script>window.__xss='out'</script><svg onload=`) + `)`,
		"the output":            `Array.from(document.querySelectorAll('#step-s5 > pre')).some(p => p.textContent.includes(` + jsString(`"text": "<script>window.__xss='out'</script><svg onload=`) + `))`,
		"the link gone":         `document.querySelector('#step-s5 .more') === null`,
		"nothing injected":      noInjection,
		"one card of s5":        `document.querySelectorAll('[id="step-s5"]').length === 1`,
		"the summary unchanged": `document.querySelectorAll('#step-s5 > summary').length === 1`,
	} {
		if !evalJS[bool](t, ctx, expr) {
			t.Errorf("opened step: %s is not shown (%s)", what, expr)
		}
	}

	do(t, ctx, "go to s7 from the graph", chromedp.Click(chromedp.CSS(`svg.graph a[data-node="main/s7"]`)))
	waitJS(t, ctx, "s7 open with its details", `document.getElementById('step-s7').open && Array.from(document.querySelectorAll('#step-s7 > pre')).some(p => p.textContent.includes('"done s7"'))`)

	// Without JavaScript: the closed step's link is its step page.
	noJS := tab(t)
	if _, err := chromedp.Call(noJS, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true}); err != nil {
		t.Fatalf("turn JavaScript off: %v", err)
	}
	do(t, noJS, "open the run without JavaScript", chromedp.Navigate(h.srv.URL+"/runs/"+runID+"?token="+testToken))
	do(t, noJS, "open s5", chromedp.Click(chromedp.CSS(`#step-s5 > summary`)))
	if _, err := chromedp.Run(noJS, chromedp.WaitEvent(cdppage.LoadEventFired, nil, chromedp.Click(chromedp.CSS(`#step-s5 > a.more`)))); err != nil {
		t.Fatalf("follow the link: %v", err)
	}
	if got := evalJS[string](t, noJS, `location.pathname`); got != "/runs/"+runID+"/steps/s5" {
		t.Fatalf("the link led to %s", got)
	}
	if !evalJS[bool](t, noJS, `document.getElementById('step-s5').open && document.querySelector('#step-s5 > details.attempt.rejected').textContent.includes(`+jsString(`"draft": "<script>`)+`) && `+noInjection) {
		t.Error("the step page does not show s5's attempts as text")
	}
}
