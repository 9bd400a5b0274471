package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/stratum-go/stratum/internal/proc"
	"github.com/stratum-go/stratum/internal/scratch"
)

// Codex runs the Codex CLI non-interactively:
//
//	codex exec --json --skip-git-repo-check --sandbox <mode> [-C <workdir>]
//	    --output-last-message <tmpfile> [--model M]
//	    [-c model_reasoning_effort="E"] [ExtraArgs...] <prompt>
//
// (with "-" in place of the prompt, and the prompt on stdin, when it is
// over 100 KiB). The final message is read from the --output-last-message
// file, falling back to the last agent_message item of the --json event
// stream; token usage comes from the stream's turn.completed events. See
// docs/agents.md.
type Codex struct {
	// Model, when set, is passed as --model (Options.Model overrides it).
	Model string
	// ExtraArgs are inserted before the prompt.
	ExtraArgs []string
	// Env is the complete environment; nil inherits Stratum's.
	Env []string
	// LookPath finds the codex executable; nil means exec.LookPath.
	LookPath func(string) (string, error)
	// OfflineGrace is how long codex may keep reporting that it is waiting
	// for the network, with nothing else happening, before it is stopped
	// and reported unavailable (it would wait for ever). Zero means
	// DefaultOfflineGrace; a negative value never stops it for that.
	OfflineGrace time.Duration
}

// DefaultOfflineGrace is [Codex.OfflineGrace] when zero.
const DefaultOfflineGrace = time.Minute

// errOffline stops a codex that has waited for the network too long.
var errOffline = errors.New("codex has been waiting for the network")

// Run implements [Connector]: the step's prompt ([Prompt]), and the JSON
// value taken from the final message.
func (c *Codex) Run(ctx context.Context, req Request) (Result, error) {
	run, err := c.run(ctx, Prompt(req), req.Workdir, req.options())
	out := run.result()
	if err != nil || out.Failure != "" {
		return out, err
	}
	v, err := extractAnswer(run.text)
	if err != nil {
		out.Failure = "codex's " + err.Error()
		return out, nil
	}
	out.Output = v
	return out, nil
}

// RunTask implements [TaskRunner]: the prompt as it is, and the final
// message as text.
func (c *Codex) RunTask(ctx context.Context, t Task) (TaskResult, error) {
	run, err := c.run(ctx, t.Prompt, t.Workdir, t.Options)
	return run.taskResult(), err
}

func (c *Codex) model(o Options) string {
	if o.Model != "" {
		return o.Model
	}
	return c.Model
}

func (c *Codex) run(ctx context.Context, prompt, workdir string, o Options) (cliRun, error) {
	if err := o.Validate("codex"); err != nil {
		return cliRun{}, err
	}
	path, err := findProgram("codex", c.LookPath, "codex CLI not found on PATH; install it or pass --agent '<command>'")
	if err != nil {
		return cliRun{}, err
	}
	tmp, err := scratch.Dir("codex")
	if err != nil {
		return cliRun{}, fmt.Errorf("agent codex: %w", err)
	}
	defer os.RemoveAll(tmp)
	lastMessage := filepath.Join(tmp, "last-message.txt")

	argv := []string{path, "exec", "--json", "--skip-git-repo-check", "--sandbox", o.sandbox()}
	if workdir != "" {
		argv = append(argv, "-C", workdir)
	}
	argv = append(argv, "--output-last-message", lastMessage)
	if m := c.model(o); m != "" {
		argv = append(argv, "--model", m)
	}
	if o.Effort != "" {
		argv = append(argv, "-c", "model_reasoning_effort="+strconv.Quote(o.Effort))
	}
	argv = append(argv, c.ExtraArgs...)
	var stdin []byte
	if len(prompt) <= maxArgPrompt {
		argv = append(argv, prompt)
	} else {
		argv = append(argv, "-")
		stdin = []byte(prompt)
	}

	runCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	events := newCodexEvents(o, c.offlineGrace(), func() { stop(errOffline) })
	res, err := proc.Run(runCtx, proc.Spec{
		Argv: argv, Dir: workdir, Env: c.Env, Stdin: stdin,
		Timeout: o.Timeout, StderrTail: stderrTail, Stdout: events, OnStart: onStart(o),
		TempPaths: []string{tmp},
	})
	events.finish()
	run := newCLIRun(res, modelOr(c.model(o)), o)
	unavailable := func(kind UnavailableKind, reason string) (cliRun, error) {
		return run, &UnavailableError{Agent: "codex", Kind: kind, Reason: tail([]byte(reason))}
	}
	if err != nil {
		if ctx.Err() == nil && errors.Is(err, errOffline) {
			run, err := unavailable(UnavailableNetwork, events.lastError)
			err.(*UnavailableError).Err = errOffline
			return run, err
		}
		return run, fmt.Errorf("agent codex: %w", err)
	}
	run.usage = events.usage(run.usage)
	if res.TimedOut {
		if events.offline() {
			return unavailable(UnavailableNetwork, events.lastError)
		}
		run.failure = processFailure("codex", res, o.Timeout)
		return run, nil
	}
	if events.turnFailed != "" {
		if kind := classifyText(events.turnFailed); kind != "" {
			return unavailable(kind, events.turnFailed)
		}
		run.failure = "codex reported a failed turn: " + tail([]byte(events.turnFailed))
		return run, nil
	}
	if reason := processFailure("codex", res, o.Timeout); reason != "" {
		said := events.lastError + "\n" + string(res.StderrTail)
		if kind := classifyText(said); kind != "" && res.Signal == "" {
			return unavailable(kind, strings.TrimSpace(said))
		}
		if events.lastError != "" && res.Signal == "" {
			reason = fmt.Sprintf("codex exited with status %d: %s", res.ExitCode, tail([]byte(events.lastError)))
		}
		run.failure = reason
		return run, nil
	}
	message, ok := readLastMessage(lastMessage)
	if !ok {
		message, ok = events.lastMessage, events.sawMessage
	}
	if !ok {
		if kind := classifyText(events.lastError); kind != "" {
			return unavailable(kind, events.lastError)
		}
		run.failure = "codex finished without a final message"
		if events.lastError != "" {
			run.failure += "; its last error event: " + tail([]byte(events.lastError))
		}
		return run, nil
	}
	run.text = message
	return run, nil
}

func (c *Codex) offlineGrace() time.Duration {
	if c.OfflineGrace == 0 {
		return DefaultOfflineGrace
	}
	return c.OfflineGrace
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
	lines lineSplitter
	opts  Options

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

	// While codex reports that it waits for the network and does nothing
	// else, a timer runs; when it fires, giveUp stops the run.
	grace        time.Duration
	giveUp       func()
	offlineTimer *time.Timer
	offlineSince bool
}

func newCodexEvents(o Options, grace time.Duration, giveUp func()) *codexEvents {
	c := &codexEvents{opts: o, grace: grace, giveUp: giveUp}
	c.lines = lineSplitter{max: maxEventLine, fn: c.event}
	return c
}

func (c *codexEvents) Write(p []byte) (int, error) { return c.lines.Write(p) }

// finish handles a last line without a trailing newline.
func (c *codexEvents) finish() {
	c.lines.finish()
	if c.offlineTimer != nil {
		c.offlineTimer.Stop()
	}
}

// offline reports whether codex's last word was that it waits for the
// network.
func (c *codexEvents) offline() bool { return c.offlineSince }

func (c *codexEvents) waitingForNetwork() {
	c.offlineSince = true
	if c.offlineTimer == nil && c.grace > 0 && c.giveUp != nil {
		c.offlineTimer = time.AfterFunc(c.grace, c.giveUp)
	}
}

func (c *codexEvents) online() {
	c.offlineSince = false
	if c.offlineTimer != nil {
		c.offlineTimer.Stop()
		c.offlineTimer = nil
	}
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
	if c.opts.Progress != nil {
		c.opts.progress(codexProgress(line))
	}
	if !mayMatter(line) {
		c.online() // an event that is not an error: codex is working
		return     // e.g. reasoning and command items: skip the JSON decoding
	}
	var ev codexEvent
	if json.Unmarshal(line, &ev) != nil {
		return
	}
	if ev.Type != "error" && !(ev.Item != nil && ev.Item.Type == "error") {
		c.online()
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
		if strings.Contains(strings.ToLower(ev.Message), "waiting for network") {
			c.waitingForNetwork()
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

// usage adds the summed turn usage to u (which holds the measured time).
// Codex's input_tokens include the cached ones (OpenAI semantics), so the
// split subtracts them.
func (c *codexEvents) usage(u *Usage) *Usage {
	if !c.sawUsage {
		return u
	}
	cached := min(c.cached, c.input)
	u.Tokens = c.input + c.output
	u.Split = &TokenSplit{Input: c.input - cached, Output: c.output, CacheRead: cached}
	return u
}
