// Command fakeagent stands in for the claude and codex CLIs in the tests
// of background runs and agent runs (installed as both, first on PATH):
// it checks the flags Stratum relies on, then answers the prompt as the
// directives in it say, in the output shape of the CLI it was started as
// (claude: stream-json; codex: JSONL events and --output-last-message).
//
// Directives, anywhere in the prompt:
//
//	ANSWER: {json}     the step's output (the rest of the line)
//	FAIL_FIRST         attempt 1 exits 1 with a reason on stderr
//	SLEEP_MS: n        sleep n milliseconds before answering
//	HANG               report progress every 100 ms and never answer
//
// A prompt without ANSWER (a free-form agent run) is answered with the
// text "reviewed: " and its first line. Every start and end is appended
// to $FAKE_LOG: "start PID PGID STEP ATTEMPT CONTRACT" (CONTRACT is 1 when
// the prompt gives the step's output shape), "argv PID [JSON array of its
// arguments]" and "end PID STEP ATTEMPT".
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

var (
	stepRe    = regexp.MustCompile(`step "([^"]+)" of a Stratum flow \(run [^)]*\), attempt (\d+)`)
	answerRe  = regexp.MustCompile(`ANSWER: (\{.*\})`)
	sleepRe   = regexp.MustCompile(`SLEEP_MS: (\d+)`)
	logFile   = os.Getenv("FAKE_LOG")
	startTime = time.Now()
)

func logLine(format string, args ...any) {
	if logFile == "" {
		return
	}
	f, err := os.OpenFile(logFile, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return
	}
	fmt.Fprintf(f, format+"\n", args...)
	f.Close()
}

func die(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "fakeagent: "+format+"\n", args...)
	os.Exit(64)
}

func main() {
	name := filepath.Base(os.Args[0])
	var prompt, lastMessage string
	args := os.Args[1:]
	switch name {
	case "claude":
		if len(args) < 2 || args[0] != "-p" {
			die("claude: want -p PROMPT first, got %q", args)
		}
		prompt = args[1]
		if !has(args, "--verbose") || after(args, "--output-format") != "stream-json" {
			die("claude: want --output-format stream-json --verbose")
		}
	case "codex":
		if len(args) < 1 || args[0] != "exec" || !has(args, "--json") || !has(args, "--skip-git-repo-check") {
			die("codex: want exec --json --skip-git-repo-check, got %q", args)
		}
		switch after(args, "--sandbox") {
		case "read-only", "workspace-write", "danger-full-access":
		default:
			die("codex: bad --sandbox %q", after(args, "--sandbox"))
		}
		lastMessage = after(args, "--output-last-message")
		if lastMessage == "" {
			die("codex: missing --output-last-message")
		}
		prompt = args[len(args)-1]
	default:
		die("started as %q: want claude or codex", name)
	}
	step, attempt := "-", 0
	if m := stepRe.FindStringSubmatch(prompt); m != nil {
		step = m[1]
		attempt, _ = strconv.Atoi(m[2])
	}
	contract := 0
	if strings.Contains(prompt, "exactly one JSON object of this shape") {
		contract = 1
	}
	argv, _ := json.Marshal(args)
	logLine("argv %d %s", os.Getpid(), argv)
	logLine("start %d %d %s %d %d", os.Getpid(), syscall.Getpgrp(), step, attempt, contract)
	defer logLine("end %d %s %d", os.Getpid(), step, attempt)

	if m := sleepRe.FindStringSubmatch(prompt); m != nil {
		n, _ := strconv.Atoi(m[1])
		time.Sleep(time.Duration(n) * time.Millisecond)
	}
	if strings.Contains(prompt, "HANG") {
		for i := 0; ; i++ {
			progress(name, fmt.Sprintf("working %d", i))
			time.Sleep(100 * time.Millisecond)
		}
	}
	if strings.Contains(prompt, "FAIL_FIRST") && attempt == 1 {
		fmt.Fprintln(os.Stderr, "deliberate failure of the first attempt")
		logLine("end %d %s %d", os.Getpid(), step, attempt)
		os.Exit(1) // deferred calls do not run: the end line is written above

	}
	text := ""
	if m := answerRe.FindStringSubmatch(prompt); m != nil {
		text = m[1]
	} else {
		first, _, _ := strings.Cut(strings.TrimSpace(prompt), "\n")
		text = "reviewed: " + first
	}
	answer(name, text, lastMessage)
}

// progress prints one progress event in the CLI's shape.
func progress(name, text string) {
	switch name {
	case "claude":
		emit(map[string]any{"type": "assistant", "message": map[string]any{"role": "assistant",
			"content": []any{map[string]any{"type": "text", "text": text}}}})
	case "codex":
		emit(map[string]any{"type": "item.completed", "item": map[string]any{"type": "reasoning", "text": text}})
	}
}

func answer(name, text, lastMessage string) {
	switch name {
	case "claude":
		emit(map[string]any{"type": "system", "subtype": "init", "model": "fake-claude"})
		emit(map[string]any{"type": "result", "subtype": "success", "is_error": false, "result": text,
			"duration_ms": time.Since(startTime).Milliseconds(), "total_cost_usd": 0.001,
			"usage": map[string]any{"input_tokens": 10, "output_tokens": 5}})
	case "codex":
		emit(map[string]any{"type": "thread.started", "thread_id": "fake"})
		emit(map[string]any{"type": "item.completed", "item": map[string]any{"type": "agent_message", "text": text}})
		emit(map[string]any{"type": "turn.completed", "usage": map[string]any{"input_tokens": 12, "cached_input_tokens": 2, "output_tokens": 6}})
		if err := os.WriteFile(lastMessage, []byte(text), 0o600); err != nil {
			die("codex: write %s: %v", lastMessage, err)
		}
	}
}

func emit(v any) {
	b, _ := json.Marshal(v)
	os.Stdout.Write(append(b, '\n'))
}

func has(args []string, a string) bool {
	for _, x := range args {
		if x == a {
			return true
		}
	}
	return false
}

func after(args []string, flag string) string {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == flag {
			return args[i+1]
		}
	}
	return ""
}
