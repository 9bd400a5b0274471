package web

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/stratum-go/stratum/engine"
)

// The browser tests drive Debian's Chromium headless through the DevTools
// protocol (docs/decisions/0110-chromedp.md). Without a Chromium they
// skip with one line saying how to run them, unless
// STRATUM_REQUIRE_BROWSER=1 (as .ci/run sets it), which makes the skip a
// failure.

// chromiumPath finds the browser: $STRATUM_CHROMIUM, else chromium,
// chromium-browser or google-chrome on PATH.
func chromiumPath() string {
	if p := os.Getenv("STRATUM_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// browser is one headless Chromium shared by the tests of the package
// (each test gets a tab of its own); it is closed by TestMain.
var browser struct {
	once   sync.Once
	ctx    context.Context
	cancel func()
	err    error
	dir    string
}

func TestMain(m *testing.M) {
	code := m.Run()
	if browser.cancel != nil {
		browser.cancel()
	}
	if browser.dir != "" {
		os.RemoveAll(browser.dir)
	}
	os.Exit(code)
}

func startBrowser(path string) {
	browser.dir, browser.err = os.MkdirTemp("", "stratum-chromium-")
	if browser.err != nil {
		return
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.UserDataDir(browser.dir), chromedp.WindowSize(1280, 900))
	ctx, cancel := chromedp.NewContext(alloc)
	// The first action starts the browser.
	if browser.err = chromedp.Do(ctx, chromedp.Navigate("about:blank")); browser.err != nil {
		cancel()
		cancelAlloc()
		return
	}
	browser.ctx = ctx
	browser.cancel = func() { cancel(); cancelAlloc() }
}

// needBrowser skips (or, in CI, fails) a test without a Chromium.
func needBrowser(t testing.TB) {
	t.Helper()
	path := chromiumPath()
	if path == "" {
		msg := "no Chromium: apt-get install chromium (or set STRATUM_CHROMIUM) to run the browser tests"
		if os.Getenv("STRATUM_REQUIRE_BROWSER") == "1" {
			t.Fatal(msg + " (STRATUM_REQUIRE_BROWSER=1)")
		}
		t.Skip(msg)
	}
	browser.once.Do(func() { startBrowser(path) })
	if browser.err != nil {
		t.Fatalf("start %s: %v", path, browser.err)
	}
}

// tab is a new browser tab for one test; on failure a screenshot of it
// is saved as a test artefact (go test -artifacts keeps them; otherwise
// they are written under $TMPDIR/stratum-web-failures) and named in the
// log.
func tab(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser.ctx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 60*time.Second)
	t.Cleanup(func() {
		if t.Failed() {
			saveFailure(t, ctx)
		}
		cancelTimeout()
		cancel()
	})
	return ctx
}

func saveFailure(t *testing.T, ctx context.Context) {
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Logf("no screenshot: %v", err)
		return
	}
	dir := filepath.Join(os.TempDir(), "stratum-web-failures")
	if f := flag.Lookup("test.artifacts"); f != nil && f.Value.String() == "true" {
		dir = t.ArtifactDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Logf("no screenshot: %v", err)
		return
	}
	name := filepath.Join(dir, strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())+".png")
	if err := os.WriteFile(name, shot, 0o644); err != nil {
		t.Logf("no screenshot: %v", err)
		return
	}
	t.Logf("screenshot of the page: %s", name)
}

// docShot saves a screenshot for docs/serve.md when the tests run with
// -update.
func docShot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if !*update {
		return
	}
	shot, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join("..", "docs", "images", name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatal(err)
	}
}

// do runs actions and fails the test on an error, saying which step.
func do(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// waitJS waits until a JavaScript expression is true in the page.
func waitJS(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Fatalf("waiting for %s (%s): %v", what, expr, err)
	}
}

func evalJS[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// jsString quotes s for a JavaScript expression.
func jsString(s string) string { return fmt.Sprintf("%q", s) }

// TestBrowser holds the tests that need Chromium, so that without one a
// single line says so.
func TestBrowser(t *testing.T) {
	needBrowser(t)
	t.Run("GateRoundTrip", testGateRoundTrip)
	t.Run("StalePage", testStalePage)
	t.Run("Hostile", testHostile)
	t.Run("ClosedStep", testClosedStep)
	t.Run("LiveLatency", testLiveLatency)
}

// testGateRoundTrip: the runs list; a run waiting at a gate while the
// command agent drives it (its graph, the output under review); a revise
// with a note, and the run back at the gate live, without a reload; an
// approval; the run completed and its chain verified.
func testGateRoundTrip(t *testing.T) {
	h := newHarness(t)
	ctx := tab(t)
	runID := h.plan(gateSpec, `{"topic": "tides"}`)
	done := h.drive(runID)
	first := h.waitGate(runID, "")
	done2 := h.plan(`version: 1
contracts:
  R: { text: string }
flows:
  entry: other
  other:
    input: {}
    output: { from: "${a.output}", contract: R }
    steps:
      - id: a
        do: "something else"
        out: R
`, `{}`)
	complete(t, h.eng, done2, mustStatus(t, h, done2))

	do(t, ctx, "open the printed address", chromedp.Navigate(h.srv.URL+"/?token="+testToken))
	waitJS(t, ctx, "the runs list", `document.querySelectorAll('tbody[data-region=runs] tr').length === 2`)
	// The run waiting on a person comes first.
	if key := evalJS[string](t, ctx, `document.querySelector('tbody[data-region=runs] tr').dataset.key`); key != runID {
		t.Fatalf("first row is %s, want the waiting run %s", key, runID)
	}
	if !evalJS[bool](t, ctx, `document.querySelector('tbody[data-region=runs] tr').classList.contains('person')`) {
		t.Error("the waiting run is not marked as waiting on a person")
	}
	if loc := evalJS[string](t, ctx, `location.search`); loc != "" {
		t.Errorf("the token stayed in the address: %q", loc)
	}
	docShot(t, ctx, "serve-runs.png")

	if _, err := chromedp.Run(ctx, chromedp.WaitEvent(cdppage.LoadEventFired, nil, chromedp.Click(chromedp.CSS(`a[href="/runs/`+runID+`"]`)))); err != nil {
		t.Fatalf("open the run from the list: %v", err)
	}
	waitJS(t, ctx, "the graph with the gate waiting", `document.querySelector('svg.graph a[data-node="main/review"]')?.classList.contains('st-waiting_gate')`)
	if !evalJS[bool](t, ctx, `document.querySelector('svg.graph a[data-node="main/work"]').classList.contains('st-succeeded')`) {
		t.Error("the graph does not show work as succeeded")
	}
	waitJS(t, ctx, "the output under review", `document.querySelector('article.gate .reviewed pre:nth-of-type(2)')?.textContent.includes('"draft 1"')`)
	if got := evalJS[string](t, ctx, `document.querySelector('article.gate .digest code').textContent`); got != first.Digest {
		t.Errorf("the page shows digest %q, the engine %q", got, first.Digest)
	}
	waitJS(t, ctx, "the live stream", `document.getElementById('conn').textContent === 'live'`)
	docShot(t, ctx, "serve-run-gate.png")

	settled(t, ctx, h, runID)
	// A marker that a reload would lose.
	do(t, ctx, "mark the page", chromedp.Evaluate[chromedp.Void](`window.__sameDocument = true`))
	do(t, ctx, "revise with a note",
		chromedp.SendKeys(chromedp.CSS(`article.gate input[name=by]`), "Ada"),
		chromedp.SendKeys(chromedp.CSS(`article.gate textarea[name=note]`), "shorter, please"),
		chromedp.Click(chromedp.CSS(`article.gate button.revise`)))
	waitJS(t, ctx, "the revise recorded", `document.querySelector('.flash.ok')?.textContent.includes('Decided revise on review')`)
	second := h.waitGate(runID, first.GateToken)
	waitJS(t, ctx, "the second round, live", `document.querySelector('article.gate .reviewed')?.textContent.includes('"draft 2"')`)
	if got := evalJS[string](t, ctx, `document.querySelector('article.gate .digest code').textContent`); got != second.Digest {
		t.Errorf("after the revise the page shows digest %q, the engine %q", got, second.Digest)
	}
	if !evalJS[bool](t, ctx, `window.__sameDocument === true`) {
		t.Fatal("the page was reloaded")
	}
	// The note reached the agent, and the revision shows on the step.
	req, err := os.ReadFile(filepath.Join(filepath.Dir(h.agent), "request-2.json"))
	if err != nil || !strings.Contains(string(req), "shorter, please") {
		t.Errorf("the agent's second request does not carry the note: %s (%v)", req, err)
	}
	waitJS(t, ctx, "the revision on the step", `document.querySelector('#step-work .revision')?.textContent.includes('by Ada: shorter, please')`)

	// The name is remembered; approve.
	if name := evalJS[string](t, ctx, `document.querySelector('article.gate input[name=by]').value`); name != "Ada" {
		t.Errorf("the decider's name was not remembered: %q", name)
	}
	settled(t, ctx, h, runID)
	do(t, ctx, "approve", chromedp.Click(chromedp.CSS(`article.gate button.approve`)))
	waitJS(t, ctx, "the run completed", `document.querySelector('section.head .badge')?.textContent === 'completed'`)
	waitJS(t, ctx, "the chain verified", `document.getElementById('chain')?.textContent.startsWith('chain verified')`)
	waitJS(t, ctx, "every step succeeded in the graph", `['work','review','publish'].every(s => document.querySelector('svg.graph a[data-node="main/'+s+'"]').classList.contains('st-succeeded'))`)
	if !evalJS[bool](t, ctx, `window.__sameDocument === true`) {
		t.Fatal("the page was reloaded")
	}
	select {
	case o := <-done:
		if o == nil || !o.Finished() || o.Response.Status != "completed" {
			t.Fatalf("the drive ended with %+v", o)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the drive did not end")
	}
	docShot(t, ctx, "serve-run-completed.png")
}

func mustStatus(t *testing.T, h *harness, runID string) *engine.Response {
	t.Helper()
	r, err := h.eng.Status(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// settled waits until the page has applied the last change of runID (of
// the run listing for a list page, runID ""), so that no update lands
// while the test clicks.
func settled(t *testing.T, ctx context.Context, h *harness, runID string) {
	t.Helper()
	var want string
	if runID == "" {
		runs, err := h.eng.ListRuns(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		want = listFingerprint(runs)
	} else {
		rep, err := h.eng.Poll(context.Background(), runID, 0)
		if err != nil {
			t.Fatal(err)
		}
		want = fmt.Sprint(rep.NextCursor)
	}
	waitJS(t, ctx, "the page up to date", `document.body.dataset.cursor === `+jsString(want))
}

// engineGate is a revise of a gate round by someone other than the page's
// reader.
func engineGate(runID, token string) engine.GateRequest {
	return engine.GateRequest{RunID: runID, StepID: "review", Decision: engine.DecisionRevise, GateToken: token,
		Rationale: "try again", ResolvedBy: "someone else"}
}

// testStalePage: a page that began a decision on one round, while the
// gate moved on to another, is marked stale and its approval refused
// with a clear message and the content under review now; the engine
// records nothing.
func testStalePage(t *testing.T) {
	h := newHarness(t)
	ctx := tab(t)
	runID := h.plan(gateSpec, `{"topic": "tides"}`)
	h.drive(runID)
	first := h.waitGate(runID, "")

	do(t, ctx, "open the gates", chromedp.Navigate(h.srv.URL+"/gates?token="+testToken))
	waitJS(t, ctx, "the gate", `document.querySelector('article.gate .reviewed')?.textContent.includes('"draft 1"')`)
	waitJS(t, ctx, "the live stream", `document.getElementById('conn').textContent === 'live'`)
	do(t, ctx, "begin a decision",
		chromedp.SendKeys(chromedp.CSS(`article.gate input[name=by]`), "Grace"),
		chromedp.SendKeys(chromedp.CSS(`article.gate textarea[name=note]`), "draft 1 is fine"))

	// Someone else sends the work back; the agent answers again.
	if _, err := h.eng.DecideGate(context.Background(), engineGate(runID, first.GateToken)); err != nil {
		t.Fatal(err)
	}
	second := h.waitGate(runID, first.GateToken)
	waitJS(t, ctx, "the page marked stale", `document.querySelector('article.gate.stale .stale-note')?.hidden === false`)
	settled(t, ctx, h, "")
	// What the person was reading stays; the decision would be on it.
	if !evalJS[bool](t, ctx, `document.querySelector('article.gate .reviewed').textContent.includes('"draft 1"')`) {
		t.Fatal("the content the person was reading was replaced under them")
	}
	docShot(t, ctx, "serve-gate-stale.png")
	do(t, ctx, "approve the stale page", chromedp.Click(chromedp.CSS(`article.gate button.approve`)))
	waitJS(t, ctx, "the refusal", `document.querySelector('.flash.bad')?.textContent.includes('Not decided: what this page showed is no longer what is under review')`)
	waitJS(t, ctx, "the new content", `document.querySelector('article.gate .reviewed')?.textContent.includes('"draft 2"')`)
	if got := evalJS[string](t, ctx, `document.querySelector('article.gate .digest code').textContent`); got != second.Digest {
		t.Errorf("the refusal shows digest %q, the engine %q", got, second.Digest)
	}
	if evalJS[bool](t, ctx, `document.querySelector('article.gate').classList.contains('stale')`) {
		t.Error("the new content is still marked stale")
	}
	// Nothing was decided: the second round still waits.
	if now := h.waitGate(runID, first.GateToken); now.GateToken != second.GateToken || now.Round != 1 {
		t.Fatalf("the stale approval changed the gate: %+v", now)
	}
}

// testLiveLatency measures how long a new event takes to reach an open
// run page (logged; not an assertion on time).
func testLiveLatency(t *testing.T) {
	h := newHarness(t)
	ctx := tab(t)
	runID := h.plan(gateSpec, `{"topic": "tides"}`)
	h.drive(runID)
	h.waitGate(runID, "")
	do(t, ctx, "open the run", chromedp.Navigate(h.srv.URL+"/runs/"+runID+"?token="+testToken))
	waitJS(t, ctx, "the live stream", `document.getElementById('conn').textContent === 'live'`)
	var lat []time.Duration
	for i := range 10 {
		do(t, ctx, "watch for the next event", chromedp.Evaluate[chromedp.Void](`window.__seen = 0;
			new MutationObserver((_, o) => { if (document.querySelector('tbody[data-region=events] tr:last-child')?.textContent.includes('mark`+fmt.Sprint(i)+`')) { window.__seen = Date.now(); o.disconnect(); } })
			.observe(document.body, {subtree: true, childList: true})`))
		// The drive holds the run's lease: the events are recorded as its
		// driver would record them.
		if _, err := h.eng.Commit(engine.AsDriver(context.Background()), runID, fmt.Sprintf("mark%d", i)); err != nil {
			t.Fatal(err)
		}
		at := time.Now()
		waitJS(t, ctx, "the event on the page", `window.__seen > 0`)
		seen := evalJS[float64](t, ctx, `window.__seen`)
		lat = append(lat, time.UnixMilli(int64(seen)).Sub(at))
	}
	slices.Sort(lat)
	t.Logf("a new event reached the open run page in: median %v, max %v (poll interval %v, 10 events)", lat[len(lat)/2], lat[len(lat)-1], h.web.opts.PollInterval)
}
