//go:build unix

package agent

import (
	"context"
	"strings"
	"testing"
)

// BenchmarkCommandRun measures the connector overhead of one attempt: spawn
// an agent, write the request, parse its JSON answer.
func BenchmarkCommandRun(b *testing.B) {
	agent := writeScriptB(b, "#!/bin/sh\ncat >/dev/null\necho '{\"summary\":\"ok\",\"confidence\":0.9}'\n")
	c := &Command{Argv: []string{agent}}
	req := sampleRequest()
	for b.Loop() {
		res, err := c.Run(context.Background(), req)
		if err != nil || res.Failure != "" {
			b.Fatal(err, res.Failure)
		}
	}
}

// BenchmarkCodexEvents measures how fast a codex event stream is consumed.
func BenchmarkCodexEvents(b *testing.B) {
	stream := []byte(strings.Repeat(codexEventsOK, 100))
	b.SetBytes(int64(len(stream)))
	for b.Loop() {
		ev := newCodexEvents(Options{}, 0, nil)
		for rest := stream; len(rest) > 0; {
			n := min(len(rest), 32<<10) // pipe-sized writes
			ev.Write(rest[:n])
			rest = rest[n:]
		}
		ev.finish()
		if !ev.sawMessage {
			b.Fatal("no message")
		}
	}
}

func writeScriptB(b *testing.B, body string) string {
	b.Helper()
	return writeScriptTB(b, b.TempDir(), "agent", body)
}

// BenchmarkClaudeStream measures how fast a claude stream-json output is
// consumed (every line decoded once, the result line twice).
func BenchmarkClaudeStream(b *testing.B) {
	body := claudeSuccess[strings.Index(claudeSuccess, "\n")+1 : strings.LastIndex(strings.TrimSuffix(claudeSuccess, "\n"), "\n")+1]
	stream := []byte(strings.Repeat(body, 100) + claudeSuccess)
	b.SetBytes(int64(len(stream)))
	for b.Loop() {
		s := newClaudeStream(Options{})
		for rest := stream; len(rest) > 0; {
			n := min(len(rest), 32<<10)
			s.Write(rest[:n])
			rest = rest[n:]
		}
		s.finish()
		if s.envelope() == nil {
			b.Fatal("no envelope")
		}
	}
}
