//go:build unix

package agent

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// A success stream in the shape of `claude -p --output-format stream-json
// --verbose` (as captured from claude 2.1.197, trimmed): the init message,
// an assistant message with a tool call and its text, the result.
const claudeSuccess = `{"type":"system","subtype":"init","cwd":"/work","session_id":"0e639165-79b1-4bd4-bb0f-4cb4c15115d4","tools":["Bash","Read"],"model":"claude-sonnet-4-5","permissionMode":"default","apiKeySource":"none","claude_code_version":"2.1.197"}
{"type":"assistant","message":{"model":"claude-sonnet-4-5","role":"assistant","type":"message","content":[{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"/work/README.md"}}]},"session_id":"0e639165"}
{"type":"user","message":{"role":"user","content":[{"tool_use_id":"t1","type":"tool_result","content":"# Demo"}]},"session_id":"0e639165"}
{"type":"assistant","message":{"model":"claude-sonnet-4-5","role":"assistant","type":"message","content":[{"type":"text","text":"{\"summary\": \"ok\", \"confidence\": 0.9}"}]},"session_id":"0e639165"}
{"type":"result","subtype":"success","is_error":false,"api_error_status":null,"duration_ms":2100,"duration_api_ms":1900,"num_turns":2,"result":"{\"summary\": \"ok\", \"confidence\": 0.9}","session_id":"0e639165-79b1-4bd4-bb0f-4cb4c15115d4","total_cost_usd":0.0123,"usage":{"input_tokens":10,"cache_creation_input_tokens":200,"cache_read_input_tokens":3000,"output_tokens":40},"modelUsage":{"claude-haiku-4-5":{"inputTokens":5,"outputTokens":2,"costUSD":0.0001},"claude-sonnet-4-5":{"inputTokens":10,"outputTokens":40,"costUSD":0.0122}}}
`

// A single result envelope in the shape of `claude -p --output-format
// json`, indented: what an older or wrapped CLI may print instead of a
// stream.
const claudeEnvelopeOnly = `{
  "type": "result",
  "subtype": "success",
  "is_error": false,
  "duration_ms": 2100,
  "duration_api_ms": 1900,
  "num_turns": 1,
  "result": "{\"summary\": \"ok\", \"confidence\": 0.9}",
  "session_id": "0e639165-79b1-4bd4-bb0f-4cb4c15115d4",
  "total_cost_usd": 0.0123,
  "usage": {"input_tokens": 10, "cache_creation_input_tokens": 200, "cache_read_input_tokens": 3000, "output_tokens": 40},
  "modelUsage": {
    "claude-haiku-4-5": {"inputTokens": 5, "outputTokens": 2, "costUSD": 0.0001},
    "claude-sonnet-4-5": {"inputTokens": 10, "outputTokens": 40, "costUSD": 0.0122}
  }
}`

func TestClaudeSuccess(t *testing.T) {
	f := installFake(t, "claude", "fake-claude.sh")
	t.Setenv("FAKE_RESPONSE", f.file(t, "response.json", claudeSuccess))
	req := sampleRequest()
	req.Workdir = t.TempDir()
	res, err := (&Claude{}).Run(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Failure != "" {
		t.Fatalf("failure: %s", res.Failure)
	}
	if got := encode(t, res.Output); got != `{"summary":"ok","confidence":0.9}` {
		t.Errorf("output %s", got)
	}
	u := res.Usage
	if u == nil || u.Tokens != 3250 || u.USD == nil || *u.USD != 0.0123 || u.USDSource != "reported" ||
		*u.Split != (TokenSplit{Input: 10, Output: 40, CacheRead: 3000, CacheCreation: 200}) ||
		u.Ms != float64(res.Telemetry.DurationMs) {
		t.Errorf("usage %+v split %+v", u, u.Split)
	}
	if res.Telemetry.Model != "claude-sonnet-4-5" {
		t.Errorf("model %q", res.Telemetry.Model)
	}
	args := f.args(t)
	want := []string{"-p", Prompt(req), "--output-format", "stream-json", "--verbose"}
	if strings.Join(args, "\x00") != strings.Join(want, "\x00") {
		t.Errorf("args %q\nwant %q", args, want)
	}
	if f.stdin(t) != "" {
		t.Errorf("stdin %q, want none", f.stdin(t))
	}
}

// The envelope alone (--output-format json, indented) is still read.
func TestClaudeEnvelopeOnly(t *testing.T) {
	f := installFake(t, "claude", "fake-claude.sh")
	t.Setenv("FAKE_RESPONSE", f.file(t, "response.json", claudeEnvelopeOnly))
	res, err := (&Claude{}).Run(context.Background(), sampleRequest())
	if err != nil || res.Failure != "" {
		t.Fatal(err, res.Failure)
	}
	if got := encode(t, res.Output); got != `{"summary":"ok","confidence":0.9}` || res.Usage.Tokens != 3250 {
		t.Errorf("output %s usage %+v", got, res.Usage)
	}
}

func TestClaudeOptions(t *testing.T) {
	long := strings.Repeat("A long task. ", 10000) // over the argument limit: goes on stdin
	tests := []struct {
		name   string
		claude Claude
		req    func(*Request)
		want   []string // after -p [prompt]
	}{
		{
			name:   "sandbox of the request, model, extra args",
			claude: Claude{Model: "opus", ExtraArgs: []string{"--max-turns", "3"}},
			req:    func(r *Request) { r.Sandbox = SandboxWorkspaceWrite },
			want:   []string{"--model", "opus", "--permission-mode", "acceptEdits", "--max-turns", "3"},
		},
		{
			name:   "every option",
			claude: Claude{Model: "opus"},
			req: func(r *Request) {
				r.Options = Options{Sandbox: SandboxDangerFullAccess, Model: "sonnet", Effort: "high",
					AllowedTools: []string{"Read", "Bash(git log *)"}, DisallowedTools: []string{"WebFetch"},
					Thinking: &Thinking{Type: "enabled", BudgetTokens: 8000, Display: "summarized"}}
			},
			want: []string{"--model", "sonnet", "--permission-mode", "bypassPermissions", "--effort", "high",
				"--allowedTools", "Read", "Bash(git log *)", "--disallowedTools", "WebFetch",
				"--max-thinking-tokens", "8000", "--thinking-display", "summarized"},
		},
		{
			name: "permission mode wins over the sandbox; adaptive thinking",
			req: func(r *Request) {
				r.Options = Options{Sandbox: SandboxWorkspaceWrite, PermissionMode: "plan", Thinking: &Thinking{Type: "adaptive"}}
			},
			want: []string{"--permission-mode", "plan", "--thinking", "adaptive"},
		},
		{
			name: "the request's sandbox wins over the options'; thinking off",
			req: func(r *Request) {
				r.Sandbox = SandboxReadOnly
				r.Options = Options{Sandbox: SandboxWorkspaceWrite, Thinking: &Thinking{Type: "disabled", Display: "omitted"}}
			},
			want: []string{"--thinking", "disabled"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := installFake(t, "claude", "fake-claude.sh")
			t.Setenv("FAKE_RESPONSE", f.file(t, "response.json", claudeSuccess))
			req := sampleRequest()
			req.Task = long
			tt.req(&req)
			res, err := tt.claude.Run(context.Background(), req)
			if err != nil || res.Failure != "" {
				t.Fatal(err, res.Failure)
			}
			want := append([]string{"-p", "--output-format", "stream-json", "--verbose"}, tt.want...)
			if args := f.args(t); strings.Join(args, "\x00") != strings.Join(want, "\x00") {
				t.Errorf("args %q\nwant %q", args, want)
			}
			if f.stdin(t) != Prompt(req) {
				t.Errorf("stdin is not the prompt (%d bytes)", len(f.stdin(t)))
			}
			if e := req.Options.Effort; res.Telemetry.Effort != e {
				t.Errorf("telemetry effort %q, want %q", res.Telemetry.Effort, e)
			}
		})
	}
}

func TestClaudeEnvelopes(t *testing.T) {
	tests := []struct {
		name     string
		response string
		exit     string
		stderr   string
		output   string // JSON of the output, when the attempt succeeds
		failure  string // prefix of the failure otherwise
		model    string
	}{
		{
			name:     "fenced answer",
			response: `{"type":"result","subtype":"success","is_error":false,"result":"` + "```json\\n{\\\"a\\\": [1]}\\n```" + `","total_cost_usd":0.5}`,
			output:   `{"a":[1]}`, model: "unknown",
		},
		{
			name:     "structured output wins",
			response: `{"type":"result","subtype":"success","is_error":false,"result":"","structured_output":{"b":true}}`,
			output:   `{"b":true}`,
		},
		{
			name: "verbose message array",
			response: `[{"type":"system","subtype":"init","model":"x"},{"type":"assistant","message":{}},` +
				`{"type":"result","subtype":"success","is_error":false,"result":"42","modelUsage":{"claude-opus-4-1":{"costUSD":1}}}]`,
			output: `42`, model: "claude-opus-4-1",
		},
		{
			name:     "error envelope",
			response: `{"type":"result","subtype":"error_max_turns","is_error":true,"num_turns":10,"total_cost_usd":0.2}`,
			exit:     "1",
			failure:  "claude reported an error (error_max_turns)",
		},
		{
			name:     "error envelope with text",
			response: `{"type":"result","subtype":"success","is_error":true,"result":"API Error: 400 due to tool use concurrency issues."}`,
			exit:     "1",
			failure:  "claude reported an error (success): API Error: 400 due to tool use concurrency issues.",
		},
		{
			name: "typed error about the answer",
			response: `{"type":"assistant","message":{"content":[{"type":"text","text":"cut"}]},"error":"max_output_tokens"}` + "\n" +
				`{"type":"result","subtype":"success","is_error":true,"result":"Claude's response exceeded the output token maximum"}`,
			exit:    "1",
			failure: "claude reported an error (success): Claude's response exceeded the output token maximum",
		},
		{
			name:     "errors list",
			response: `{"type":"result","subtype":"error_during_execution","is_error":true,"errors":["tool crashed","gave up"]}`,
			failure:  "claude reported an error (error_during_execution): tool crashed; gave up",
		},
		{
			name:     "prose answer",
			response: `{"type":"result","subtype":"success","is_error":false,"result":"I could not find README.md."}`,
			failure:  `claude's answer is not a JSON value (`,
		},
		{
			name:     "garbage on stdout",
			response: "Welcome to Claude Code!\n",
			failure:  "claude printed something other than its JSON result envelope (",
		},
		{
			name:     "crash without envelope",
			response: "",
			exit:     "2",
			stderr:   "TypeError: cannot read properties of undefined",
			failure:  "claude exited with status 2: TypeError: cannot read properties of undefined",
		},
		{
			name:     "envelope but non-zero exit",
			response: `{"type":"result","subtype":"success","is_error":false,"result":"1"}`,
			exit:     "3",
			stderr:   "late crash",
			failure:  "claude exited with status 3: late crash",
		},
		{
			name:     "no result text",
			response: `{"type":"result","subtype":"success","is_error":false}`,
			failure:  "claude's result envelope has no result text",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := installFake(t, "claude", "fake-claude.sh")
			t.Setenv("FAKE_RESPONSE", f.file(t, "response.json", tt.response))
			t.Setenv("FAKE_EXIT", tt.exit)
			t.Setenv("FAKE_STDERR", tt.stderr)
			res, err := (&Claude{}).Run(context.Background(), sampleRequest())
			if err != nil {
				t.Fatal(err)
			}
			if tt.failure != "" {
				if !strings.HasPrefix(res.Failure, tt.failure) || res.Output != nil {
					t.Errorf("failure %q, output %v\nwant failure %q", res.Failure, res.Output, tt.failure)
				}
				return
			}
			if res.Failure != "" {
				t.Fatalf("failure: %s", res.Failure)
			}
			if got := encode(t, res.Output); got != tt.output {
				t.Errorf("output %s, want %s", got, tt.output)
			}
			if tt.model != "" && res.Telemetry.Model != tt.model {
				t.Errorf("model %q, want %q", res.Telemetry.Model, tt.model)
			}
		})
	}
}

func TestClaudeTimeout(t *testing.T) {
	f := installFake(t, "claude", "fake-claude.sh")
	t.Setenv("FAKE_MODE", "hang")
	req := sampleRequest()
	req.Timeout = 300 * time.Millisecond
	res, err := (&Claude{}).Run(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Failure != "claude timed out after 300ms (the attempt's time limit); its process group was stopped" {
		t.Errorf("failure %q", res.Failure)
	}
	assertDead(t, f.path("pid"))
}

func TestClaudeNotFound(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := (&Claude{}).Run(context.Background(), sampleRequest())
	var un *UnavailableError
	if !errors.Is(err, ErrNotFound) || !errors.As(err, &un) || un.Kind != UnavailableNotInstalled || un.Agent != "claude" ||
		err.Error() != "claude CLI not found on PATH; install it or pass --agent '<command>'" {
		t.Errorf("err = %v", err)
	}
	_, err = (&Codex{}).Run(context.Background(), sampleRequest())
	if !errors.Is(err, ErrNotFound) || !errors.Is(err, ErrUnavailable) || err.Error() != "codex CLI not found on PATH; install it or pass --agent '<command>'" {
		t.Errorf("err = %v", err)
	}
}

func FuzzParseClaudeEnvelope(f *testing.F) {
	f.Add(claudeEnvelopeOnly)
	f.Add(`[{"type":"result","result":"1"}]`)
	f.Add(`{"type":"result","is_error":true,"errors":["x"]}`)
	f.Add(`[[[]]]`)
	f.Fuzz(func(t *testing.T, s string) {
		env, err := parseClaudeEnvelope([]byte(s))
		if err != nil {
			return
		}
		if env.Type != "result" {
			t.Fatalf("accepted an envelope of type %q", env.Type)
		}
		_ = env.errorReason()
		_ = env.usage(&Usage{})
		_ = env.model()
	})
}

// The verbose form is an array of message objects; an element that is an
// array is not searched in turn. Searching nested arrays re-decoded them at
// every level: 300 KB of nested brackets took 20 seconds.
func TestParseClaudeEnvelopeArrays(t *testing.T) {
	if env, err := parseClaudeEnvelope([]byte(` [ {"type":"system"}, {"type":"result","result":"1"} ] `)); err != nil || *env.Result != "1" {
		t.Errorf("message array: %v, %v", env, err)
	}
	if _, err := parseClaudeEnvelope([]byte(`[[{"type":"result","result":"1"}]]`)); err == nil {
		t.Error("a result message inside a nested array was accepted")
	}
	sibling := strings.Repeat("[", 3000) + strings.Repeat("]", 3000)
	hostile := "[" + strings.TrimSuffix(strings.Repeat(sibling+",", 100), ",") + "]"
	if _, err := parseClaudeEnvelope([]byte(hostile)); err == nil {
		t.Error("nested arrays accepted as an envelope")
	}
}

// Any chunking of claude's output gives the same outcome, with progress
// on or off, and nothing panics.
func FuzzClaudeStream(f *testing.F) {
	f.Add(claudeSuccess, 7, false)
	f.Add(claudeEnvelopeOnly, 3, true)
	f.Add(claudeErrorStream("rate_limit", "You've hit your limit", "429"), 11, true)
	f.Fuzz(func(t *testing.T, out string, chunk int, progress bool) {
		if chunk <= 0 {
			chunk = 1
		}
		var o Options
		if progress {
			o.Progress = func(string) {}
		}
		whole, split := newClaudeStream(o), newClaudeStream(Options{})
		whole.Write([]byte(out))
		whole.finish()
		for rest := out; rest != ""; {
			n := min(chunk, len(rest))
			split.Write([]byte(rest[:n]))
			rest = rest[n:]
		}
		split.finish()
		a, b := whole.envelope(), split.envelope()
		if (a == nil) != (b == nil) || whole.assistantError != split.assistantError || whole.initModel != split.initModel {
			t.Fatalf("chunking or progress changed the outcome: %v %v", a, b)
		}
	})
}
