//go:build unix

package agent

import (
	"context"
	"errors"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// An event stream in the documented shape of `codex exec --json`.
const codexEventsOK = `{"type":"thread.started","thread_id":"0199a213-81c0-7800-8aa1-bbab2a035a53"}
{"type":"turn.started"}
{"type":"item.completed","item":{"id":"item_0","type":"reasoning","text":"**Reading README**"}}
{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"bash -lc cat README.md","aggregated_output":"","exit_code":null,"status":"in_progress"}}
{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"bash -lc cat README.md","aggregated_output":"# Demo\n","exit_code":0,"status":"completed"}}
{"type":"item.completed","item":{"id":"item_2","type":"agent_message","text":"{\"summary\": \"from the stream\"}"}}
{"type":"turn.completed","usage":{"input_tokens":24763,"cached_input_tokens":24448,"output_tokens":122}}
`

func TestCodexSuccess(t *testing.T) {
	f := installFake(t, "codex", "fake-codex.sh")
	t.Setenv("FAKE_EVENTS", f.file(t, "events.jsonl", codexEventsOK))
	t.Setenv("FAKE_LAST_MESSAGE", f.file(t, "last.txt", "```json\n{\"summary\": \"from the file\"}\n```\n"))
	req := sampleRequest()
	req.Workdir = t.TempDir()
	res, err := (&Codex{Model: "gpt-5-codex"}).Run(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Failure != "" {
		t.Fatalf("failure: %s", res.Failure)
	}
	// The --output-last-message file is preferred over the stream.
	if got := encode(t, res.Output); got != `{"summary":"from the file"}` {
		t.Errorf("output %s", got)
	}
	u := res.Usage
	if u == nil || u.Tokens != 24885 || u.USD != nil || *u.Split != (TokenSplit{Input: 315, Output: 122, CacheRead: 24448}) ||
		u.Ms != float64(res.Telemetry.DurationMs) {
		t.Errorf("usage %+v", u)
	}
	if res.Telemetry.Model != "gpt-5-codex" {
		t.Errorf("model %q", res.Telemetry.Model)
	}
	args := f.args(t)
	last := argAfter(args, "--output-last-message")
	want := []string{"exec", "--json", "--skip-git-repo-check", "--sandbox", "read-only", "-C", req.Workdir,
		"--output-last-message", last, "--model", "gpt-5-codex", Prompt(req)}
	if strings.Join(args, "\x00") != strings.Join(want, "\x00") {
		t.Errorf("args %q\nwant %q", args, want)
	}
	if !strings.HasPrefix(last, "/") {
		t.Errorf("--output-last-message %q is not an absolute path", last)
	}
	if _, err := os.Stat(filepath.Dir(last)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the --output-last-message directory survived the attempt: %v", err)
	}
}

func TestCodexOptions(t *testing.T) {
	f := installFake(t, "codex", "fake-codex.sh")
	t.Setenv("FAKE_EVENTS", f.file(t, "events.jsonl", codexEventsOK))
	req := sampleRequest()
	req.Options = Options{Sandbox: SandboxDangerFullAccess, Model: "gpt-5.1-codex", Effort: "xhigh"}
	res, err := (&Codex{Model: "ignored"}).Run(context.Background(), req)
	if err != nil || res.Failure != "" {
		t.Fatal(err, res.Failure)
	}
	args := f.args(t)
	if argAfter(args, "--sandbox") != SandboxDangerFullAccess || argAfter(args, "--model") != "gpt-5.1-codex" ||
		argAfter(args, "-c") != `model_reasoning_effort="xhigh"` {
		t.Errorf("args %q", args)
	}
	if res.Telemetry.Model != "gpt-5.1-codex" || res.Telemetry.Effort != "xhigh" {
		t.Errorf("telemetry %+v", res.Telemetry)
	}
	// Claude-only options are refused, not ignored.
	req.Options = Options{DisallowedTools: []string{"Bash"}}
	if _, err := (&Codex{}).Run(context.Background(), req); err == nil || !strings.Contains(err.Error(), "apply to claude only") {
		t.Errorf("err = %v", err)
	}
}

func TestCodexLargePromptAndSandbox(t *testing.T) {
	f := installFake(t, "codex", "fake-codex.sh")
	t.Setenv("FAKE_EVENTS", f.file(t, "events.jsonl", codexEventsOK))
	req := sampleRequest()
	req.Sandbox = SandboxWorkspaceWrite
	req.Task = strings.Repeat("A long task. ", 10000)
	res, err := (&Codex{}).Run(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	// No last-message file: the last agent_message of the stream is used.
	if got := encode(t, res.Output); got != `{"summary":"from the stream"}` {
		t.Errorf("output %s (failure %q)", got, res.Failure)
	}
	args := f.args(t)
	if argAfter(args, "--sandbox") != "workspace-write" || args[len(args)-1] != "-" || hasArg(args, "-C") {
		t.Errorf("args %q", args)
	}
	if f.stdin(t) != Prompt(req) {
		t.Errorf("stdin is not the prompt (%d bytes)", len(f.stdin(t)))
	}
	if res.Telemetry.Model != "unknown" {
		t.Errorf("model %q", res.Telemetry.Model)
	}
}

func TestCodexFailures(t *testing.T) {
	tests := []struct {
		name, events, last, exit, stderr string
		failure                          string
	}{
		{
			name:    "turn failed",
			events:  `{"type":"thread.started","thread_id":"t"}` + "\n" + `{"type":"turn.started"}` + "\n" + `{"type":"turn.failed","error":{"message":"model response stream ended unexpectedly"}}` + "\n",
			exit:    "1",
			failure: "codex reported a failed turn: model response stream ended unexpectedly",
		},
		{
			name:    "error event and exit",
			events:  `{"type":"error","message":"stream error: broken pipe"}` + "\n",
			exit:    "1",
			stderr:  "some log",
			failure: "codex exited with status 1: stream error: broken pipe",
		},
		{
			name:    "exit with stderr only",
			events:  "",
			exit:    "2",
			stderr:  "thread 'main' panicked at core/src/lib.rs",
			failure: "codex exited with status 2: thread 'main' panicked at core/src/lib.rs",
		},
		{
			name:    "no final message",
			events:  `{"type":"turn.started"}` + "\n" + `{"type":"error","message":"Reconnecting... 1/5"}` + "\n" + `{"type":"turn.completed","usage":{"input_tokens":1,"cached_input_tokens":0,"output_tokens":0}}` + "\n",
			failure: "codex finished without a final message; its last error event: Reconnecting... 1/5",
		},
		{
			name:    "prose answer",
			events:  codexEventsOK,
			last:    "I have updated the README as requested.",
			failure: "codex's answer is not a JSON value (",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := installFake(t, "codex", "fake-codex.sh")
			t.Setenv("FAKE_EVENTS", f.file(t, "events.jsonl", tt.events))
			if tt.last != "" {
				t.Setenv("FAKE_LAST_MESSAGE", f.file(t, "last.txt", tt.last))
			}
			t.Setenv("FAKE_EXIT", tt.exit)
			t.Setenv("FAKE_STDERR", tt.stderr)
			res, err := (&Codex{}).Run(context.Background(), sampleRequest())
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(res.Failure, tt.failure) || res.Output != nil {
				t.Errorf("failure %q output %v\nwant %q", res.Failure, res.Output, tt.failure)
			}
		})
	}
}

func TestCodexTimeout(t *testing.T) {
	f := installFake(t, "codex", "fake-codex.sh")
	t.Setenv("FAKE_MODE", "hang")
	req := sampleRequest()
	req.Timeout = 300 * time.Millisecond
	res, err := (&Codex{}).Run(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Failure != "codex timed out after 300ms (the attempt's time limit); its process group was stopped" {
		t.Errorf("failure %q", res.Failure)
	}
	assertDead(t, f.path("pid"))
}

func TestCodexEventsStream(t *testing.T) {
	// Over the line bound: skipped, although it is an agent message.
	huge := `{"type":"item.completed","item":{"type":"agent_message","text":"` + strings.Repeat("x", maxEventLine) + `"}}`
	stream := "Codex banner, not JSON\n" +
		`{"type":"item.completed","item":{"id":"1","item_type":"assistant_message","text":"old shape"}}` + "\n" +
		huge + "\n" +
		"{not json\n" +
		`{"type":"turn.completed","usage":{"input_tokens":10,"cached_input_tokens":4,"output_tokens":5}}` + "\n" +
		`{"type":"turn.completed","usage":{"input_tokens":1,"cached_input_tokens":0,"output_tokens":1}}` // no final newline
	// Any chunking of the stream gives the same result.
	rng := rand.New(rand.NewSource(1))
	for round := 0; round < 20; round++ {
		ev := newCodexEvents(Options{}, 0, nil)
		for rest := stream; rest != ""; {
			n := 1 + rng.Intn(min(len(rest), 1<<16))
			ev.Write([]byte(rest[:n]))
			rest = rest[n:]
		}
		ev.finish()
		if !ev.sawMessage || ev.lastMessage != "old shape" {
			t.Fatalf("message %q", ev.lastMessage)
		}
		u := ev.usage(&Usage{})
		if u.Tokens != 17 || *u.Split != (TokenSplit{Input: 7, Output: 6, CacheRead: 4}) {
			t.Fatalf("usage %+v", u.Split)
		}
		if cap(ev.lines.line) > 0 {
			t.Fatal("line buffer kept after finish")
		}
	}
}

func FuzzCodexEvents(f *testing.F) {
	f.Add(codexEventsOK, 7)
	f.Add(`{"type":"turn.failed","error":null}`+"\n", 1)
	f.Add(`{"type":"item.completed","item":null}`, 3)
	f.Fuzz(func(t *testing.T, stream string, chunk int) {
		if chunk <= 0 {
			chunk = 1
		}
		whole, split := newCodexEvents(Options{}, 0, nil), newCodexEvents(Options{}, 0, nil)
		whole.Write([]byte(stream))
		whole.finish()
		for rest := stream; rest != ""; {
			n := min(chunk, len(rest))
			split.Write([]byte(rest[:n]))
			rest = rest[n:]
		}
		split.finish()
		if whole.lastMessage != split.lastMessage || whole.turnFailed != split.turnFailed || whole.input != split.input {
			t.Fatalf("chunking changed the result")
		}
	})
}
