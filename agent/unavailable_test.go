//go:build unix

package agent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// claudeErrorStream is the stream the CLI prints when a request fails for
// good: its synthetic assistant message carries the CLI's typed error,
// then the error envelope (the shape of testdata/claude/*.jsonl).
func claudeErrorStream(typed, text string, status string) string {
	return `{"type":"system","subtype":"init","model":"claude-opus-4-8"}` + "\n" +
		`{"type":"assistant","message":{"model":"<synthetic>","role":"assistant","content":[{"type":"text","text":"` + text + `"}]},"error":"` + typed + `"}` + "\n" +
		`{"type":"result","subtype":"success","is_error":true,"api_error_status":` + status + `,"num_turns":1,"result":"` + text + `","total_cost_usd":0,"usage":{"input_tokens":0,"output_tokens":0},"modelUsage":{}}` + "\n"
}

func TestClaudeUnavailable(t *testing.T) {
	tests := []struct {
		name     string
		fixture  string // a file of testdata/claude, captured from the real CLI
		response string
		exit     string
		stderr   string
		kind     UnavailableKind
		reason   string
	}{
		{name: "logged out (captured)", fixture: "not-logged-in.jsonl", exit: "1", kind: UnavailableAuth, reason: "Not logged in · Please run /login"},
		{name: "offline (captured)", fixture: "no-network.jsonl", exit: "1", kind: UnavailableNetwork, reason: "API Error: Unable to connect to API (ConnectionRefused)"},
		{name: "invalid key", response: claudeErrorStream("authentication_failed", "Invalid API key · Fix external API key", "401"), exit: "1", kind: UnavailableAuth},
		{name: "org refuses the login", response: claudeErrorStream("oauth_org_not_allowed", "Your organization does not allow this login", "403"), exit: "1", kind: UnavailableAuth},
		{name: "usage limit", response: claudeErrorStream("rate_limit", "You've hit your limit · resets 5pm", "429"), exit: "1", kind: UnavailableQuota},
		{name: "credit balance", response: claudeErrorStream("billing_error", "Credit balance is too low", "null"), exit: "1", kind: UnavailableQuota},
		{name: "unknown model", response: claudeErrorStream("model_not_found", "There's an issue with the selected model (claude-x). It may not exist or you may not have access to it.", "404"), exit: "1", kind: UnavailableModel},
		{name: "overloaded", response: claudeErrorStream("overloaded", "API Error: Repeated 529 Overloaded errors", "529"), exit: "1", kind: UnavailableService},
		{
			name:     "status only (json envelope)",
			response: `{"type":"result","subtype":"success","is_error":true,"api_error_status":401,"result":"API Error: 401 Invalid API key · Please run /login"}`,
			exit:     "1", kind: UnavailableAuth,
		},
		{
			name:     "text only (json envelope of an older CLI)",
			response: `{"type":"result","subtype":"success","is_error":true,"result":"Claude AI usage limit reached|1756890000"}`,
			exit:     "1", kind: UnavailableQuota,
		},
		{name: "no envelope, stderr says", exit: "1", stderr: "Error: Invalid API key · Please run /login", kind: UnavailableAuth},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := installFake(t, "claude", "fake-claude.sh")
			resp := tt.response
			if tt.fixture != "" {
				b, err := os.ReadFile(filepath.Join("testdata", "claude", tt.fixture))
				if err != nil {
					t.Fatal(err)
				}
				resp = string(b)
			}
			t.Setenv("FAKE_RESPONSE", f.file(t, "response.json", resp))
			t.Setenv("FAKE_EXIT", tt.exit)
			t.Setenv("FAKE_STDERR", tt.stderr)
			res, err := (&Claude{}).Run(context.Background(), sampleRequest())
			var un *UnavailableError
			if !errors.As(err, &un) || !errors.Is(err, ErrUnavailable) {
				t.Fatalf("err = %v, failure %q: want an UnavailableError", err, res.Failure)
			}
			if un.Kind != tt.kind || un.Agent != "claude" || (tt.reason != "" && un.Reason != tt.reason) {
				t.Errorf("got %+v, want kind %s reason %q", un, tt.kind, tt.reason)
			}
			if res.Failure != "" || res.Output != nil {
				t.Errorf("an unavailable agent made an attempt: failure %q output %v", res.Failure, res.Output)
			}
			if res.Telemetry == nil || res.Usage == nil {
				t.Errorf("telemetry %+v usage %+v: want what the failed start measured", res.Telemetry, res.Usage)
			}
		})
	}

	// The message says what is wrong and what to do.
	f := installFake(t, "claude", "fake-claude.sh")
	b, _ := os.ReadFile(filepath.Join("testdata", "claude", "not-logged-in.jsonl"))
	t.Setenv("FAKE_RESPONSE", f.file(t, "response.json", string(b)))
	t.Setenv("FAKE_EXIT", "1")
	_, err := (&Claude{}).Run(context.Background(), sampleRequest())
	want := "claude cannot run: not logged in (Not logged in · Please run /login); log in (claude: run `claude` and /login; codex: `codex login`), then resume the run"
	if err == nil || err.Error() != want {
		t.Errorf("message %q\nwant %q", err, want)
	}
}

func TestCodexUnavailable(t *testing.T) {
	failed := func(msg string) string {
		return `{"type":"thread.started","thread_id":"t"}` + "\n" + `{"type":"turn.started"}` + "\n" +
			`{"type":"error","message":"` + msg + `"}` + "\n" + `{"type":"turn.failed","error":{"message":"` + msg + `"}}` + "\n"
	}
	tests := []struct {
		name, events, exit, stderr string
		kind                       UnavailableKind
	}{
		// Shapes reported on the Codex tracker and by its users (see
		// docs/agents.md, "When the agent cannot run").
		{name: "401 after retries", events: failed("exceeded retry limit, last status: 401 Unauthorized, request id: 99cd"), exit: "1", kind: UnavailableAuth},
		{name: "401 unexpected status", events: failed(`unexpected status 401 Unauthorized: {\"detail\":\"Unauthorized\"}, url: https://chatgpt.com/backend-api/codex/responses`), exit: "1", kind: UnavailableAuth},
		{name: "usage limit", events: failed("You've hit your usage limit. To get more access now, send a request to your admin or try again at 12:16 PM."), exit: "1", kind: UnavailableQuota},
		{name: "quota", events: failed("Quota exceeded. Check your plan and billing details."), exit: "1", kind: UnavailableQuota},
		{name: "429", events: failed("exceeded retry limit, last status: 429 Too Many Requests, request id: c4fc59ca"), exit: "1", kind: UnavailableQuota},
		{name: "offline, gave up", events: failed("stream disconnected before completion: failed to lookup address information: Name does not resolve"), exit: "1", kind: UnavailableNetwork},
		{name: "unknown model", events: failed("The model `gpt-9` does not exist or you do not have access to it."), exit: "1", kind: UnavailableModel},
		{name: "stderr only", exit: "1", stderr: "Error: Not logged in. Run `codex login`.", kind: UnavailableAuth},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := installFake(t, "codex", "fake-codex.sh")
			if tt.events != "" {
				t.Setenv("FAKE_EVENTS", f.file(t, "events.jsonl", tt.events))
			}
			t.Setenv("FAKE_EXIT", tt.exit)
			t.Setenv("FAKE_STDERR", tt.stderr)
			res, err := (&Codex{}).Run(context.Background(), sampleRequest())
			var un *UnavailableError
			if !errors.As(err, &un) || un.Kind != tt.kind || un.Agent != "codex" {
				t.Fatalf("err = %v (%+v), failure %q: want kind %s", err, un, res.Failure, tt.kind)
			}
			if res.Failure != "" {
				t.Errorf("failure %q", res.Failure)
			}
		})
	}
}

// Codex without a network retries for ever ("Reconnecting... waiting for
// network"); it is stopped after the offline grace and reported
// unavailable, not left to run into the time limit.
func TestCodexOffline(t *testing.T) {
	f := installFake(t, "codex", "fake-codex.sh")
	t.Setenv("FAKE_MODE", "hang")
	t.Setenv("FAKE_EVENTS", filepath.Join(mustAbs(t, "testdata"), "codex", "no-network.jsonl"))
	var lines []string
	req := sampleRequest()
	req.Options.Progress = func(l string) { lines = append(lines, l) }
	req.Options.Timeout = time.Minute // only reached if the grace does not work
	res, err := (&Codex{OfflineGrace: 200 * time.Millisecond}).Run(context.Background(), req)
	var un *UnavailableError
	if !errors.As(err, &un) || un.Kind != UnavailableNetwork || !errors.Is(err, errOffline) {
		t.Fatalf("err = %v, failure %q: want it stopped by the offline grace", err, res.Failure)
	}
	if !strings.Contains(un.Reason, "waiting for network") {
		t.Errorf("reason %q", un.Reason)
	}
	assertDead(t, f.path("pid"))
	// What it said along the way reached the progress callback.
	if len(lines) < 3 || lines[0] != "codex: session 01a2317b-609e-7fe0-80cf-95ad77b8c600 started" ||
		!strings.HasPrefix(lines[len(lines)-1], "codex: error: Reconnecting... waiting for network") {
		t.Errorf("progress %q", lines)
	}

	// With the grace disabled, the time limit ends it, and it is still
	// reported as offline, not as a failed attempt.
	req.Options = Options{Timeout: 300 * time.Millisecond}
	_, err = (&Codex{OfflineGrace: -1}).Run(context.Background(), req)
	if !errors.As(err, &un) || un.Kind != UnavailableNetwork {
		t.Fatalf("err = %v", err)
	}

	// A codex that reconnects and goes on working is not stopped.
	t.Setenv("FAKE_MODE", "")
	stream := `{"type":"error","message":"Reconnecting... waiting for network (Connection failed: error sending request)"}` + "\n" +
		`{"type":"turn.started"}` + "\n" + codexEventsOK
	t.Setenv("FAKE_EVENTS", f.file(t, "events.jsonl", stream))
	res, err = (&Codex{OfflineGrace: time.Hour}).Run(context.Background(), sampleRequest())
	if err != nil || res.Failure != "" {
		t.Fatalf("err = %v, failure %q", err, res.Failure)
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestClassifyText(t *testing.T) {
	tests := []struct {
		text string
		want UnavailableKind
	}{
		{"Not logged in · Please run /login", UnavailableAuth},
		{"stream disconnected before completion: 401 Unauthorized", UnavailableAuth},
		{"Reconnecting... 2/5 (stream disconnected before completion: failed to lookup address information)", UnavailableNetwork},
		{"Your access token could not be refreshed because your refresh token was already used", UnavailableAuth},
		{"insufficient_quota", UnavailableQuota},
		{"503 Service Unavailable", UnavailableService},
		{"ensure failed: result.confidence >= 0.8", ""},
		{"model response stream ended unexpectedly", ""},
		{"used 15290 tokens", ""},
	}
	for _, tt := range tests {
		if got := classifyText(tt.text); got != tt.want {
			t.Errorf("classifyText(%q) = %q, want %q", tt.text, got, tt.want)
		}
	}
}
