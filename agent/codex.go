package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/stratum-go/stratum/internal/proc"
)

// Codex runs the Codex CLI non-interactively:
//
//	codex exec --json --skip-git-repo-check --sandbox <mode> [-C <workdir>]
//	    --output-last-message <tmpfile> [--model M] [ExtraArgs...] <prompt>
//
// (with "-" in place of the prompt, and the prompt on stdin, when it is
// over 100 KiB). The final message is read from the --output-last-message
// file, falling back to the last agent_message item of the --json event
// stream; token usage comes from the stream's turn.completed events. See
// docs/agents.md.
type Codex struct {
	// Model, when set, is passed as --model.
	Model string
	// ExtraArgs are inserted before the prompt.
	ExtraArgs []string
	// Env is the complete environment; nil inherits Stratum's.
	Env []string
	// LookPath finds the codex executable; nil means exec.LookPath.
	LookPath func(string) (string, error)
}

// Run implements Connector.
func (c *Codex) Run(ctx context.Context, req Request) (Result, error) {
	sandbox, err := req.sandbox()
	if err != nil {
		return Result{}, err
	}
	path, err := findProgram("codex", c.LookPath, "codex CLI not found on PATH; install it or pass --agent '<command>'")
	if err != nil {
		return Result{}, err
	}
	tmp, err := os.MkdirTemp("", "stratum-codex-")
	if err != nil {
		return Result{}, fmt.Errorf("agent codex: %w", err)
	}
	defer os.RemoveAll(tmp)
	lastMessage := filepath.Join(tmp, "last-message.txt")

	argv := []string{path, "exec", "--json", "--skip-git-repo-check", "--sandbox", sandbox}
	if req.Workdir != "" {
		argv = append(argv, "-C", req.Workdir)
	}
	argv = append(argv, "--output-last-message", lastMessage)
	if c.Model != "" {
		argv = append(argv, "--model", c.Model)
	}
	argv = append(argv, c.ExtraArgs...)
	prompt := Prompt(req)
	var stdin []byte
	if len(prompt) <= maxArgPrompt {
		argv = append(argv, prompt)
	} else {
		argv = append(argv, "-")
		stdin = []byte(prompt)
	}

	events := &codexEvents{}
	res, err := proc.Run(ctx, proc.Spec{
		Argv: argv, Dir: req.Workdir, Env: c.Env, Stdin: stdin,
		Timeout: req.Timeout, StderrTail: stderrTail, Stdout: events,
	})
	events.finish()
	out := Result{Telemetry: &Telemetry{DurationMs: res.Duration.Milliseconds(), Model: modelOr(c.Model)}}
	if err != nil {
		return out, fmt.Errorf("agent codex: %w", err)
	}
	out.Usage = events.usage()
	if res.TimedOut {
		out.Failure = processFailure("codex", res, req.Timeout)
		return out, nil
	}
	if events.turnFailed != "" {
		out.Failure = "codex reported a failed turn: " + tail([]byte(events.turnFailed))
		return out, nil
	}
	if reason := processFailure("codex", res, req.Timeout); reason != "" {
		if events.lastError != "" && res.Signal == "" {
			reason = fmt.Sprintf("codex exited with status %d: %s", res.ExitCode, tail([]byte(events.lastError)))
		}
		out.Failure = reason
		return out, nil
	}
	message, ok := readLastMessage(lastMessage)
	if !ok {
		message, ok = events.lastMessage, events.sawMessage
	}
	if !ok {
		out.Failure = "codex finished without a final message"
		if events.lastError != "" {
			out.Failure += "; its last error event: " + tail([]byte(events.lastError))
		}
		return out, nil
	}
	v, err := extractAnswer(message)
	if err != nil {
		out.Failure = "codex's " + err.Error()
		return out, nil
	}
	out.Output = v
	return out, nil
}

// readLastMessage reads the --output-last-message file; ok is false when
// codex did not write it (or wrote it empty), so the caller falls back
// to the event stream.
func readLastMessage(path string) (string, bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, cliOutputLimit+1))
	if err != nil || len(bytes.TrimSpace(b)) == 0 || len(b) > cliOutputLimit {
		return "", false
	}
	return string(b), true
}

// maxEventLine bounds one line of the event stream; longer lines (huge
// command outputs) are skipped, since nothing Stratum needs is that big.
const maxEventLine = 4 << 20

// codexEvents consumes `codex exec --json` stdout line by line as it is
// written, keeping only what Stratum needs, so that a long session with
// large tool outputs never accumulates in memory.
type codexEvents struct {
	line     []byte
	skipping bool

	lastMessage string
	sawMessage  bool
	// turnFailed is the message of a turn.failed event: the run failed.
	turnFailed string
	// lastError is the last "error" event; codex also emits these for
	// transient trouble it recovers from, so alone it fails nothing.
	lastError string
	sawUsage  bool
	input     float64
	cached    float64
	output    float64
}

func (c *codexEvents) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if !c.skipping {
			if len(c.line)+len(chunk) > maxEventLine {
				c.skipping = true
				c.line = c.line[:0]
			} else {
				c.line = append(c.line, chunk...)
			}
		}
		if i < 0 {
			break
		}
		if !c.skipping {
			c.event(c.line)
		}
		c.line = c.line[:0]
		c.skipping = false
		p = p[i+1:]
	}
	return n, nil
}

// finish handles a last line without a trailing newline.
func (c *codexEvents) finish() {
	if !c.skipping && len(c.line) > 0 {
		c.event(c.line)
	}
	c.line = nil
}

// codexEvent is the part of one event line that Stratum reads. Item type
// is "type" in current releases and was "item_type" in early ones, whose
// agent message item was called "assistant_message".
type codexEvent struct {
	Type string `json:"type"`
	Item *struct {
		Type     string `json:"type"`
		ItemType string `json:"item_type"`
		Text     string `json:"text"`
	} `json:"item"`
	Usage *struct {
		InputTokens       float64 `json:"input_tokens"`
		CachedInputTokens float64 `json:"cached_input_tokens"`
		OutputTokens      float64 `json:"output_tokens"`
	} `json:"usage"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
	Message string `json:"message"`
}

func (c *codexEvents) event(line []byte) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return // not an event (a banner or log line): ignore
	}
	if !mayMatter(line) {
		return // e.g. reasoning and command items: skip the JSON decoding
	}
	var ev codexEvent
	if json.Unmarshal(line, &ev) != nil {
		return
	}
	switch ev.Type {
	case "item.completed":
		if ev.Item == nil {
			return
		}
		kind := ev.Item.Type
		if kind == "" {
			kind = ev.Item.ItemType
		}
		if kind == "agent_message" || kind == "assistant_message" {
			c.lastMessage, c.sawMessage = ev.Item.Text, true
		}
	case "turn.completed":
		if ev.Usage != nil {
			c.sawUsage = true
			c.input += ev.Usage.InputTokens
			c.cached += ev.Usage.CachedInputTokens
			c.output += ev.Usage.OutputTokens
		}
	case "turn.failed":
		msg := "turn failed"
		if ev.Error != nil && strings.TrimSpace(ev.Error.Message) != "" {
			msg = ev.Error.Message
		}
		c.turnFailed = msg
	case "error":
		if strings.TrimSpace(ev.Message) != "" {
			c.lastError = ev.Message
		}
	}
}

// mayMatter is a cheap prefilter: an event that event() acts on contains
// one of these strings (a line that merely mentions one is decoded and
// then ignored, so the filter never changes the outcome).
func mayMatter(line []byte) bool {
	for _, s := range [][]byte{[]byte("agent_message"), []byte("assistant_message"), []byte("turn."), []byte(`"error"`)} {
		if bytes.Contains(line, s) {
			return true
		}
	}
	return false
}

// usage converts the summed turn usage. Codex's input_tokens include the
// cached ones (OpenAI semantics), so the split subtracts them.
func (c *codexEvents) usage() *Usage {
	if !c.sawUsage {
		return nil
	}
	cached := min(c.cached, c.input)
	return &Usage{
		Tokens: c.input + c.output,
		Split:  &TokenSplit{Input: c.input - cached, Output: c.output, CacheRead: cached},
	}
}
