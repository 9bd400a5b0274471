package web

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"
)

// Hostile strings for every place a recorded string reaches a page: a
// task (rendered from the spec and the input), a graph label (a when
// expression), an agent's output, a revise note, a decider's name, and a
// step id sent back in a refusal. Each must arrive in the browser as
// text: the test looks at the DOM the browser built, not at the HTML, and
// it does not count on the content security policy (which would stop an
// injected script from running even if escaping failed).
const (
	hostileTopic  = `</pre><script>window.__xss='input'</script>`
	hostileOutput = `<script>window.__xss='out'</script><svg onload="window.__xss='svg'"><circle r=9></circle></svg>" onmouseover="window.__xss='attr'" x="</textarea><img src=x onerror=window.__xss='ta'>`
	hostileNote   = `<img src=x onerror="window.__xss='note'">"'><script>window.__xss='note2'</script>`
	hostileName   = `Mallory"><b onmouseover=window.__xss=1>x</b>`
	hostileStep   = `"><script>window.__xss='step'</script><svg onload=alert(1)>`
)

const hostileSpec = `version: 1
contracts:
  Draft:
    text: string
flows:
  entry: main
  main:
    input: { topic: string }
    max_rounds: 3
    output: { from: "${work.output}", contract: Draft }
    steps:
      - id: work
        do: "Write <script>window.__xss='task'</script><img src=x onerror=\"window.__xss='task-img'\"> about ${input.topic}"
        when: "input.topic != '\"><svg/onload=x>'"
        out: Draft
      - id: review
        after: [work]
        gate:
          on_approve: null
          on_revise: work
          on_kill: null
`

// noInjection is true when nothing hostile became markup or ran: the only
// script is ours, no image, no handler attribute, no SVG but the graph,
// no bold.
const noInjection = `(() => {
  const scripts = Array.from(document.scripts);
  return window.__xss === undefined
    && scripts.length === 1 && scripts[0].getAttribute('src') === '/static/app.js'
    && document.querySelectorAll('img, b, circle, textarea:not([name=note])').length === 0
    && document.querySelectorAll('[onerror], [onload], [onmouseover]').length === 0
    && Array.from(document.querySelectorAll('svg')).every(s => s.classList.contains('graph'));
})()`

func testHostile(t *testing.T) {
	h := newHarness(t)
	ctx := tab(t)
	answer, _ := json.Marshal(map[string]string{"text": hostileOutput})
	if err := os.WriteFile(filepath.Join(filepath.Dir(h.agent), "answer.json"), answer, 0o644); err != nil {
		t.Fatal(err)
	}
	input, _ := json.Marshal(map[string]string{"topic": hostileTopic})
	runID := h.plan(hostileSpec, string(input))
	h.drive(runID)
	first := h.waitGate(runID, "")

	do(t, ctx, "open the run", chromedp.Navigate(h.srv.URL+"/runs/"+runID+"?token="+testToken))
	waitJS(t, ctx, "the gate", `document.querySelector('article.gate') !== null`)
	waitJS(t, ctx, "the live stream", `document.getElementById('conn').textContent === 'live'`)
	settled(t, ctx, h, runID)
	do(t, ctx, "revise with a hostile note and name",
		chromedp.SendKeys(chromedp.CSS(`article.gate input[name=by]`), hostileName),
		chromedp.SendKeys(chromedp.CSS(`article.gate textarea[name=note]`), hostileNote),
		chromedp.Click(chromedp.CSS(`article.gate button.revise`)))
	second := h.waitGate(runID, first.GateToken)
	waitJS(t, ctx, "the second round", `document.querySelector('article.gate .digest code')?.textContent === `+jsString(second.Digest))
	waitJS(t, ctx, "the revision on the step", `document.querySelector('#step-work .revision')?.textContent.includes(`+jsString(hostileNote)+`)`)
	// The second round's events may still be arriving: check the page
	// once it shows the run as it stands.
	settled(t, ctx, h, runID)

	checks := map[string]string{
		"the task":         `document.querySelector('#step-work').textContent.includes("Write <script>window.__xss='task'</script><img src=x onerror=")`,
		"the input":        `document.querySelector('#step-work').textContent.includes(` + jsString(hostileTopic) + `)`,
		"the output":       `document.querySelector('#step-work').textContent.includes("<script>window.__xss='out'</script><svg onload=")`,
		"the note":         `document.querySelector('#step-work .revision').textContent.includes(` + jsString(hostileNote) + `)`,
		"the name":         `document.querySelector('#step-work .revision').textContent.includes(` + jsString(hostileName) + `)`,
		"the graph label":  `document.querySelector('svg.graph a[data-node="main/work"]').textContent.includes("<svg/onload=x>")`,
		"the gate's input": `document.querySelector('article.gate .reviewed').textContent.includes("</textarea><img src=x onerror=")`,
		"nothing injected": noInjection,
	}
	for what, expr := range checks {
		if !evalJS[bool](t, ctx, expr) {
			t.Errorf("run page: %s is not shown as text (%s)", what, expr)
		}
	}

	// A step id sent back in a refusal, on the gates page.
	do(t, ctx, "open the gates", chromedp.Navigate(h.srv.URL+"/gates"))
	waitJS(t, ctx, "the gate", `document.querySelector('article.gate') !== null`)
	settled(t, ctx, h, "")
	do(t, ctx, "send a hostile step id",
		chromedp.SetValue(chromedp.CSS(`article.gate input[name=step]`), hostileStep),
		chromedp.Click(chromedp.CSS(`article.gate button.approve`)))
	waitJS(t, ctx, "the refusal", `document.querySelector('.flash.bad')?.textContent.includes(`+jsString(hostileStep)+`)`)
	if !evalJS[bool](t, ctx, noInjection) {
		t.Error("gates page: a hostile string became markup")
	}
	if !evalJS[bool](t, ctx, `document.querySelector('article.gate .reviewed').textContent.includes(`+jsString(`\" onmouseover=\"window.__xss='attr'\" x=\"</textarea><img src=x onerror=window.__xss='ta'>`)+`)`) {
		t.Error("gates page: the output under review is not shown as text")
	}
}
