package agent

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for a writer and a reader goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestHumanAnswers(t *testing.T) {
	tests := []struct {
		name    string
		input   string
		output  string
		failure string
		says    string // text the person is shown
	}{
		{name: "one line", input: `{"summary": "ok", "confidence": 0.9}` + "\n", output: `{"summary":"ok","confidence":0.9}`},
		{name: "several lines", input: "\n{\n  \"summary\": \"ok\",\n  \"tags\": [\"a\",\n \"b\"]\n}\n", output: `{"summary":"ok","tags":["a","b"]}`},
		{name: "invalid then valid", input: "yes it is fine\n\"fine\"\n", output: `"fine"`, says: "That is not valid JSON"},
		{name: "trailing text", input: "{} and more\n[]\n", output: `[]`, says: "unexpected text after the JSON value"},
		{name: "fail", input: "!fail the README is missing\n", failure: "the person failed this attempt: the README is missing"},
		{name: "fail without reason", input: "  !fail\n", failure: "the person failed this attempt: no reason given"},
		{name: "eof", input: "", failure: "no answer: input ended before a JSON value was entered"},
		{name: "eof mid value", input: "{\"a\":\n", failure: "no answer: input ended in the middle of a JSON value"},
		{name: "last line without newline", input: `{"a": 1}`, output: `{"a":1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out syncBuffer
			h := NewHuman(strings.NewReader(tt.input), &out)
			res, err := h.Run(context.Background(), sampleRequest())
			if err != nil {
				t.Fatal(err)
			}
			if res.Telemetry == nil || res.Telemetry.Model != "human" {
				t.Errorf("telemetry %+v", res.Telemetry)
			}
			if tt.failure != "" {
				if res.Failure != tt.failure || res.Output != nil {
					t.Errorf("failure %q output %v, want failure %q", res.Failure, res.Output, tt.failure)
				}
			} else if res.Failure != "" {
				t.Errorf("failure %q", res.Failure)
			} else if got := encode(t, res.Output); got != tt.output {
				t.Errorf("output %s, want %s", got, tt.output)
			}
			if !strings.Contains(out.String(), tt.says) {
				t.Errorf("the person was not told %q:\n%s", tt.says, out.String())
			}
		})
	}
}

func TestHumanPrompt(t *testing.T) {
	var out syncBuffer
	h := NewHuman(strings.NewReader("1\n"), &out)
	if _, err := h.Run(context.Background(), sampleRequest()); err != nil {
		t.Fatal(err)
	}
	golden(t, "human-prompt.txt", out.String())
}

func TestHumanSequenceAndEOF(t *testing.T) {
	var out syncBuffer
	h := NewHuman(strings.NewReader("1\n2\n"), &out)
	for _, want := range []string{"1", "2"} {
		res, err := h.Run(context.Background(), sampleRequest())
		if err != nil || res.Failure != "" || encode(t, res.Output) != want {
			t.Fatalf("res %+v err %v, want %s", res, err, want)
		}
	}
	for range 2 { // the end of input is remembered
		res, err := h.Run(context.Background(), sampleRequest())
		if err != nil || !strings.HasPrefix(res.Failure, "no answer") {
			t.Fatalf("res %+v err %v", res, err)
		}
	}
}

func TestHumanTimeoutAndCancel(t *testing.T) {
	in, feed := io.Pipe()
	defer feed.Close()
	var out syncBuffer
	h := NewHuman(in, &out)

	req := sampleRequest()
	req.Timeout = 50 * time.Millisecond
	res, err := h.Run(context.Background(), req)
	if err != nil || res.Failure != "no answer from the person within 50ms" {
		t.Fatalf("res %+v err %v", res, err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := h.Run(ctx, sampleRequest())
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}

	// The same Human still answers afterwards.
	go feed.Write([]byte("[true]\n"))
	res, err = h.Run(context.Background(), sampleRequest())
	if err != nil || encode(t, res.Output) != "[true]" {
		t.Fatalf("res %+v err %v", res, err)
	}
}

func TestHumanAsksOneAtATime(t *testing.T) {
	in, feed := io.Pipe()
	defer feed.Close()
	var out syncBuffer
	h := NewHuman(in, &out)
	results := make(chan string, 2)
	for _, step := range []string{"a", "b"} {
		go func() {
			req := sampleRequest()
			req.StepID = step
			res, err := h.Run(context.Background(), req)
			if err != nil {
				results <- err.Error()
				return
			}
			results <- req.StepID + "=" + encode(t, res.Output)
		}()
	}
	// Answer whichever step asked first, then the other.
	for i, answer := range []string{"1", "2"} {
		waitFor(t, &out, i+1)
		if _, err := feed.Write([]byte(answer + "\n")); err != nil {
			t.Fatal(err)
		}
	}
	got := []string{<-results, <-results}
	if !(got[0] == "a=1" && got[1] == "b=2") && !(got[0] == "b=1" && got[1] == "a=2") {
		t.Errorf("results %q", got)
	}
	if n := strings.Count(out.String(), "=== Stratum needs an answer"); n != 2 {
		t.Errorf("%d prompts", n)
	}
}

// waitFor waits until out holds at least n prompts.
func waitFor(t *testing.T, out *syncBuffer, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for strings.Count(out.String(), "=== Stratum needs an answer") < n {
		if time.Now().After(deadline) {
			t.Fatalf("no prompt %d:\n%s", n, out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func FuzzParseHumanAnswer(f *testing.F) {
	for _, s := range []string{"{", `{"a":1}`, "tru", "1 2", `"x`, "[1,\n", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, complete, err := parseHumanAnswer([]byte(s))
		if complete && err != nil || !complete && v != nil {
			t.Fatalf("inconsistent: %v %v %v", v, complete, err)
		}
		if complete {
			if _, err := extractAnswer(s); err != nil {
				t.Fatalf("complete answer %q does not parse: %v", s, err)
			}
		}
	})
}
