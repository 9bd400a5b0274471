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
