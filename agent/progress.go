package agent

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// maxProgressLine bounds one progress line, so that a verbose display
// stays readable whatever the agent prints.
const maxProgressLine = 240

// oneLine squeezes s to one line of at most maxProgressLine bytes.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(strings.ToValidUTF8(s, "\uFFFD")), " ")
	if len(s) <= maxProgressLine {
		return s
	}
	cut := maxProgressLine
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// codexProgressEvent is the part of a `codex exec --json` event that a
// progress line shows.
type codexProgressEvent struct {
	Type     string `json:"type"`
	ThreadID string `json:"thread_id"`
	Message  string `json:"message"`
	Error    *struct {
		Message string `json:"message"`
	} `json:"error"`
	Usage *struct {
		InputTokens  float64 `json:"input_tokens"`
		OutputTokens float64 `json:"output_tokens"`
	} `json:"usage"`
	Item *struct {
		Type     string `json:"type"`
		ItemType string `json:"item_type"`
		Text     string `json:"text"`
		Command  string `json:"command"`
		Message  string `json:"message"`
		Query    string `json:"query"`
		Server   string `json:"server"`
		Tool     string `json:"tool"`
		ExitCode *int   `json:"exit_code"`
		Changes  []struct {
			Path string `json:"path"`
			Kind string `json:"kind"`
		} `json:"changes"`
	} `json:"item"`
}

// codexProgress summarises one event line; "" for a line not worth
// showing (or not an event).
func codexProgress(line []byte) string {
	var ev codexProgressEvent
	if json.Unmarshal(line, &ev) != nil || ev.Type == "" {
		return ""
	}
	switch ev.Type {
	case "thread.started":
		return oneLine("codex: session " + ev.ThreadID + " started")
	case "turn.started":
		return "codex: turn started"
	case "turn.completed":
		if ev.Usage != nil {
			return fmt.Sprintf("codex: turn completed (%.0f input, %.0f output tokens)", ev.Usage.InputTokens, ev.Usage.OutputTokens)
		}
		return "codex: turn completed"
	case "turn.failed":
		if ev.Error != nil {
			return oneLine("codex: turn failed: " + ev.Error.Message)
		}
		return "codex: turn failed"
	case "error":
		return oneLine("codex: error: " + ev.Message)
	case "item.started", "item.updated", "item.completed":
		return codexItemProgress(ev)
	}
	return oneLine("codex: " + ev.Type)
}

func codexItemProgress(ev codexProgressEvent) string {
	it := ev.Item
	if it == nil {
		return ""
	}
	kind := it.Type
	if kind == "" {
		kind = it.ItemType
	}
	done := ev.Type == "item.completed"
	switch kind {
	case "command_execution":
		if !done {
			if ev.Type == "item.started" {
				return oneLine("codex: running " + it.Command)
			}
			return ""
		}
		if it.ExitCode != nil {
			return oneLine(fmt.Sprintf("codex: ran %s (exit %d)", it.Command, *it.ExitCode))
		}
		return oneLine("codex: ran " + it.Command)
	case "agent_message", "assistant_message":
		if done {
			return oneLine("codex: " + it.Text)
		}
	case "reasoning":
		if done {
			return oneLine("codex: thinking: " + it.Text)
		}
	case "file_change":
		if done {
			paths := make([]string, 0, len(it.Changes))
			for _, c := range it.Changes {
				paths = append(paths, c.Path)
			}
			return oneLine("codex: changed " + strings.Join(paths, ", "))
		}
	case "mcp_tool_call":
		if ev.Type == "item.started" {
			return oneLine("codex: calling " + it.Server + "." + it.Tool)
		}
	case "web_search":
		if ev.Type == "item.started" {
			return oneLine("codex: searching the web for " + it.Query)
		}
	case "todo_list":
		if ev.Type == "item.started" {
			return "codex: made a plan"
		}
	case "error":
		return oneLine("codex: error: " + it.Message)
	default:
		if done {
			return oneLine("codex: " + kind)
		}
	}
	return ""
}

// claudeStreamMessage is the part of a `claude -p --output-format
// stream-json --verbose` message that Stratum reads, for progress and for
// its outcome.
type claudeStreamMessage struct {
	Type    string `json:"type"`
	Subtype string `json:"subtype"`
	// Model is set on the system init message.
	Model string `json:"model"`
	// Error is the CLI's own classification of a failed request: on an
	// assistant message (authentication_failed, billing_error, rate_limit,
	// ...) and on an api_retry system message.
	Error      string `json:"error"`
	Attempt    int    `json:"attempt"`
	MaxRetries int    `json:"max_retries"`
	Message    *struct {
		Content json.RawMessage `json:"content"`
	} `json:"message"`
	NumTurns int  `json:"num_turns"`
	IsError  bool `json:"is_error"`
}

type claudeContent struct {
	Type     string          `json:"type"`
	Text     string          `json:"text"`
	Thinking string          `json:"thinking"`
	Name     string          `json:"name"`
	Input    json.RawMessage `json:"input"`
	IsError  bool            `json:"is_error"`
	Content  json.RawMessage `json:"content"`
}

// claudeProgress summarises one stream message in zero or more lines.
func claudeProgress(m *claudeStreamMessage) []string {
	switch m.Type {
	case "system":
		switch m.Subtype {
		case "init":
			if m.Model != "" {
				return []string{oneLine("claude: session started (model " + m.Model + ")")}
			}
			return []string{"claude: session started"}
		case "api_retry":
			return []string{oneLine(fmt.Sprintf("claude: API request failed (%s), retry %d of %d", m.Error, m.Attempt, m.MaxRetries))}
		}
		return []string{oneLine("claude: " + m.Subtype)}
	case "assistant", "user":
		if m.Message == nil {
			return nil
		}
		var blocks []claudeContent
		if json.Unmarshal(m.Message.Content, &blocks) != nil {
			return nil // a user message with a plain string: the prompt
		}
		var lines []string
		for _, b := range blocks {
			if l := claudeBlockProgress(b); l != "" {
				lines = append(lines, l)
			}
		}
		return lines
	case "result":
		if m.IsError {
			return []string{oneLine(fmt.Sprintf("claude: finished with an error (%s) after %d turns", m.Subtype, m.NumTurns))}
		}
		return []string{fmt.Sprintf("claude: finished after %d turns", m.NumTurns)}
	}
	return nil
}

func claudeBlockProgress(b claudeContent) string {
	switch b.Type {
	case "text":
		return oneLine("claude: " + b.Text)
	case "thinking":
		return "claude: thinking"
	case "tool_use":
		return oneLine("claude: " + b.Name + " " + toolDetail(b.Input))
	case "tool_result":
		if b.IsError {
			var text string
			if json.Unmarshal(b.Content, &text) != nil {
				text = string(b.Content)
			}
			return oneLine("claude: tool failed: " + text)
		}
	}
	return ""
}

// toolDetail picks the telling argument of a tool call.
func toolDetail(input json.RawMessage) string {
	var in map[string]any
	if json.Unmarshal(input, &in) != nil {
		return ""
	}
	for _, k := range []string{"command", "file_path", "path", "pattern", "url", "query", "description"} {
		if s, ok := in[k].(string); ok && s != "" {
			return s
		}
	}
	return ""
}
