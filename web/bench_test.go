package web

import (
	"context"
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"
)

// The run page of a thousand-step run (docs/serve.md, "Performance"):
//
//	go test ./web -run '^$' -bench RunPage1000 -count 5
//
// BenchmarkRunPage1000HTML is the server's part (audit, verify, graph
// layout, templates) over HTTP; BenchmarkRunPage1000Browser is the whole
// page in headless Chromium, from navigation to the load event, and
// reports the browser's own measure of it (Navigation Timing: the
// response, parsing, the script and style, layout) as ms-load/op, with
// the parts until the response's last byte (ms-response/op) and until the
// document was parsed (ms-parsed/op).

// longRun is a completed run of n steps (a quarter of them start a new
// chain) with an event log of about 4n events.
func longRun(b *testing.B, n int) (*harness, string) {
	b.Helper()
	h := newHarness(b)
	resp, err := h.eng.Plan(context.Background(), planRequest(chainSpec(n)))
	if err != nil {
		b.Fatal(err)
	}
	complete(b, h.eng, resp.RunID, resp)
	return h, resp.RunID
}

func BenchmarkRunPage1000HTML(b *testing.B) {
	h, runID := longRun(b, 1000)
	req, _ := http.NewRequest(http.MethodGet, h.srv.URL+"/runs/"+runID, nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	var size int64
	for b.Loop() {
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		n, _ := ioCopyDiscard(res)
		if res.StatusCode != 200 {
			b.Fatalf("status %d", res.StatusCode)
		}
		size = n
	}
	b.ReportMetric(float64(size)/1024, "KiB/page")
}

func BenchmarkRunPage1000Browser(b *testing.B) {
	needBrowser(b)
	h, runID := longRun(b, 1000)
	ctx, cancel := chromedp.NewContext(browser.ctx)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(h.srv.URL+"/?token="+testToken)); err != nil {
		b.Fatal(err)
	}
	url := h.srv.URL + "/runs/" + runID
	var total, response, parsed float64
	for b.Loop() {
		if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
			b.Fatal(err)
		}
		// Two animation frames after the load event: laid out and painted.
		ms, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](`new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => {
			const n = performance.getEntriesByType('navigation')[0];
			r([performance.now() - n.startTime, n.responseEnd - n.startTime, n.domInteractive - n.startTime]);
		})))`, chromedp.EvalAwaitPromise))
		if err != nil {
			b.Fatal(err)
		}
		total, response, parsed = total+ms[0], response+ms[1], parsed+ms[2]
	}
	steps, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('section.steps > details.step').length`))
	if steps != 1000 {
		b.Fatalf("the page shows %d steps, want 1000", steps)
	}
	b.ReportMetric(total/float64(b.N), "ms-load/op")
	b.ReportMetric(response/float64(b.N), "ms-response/op")
	b.ReportMetric(parsed/float64(b.N), "ms-parsed/op")
}
