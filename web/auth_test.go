package web

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
)

// TestAuth: every page, the live stream and the MCP endpoint refuse a
// request without the token or with a wrong one; the printed address
// turns the token into a SameSite=Strict, HttpOnly cookie and drops it
// from the address; the cookie then opens pages but never the MCP
// endpoint.
func TestAuth(t *testing.T) {
	h := newHarness(t)
	mcpReached := 0
	site, err := New(Options{Engine: h.eng, Chain: h.store, Token: testToken, Hosts: []string{"stratum.internal"},
		MCP: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { mcpReached++; io.WriteString(w, "mcp") })})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(site)
	defer srv.Close()
	runID := h.plan(gateSpec, `{"topic": "t"}`)

	// The login: ?token= sets the cookie and redirects without it.
	c := client()
	res, err := c.Get(srv.URL + "/runs/" + runID + "/events?after=0&token=" + testToken)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/runs/"+runID+"/events?after=0" {
		t.Fatalf("login: %d, Location %q", res.StatusCode, res.Header.Get("Location"))
	}
	ck := res.Cookies()
	if len(ck) != 1 || !ck[0].HttpOnly || ck[0].SameSite != http.SameSiteStrictMode || ck[0].Value == testToken || ck[0].Path != "/" {
		t.Fatalf("session cookie: %+v", ck)
	}
	cookie := ck[0]

	type req struct {
		name   string
		method string
		path   string
		bearer string
		cookie *http.Cookie
		host   string
		origin string
		fetch  string // Sec-Fetch-Site
		want   int
	}
	wrongCookie := &http.Cookie{Name: cookie.Name, Value: strings.Repeat("0", len(cookie.Value))}
	tokenCookie := &http.Cookie{Name: cookie.Name, Value: testToken}
	tests := []req{
		{name: "runs, no credential", path: "/", want: 401},
		{name: "runs, wrong bearer", path: "/", bearer: "wrong-token-0123456789", want: 401},
		{name: "runs, bearer", path: "/", bearer: testToken, want: 200},
		{name: "runs, cookie", path: "/", cookie: cookie, want: 200},
		{name: "runs, wrong cookie", path: "/", cookie: wrongCookie, want: 401},
		{name: "runs, the token as the cookie", path: "/", cookie: tokenCookie, want: 401},
		{name: "runs, wrong ?token", path: "/?token=wrong", want: 401},
		{name: "run, no credential", path: "/runs/" + runID, want: 401},
		{name: "gates, no credential", path: "/gates", want: 401},
		{name: "patch, no credential", path: "/runs/" + runID + "/patch?step=work", want: 401},
		{name: "step page, no credential", path: "/runs/" + runID + "/steps/work", want: 401},
		{name: "step page, wrong bearer", path: "/runs/" + runID + "/steps/work", bearer: "wrong-token-0123456789", want: 401},
		{name: "step page, wrong cookie", path: "/runs/" + runID + "/steps/work", cookie: wrongCookie, want: 401},
		{name: "step page, cookie", path: "/runs/" + runID + "/steps/work", cookie: cookie, want: 200},
		{name: "step page, forged host", path: "/runs/" + runID + "/steps/work", cookie: cookie, host: "evil.example", want: 421},
		{name: "events page, no credential", path: "/runs/" + runID + "/events?after=0", want: 401},
		{name: "events page, wrong bearer", path: "/runs/" + runID + "/events?after=0", bearer: "wrong-token-0123456789", want: 401},
		{name: "events page, bearer", path: "/runs/" + runID + "/events?after=0", bearer: testToken, want: 200},
		{name: "static, no credential", path: "/static/app.js", want: 401},
		{name: "events, no credential", path: "/live?list=1", want: 401},
		{name: "events, wrong bearer", path: "/live?run=" + runID, bearer: "wrong-token-0123456789", want: 401},
		{name: "mcp, no credential", method: "POST", path: "/mcp", want: 401},
		{name: "mcp, wrong bearer", method: "POST", path: "/mcp", bearer: "wrong-token-0123456789", want: 401},
		{name: "mcp, cookie only", method: "POST", path: "/mcp", cookie: cookie, want: 401},
		{name: "mcp, bearer", method: "POST", path: "/mcp", bearer: testToken, want: 200},
		{name: "decide, cross-origin", method: "POST", path: "/decide", cookie: cookie, origin: "http://evil.example", want: 403},
		{name: "decide, cross-site fetch", method: "POST", path: "/decide", cookie: cookie, fetch: "cross-site", want: 403},
		{name: "decide, same origin", method: "POST", path: "/decide", cookie: cookie, origin: srv.URL, want: 400},
		{name: "mcp, cross-origin", method: "POST", path: "/mcp", bearer: testToken, origin: "http://evil.example", want: 403},
		{name: "forged host", path: "/", bearer: testToken, host: "evil.example", want: 421},
		{name: "forged host, rebinding name", path: "/", cookie: cookie, host: "attacker.example:80", want: 421},
		{name: "forged host on the login", path: "/?token=" + testToken, host: "evil.example", want: 421},
		{name: "forged host on mcp", method: "POST", path: "/mcp", bearer: testToken, host: "evil.example", want: 421},
		{name: "localhost", path: "/", bearer: testToken, host: "localhost", want: 200},
		{name: "an allowed name", path: "/", bearer: testToken, host: "Stratum.Internal:8700", want: 200},
		{name: "an IPv6 literal", path: "/", bearer: testToken, host: "[::1]:8700", want: 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method := tt.method
			if method == "" {
				method = http.MethodGet
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			r, _ := http.NewRequestWithContext(ctx, method, srv.URL+tt.path, strings.NewReader(""))
			if method == http.MethodPost {
				r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			}
			if tt.bearer != "" {
				r.Header.Set("Authorization", "Bearer "+tt.bearer)
			}
			if tt.cookie != nil {
				r.AddCookie(tt.cookie)
			}
			if tt.host != "" {
				r.Host = tt.host
			}
			if tt.origin != "" {
				r.Header.Set("Origin", tt.origin)
			}
			if tt.fetch != "" {
				r.Header.Set("Sec-Fetch-Site", tt.fetch)
			}
			res, err := client().Do(r)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			if res.StatusCode != tt.want {
				b, _ := io.ReadAll(res.Body)
				t.Fatalf("status %d, want %d: %s", res.StatusCode, tt.want, b)
			}
			// Every answer carries the security headers, refusals too.
			if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe") {
				t.Errorf("Content-Security-Policy %q", csp)
			}
			for k, v := range map[string]string{"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer"} {
				if res.Header.Get(k) != v {
					t.Errorf("%s: %q, want %q", k, res.Header.Get(k), v)
				}
			}
			if tt.want == 401 {
				b, _ := io.ReadAll(res.Body)
				if strings.Contains(string(b), runID) || strings.Contains(string(b), "draft") {
					t.Errorf("a refusal shows run data: %s", b)
				}
			}
		})
	}
	if mcpReached != 1 {
		t.Errorf("the MCP handler was reached %d times, want once (the bearer case)", mcpReached)
	}
}

// TestLiveStream: the event stream of a run page says
// "change" when the run's log grows.
func TestLiveStream(t *testing.T) {
	h := newHarness(t)
	runID := h.plan(gateSpec, `{"topic": "t"}`)
	rep, err := h.eng.Poll(context.Background(), runID, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, _ := http.NewRequestWithContext(ctx, http.MethodGet, h.srv.URL+"/live?run="+runID+"&since="+itoa(rep.NextCursor), nil)
	r.Header.Set("Authorization", "Bearer "+testToken)
	res, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	lines := bufio.NewScanner(res.Body)
	go func() {
		time.Sleep(100 * time.Millisecond)
		if _, err := h.eng.Commit(context.Background(), runID, "mark"); err != nil {
			t.Errorf("commit: %v", err)
		}
	}()
	for lines.Scan() {
		if lines.Text() == "event: change" {
			lines.Scan()
			if got := strings.TrimPrefix(lines.Text(), "data: "); got == itoa(rep.NextCursor) {
				t.Fatalf("change with the old cursor %s", got)
			}
			return
		}
	}
	t.Fatalf("the stream ended without a change: %v", lines.Err())
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestDecideForm: the decision form is checked before the engine is
// asked, a decision on another digest or token is refused with the
// content under review now, and an accepted one records the decider, the
// note and the digest.
func TestDecideForm(t *testing.T) {
	h := newHarness(t)
	runID := h.plan(gateSpec, `{"topic": "t"}`)
	h.drive(runID)
	g := h.waitGate(runID, "")
	form := func(kv ...string) url.Values {
		f := url.Values{"run": {runID}, "step": {"review"}, "token": {g.GateToken}, "digest": {g.Digest}, "kind": {"gate"},
			"decision": {"approve"}, "by": {"Ada"}, "from": {"gates"}}
		for i := 0; i+1 < len(kv); i += 2 {
			f.Set(kv[i], kv[i+1])
		}
		return f
	}
	tests := []struct {
		name string
		form url.Values
		code int
		want string
	}{
		{"no name", form("by", " "), 400, "say who you are"},
		{"a name on two lines", form("by", "Ada\nLovelace"), 400, "one line"},
		{"no decision", form("decision", "maybe"), 400, "choose approve, revise or kill"},
		{"no digest", form("digest", ""), 400, "no digest"},
		{"no token", form("token", ""), 400, "no gate token"},
		{"a long note", form("note", strings.Repeat("x", maxNoteBytes+1)), 400, "longer than"},
		{"another digest", form("digest", strings.Repeat("0", 64)), 409, "no longer what is under review"},
		{"an unknown token", form("token", "00000000-0000-4000-8000-000000000000"), 409, "no longer what is under review"},
		{"not a gate", form("step", "work"), 409, "work is not waiting for a decision"},
		{"an unknown run", form("decision", "kill", "run", "nope"), 404, "no such run"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := h.post("/decide", tt.form)
			if code != tt.code || !strings.Contains(body, tt.want) {
				t.Fatalf("status %d, want %d with %q:\n%s", code, tt.code, tt.want, body)
			}
		})
	}
	// Nothing above was decided: the same round is waiting.
	if now := h.waitGate(runID, "x"); now.GateToken != g.GateToken {
		t.Fatalf("a refused decision changed the gate: %+v", now)
	}
	// The refusal of a stale digest shows the content under review now.
	_, body := h.post("/decide", form("digest", strings.Repeat("0", 64)))
	if !strings.Contains(body, g.Digest) || !strings.Contains(body, "draft 1") {
		t.Errorf("the refusal does not show the current content (digest %s):\n%s", g.Digest, body)
	}
	code, body := h.post("/decide", form("note", "fine <b>work</b>"))
	if code != 200 || !strings.Contains(body, "Decided approve on review of run "+runID+", as Ada.") {
		t.Fatalf("approve: %d\n%s", code, body)
	}
	a, err := h.eng.Audit(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, ev := range a.Events {
		var d engine.GateResolvedDetail
		if ev.Type == engine.EventGateResolved && ev.DecodeDetail(&d) == nil &&
			d.ResolvedBy == "Ada" && d.Rationale == "fine <b>work</b>" && d.Digest == g.Digest && d.Decision == engine.DecisionApprove {
			found = true
		}
	}
	if !found {
		t.Errorf("no gate_resolved event with the decider, the note and the digest: %+v", a.Events)
	}
	// The same form again: the round it was made on is over.
	if code, body := h.post("/decide", form()); code != 409 || !strings.Contains(body, "no longer what is under review") {
		t.Errorf("replayed decision: %d\n%s", code, body)
	}
}
