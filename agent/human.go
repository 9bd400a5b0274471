package agent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/stratum-go/stratum/expr"
)

// maxHumanAnswer bounds what a person may type for one answer.
const maxHumanAnswer = 1 << 20

// Human asks a person: it prints the task, the expected output shape and
// the previous failure, then reads the output as JSON. The answer may span
// several lines; it ends with the first line after which everything typed
// so far is one complete JSON value. A line that is invalid JSON is
// reported and the answer starts over. A first line starting with "!fail"
// fails the attempt with the rest of the line as the reason. End of input fails
// the attempt (and every later one).
//
// One Human serialises its prompts, so concurrent steps ask one at a time.
// It reads its input from a single goroutine that lives until the input
// ends; a cancelled Run returns at once, but that goroutine stays blocked
// in Read until the next line or EOF.
type Human struct {
	out   io.Writer
	in    io.Reader
	once  sync.Once
	lines chan humanLine
	turn  chan struct{} // a one-slot semaphore: who is asking now
	eof   bool          // guarded by turn
}

type humanLine struct {
	text string
	err  error // io.EOF at the end of input
}

// NewHuman makes a Human that prompts on out and reads answers from in;
// neither may be nil. Make one per terminal and share it: two Humans
// reading the same input would steal each other's lines.
func NewHuman(in io.Reader, out io.Writer) *Human {
	h := &Human{out: out, in: in, lines: make(chan humanLine), turn: make(chan struct{}, 1)}
	return h
}

func (h *Human) read() {
	sc := bufio.NewScanner(h.in)
	sc.Buffer(make([]byte, 64<<10), maxHumanAnswer)
	for sc.Scan() {
		h.lines <- humanLine{text: sc.Text()}
	}
	err := sc.Err()
	if err == nil {
		err = io.EOF
	}
	h.lines <- humanLine{err: err}
}

// Run implements [Connector].
func (h *Human) Run(ctx context.Context, req Request) (Result, error) {
	select {
	case h.turn <- struct{}{}:
	case <-ctx.Done():
		return Result{}, fmt.Errorf("agent human: %w", context.Cause(ctx))
	}
	defer func() { <-h.turn }()
	h.once.Do(func() { go h.read() })

	if err := req.options().Validate("human"); err != nil {
		return Result{}, err
	}
	start := time.Now()
	res, err := h.converse(ctx, req)
	ms := time.Since(start).Milliseconds()
	res.Telemetry = &Telemetry{DurationMs: ms, Model: "human"}
	res.Usage = &Usage{Ms: float64(ms)}
	return res, err
}

// converse asks once and waits for the answer; the caller holds the turn.
func (h *Human) converse(ctx context.Context, req Request) (Result, error) {
	var out Result
	if h.eof {
		out.Failure = "no answer: the terminal input has ended"
		return out, nil
	}
	h.ask(req)

	limit := req.options().Timeout
	var timeout <-chan time.Time
	if limit > 0 {
		t := time.NewTimer(limit)
		defer t.Stop()
		timeout = t.C
	}
	var answer bytes.Buffer
	for {
		var ln humanLine
		select {
		case ln = <-h.lines:
		case <-timeout:
			fmt.Fprintf(h.out, "\nNo answer within %v; this attempt fails.\n", limit)
			out.Failure = fmt.Sprintf("no answer from the person within %v", limit)
			return out, nil
		case <-ctx.Done():
			return out, fmt.Errorf("agent human: %w", context.Cause(ctx))
		}
		if ln.err != nil {
			h.eof = true
			switch {
			case !errors.Is(ln.err, io.EOF):
				out.Failure = fmt.Sprintf("no answer: reading the terminal failed: %v", ln.err)
			case answer.Len() > 0:
				out.Failure = "no answer: input ended in the middle of a JSON value"
			default:
				out.Failure = "no answer: input ended before a JSON value was entered"
			}
			return out, nil
		}
		if answer.Len() == 0 {
			trimmed := strings.TrimSpace(ln.text)
			if trimmed == "" {
				continue
			}
			if reason, ok := strings.CutPrefix(trimmed, "!fail"); ok {
				reason = strings.TrimSpace(reason)
				if reason == "" {
					reason = "no reason given"
				}
				out.Failure = "the person failed this attempt: " + reason
				return out, nil
			}
		}
		answer.WriteString(ln.text)
		answer.WriteByte('\n')
		v, complete, err := parseHumanAnswer(answer.Bytes())
		switch {
		case err != nil:
			fmt.Fprintf(h.out, "That is not valid JSON (%v). Enter the whole value again:\n", err)
			answer.Reset()
		case complete:
			out.Output = v
			return out, nil
		case answer.Len() > maxHumanAnswer:
			fmt.Fprintf(h.out, "That answer is over %d bytes. Enter the whole value again:\n", maxHumanAnswer)
			answer.Reset()
		}
	}
}

// parseHumanAnswer says whether b is one complete JSON value (complete,
// with the value), the beginning of one (neither), or can never become
// one (err).
func parseHumanAnswer(b []byte) (v any, complete bool, err error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return nil, false, nil
		}
		return nil, false, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false, errors.New("unexpected text after the JSON value")
	}
	v, err = expr.DecodeJSON(b)
	if err != nil {
		return nil, false, err
	}
	return v, true, nil
}

// ask prints what the person needs to answer.
func (h *Human) ask(req Request) {
	var b strings.Builder
	fmt.Fprintf(&b, "\n=== Stratum needs an answer: step %q (run %s, attempt %d) ===\n\n", req.StepID, req.RunID, req.Attempt)
	b.WriteString("Task:\n")
	b.WriteString(indent(strings.TrimSpace(req.Task)))
	if f := req.PreviousFailure; f != nil {
		fmt.Fprintf(&b, "\nAttempt %d failed:\n%s", f.Attempt, indent(strings.TrimSpace(f.Reason)))
	}
	if req.Contract != nil {
		b.WriteString("\nExpected output, a JSON object of this shape:\n")
		b.WriteString(indent(strings.TrimRight(DescribeContract(req.Contract), "\n")))
	} else {
		b.WriteString("\nExpected output: any JSON value (a text answer is a JSON string, in double quotes).\n")
	}
	b.WriteString("\nType the output as JSON; it may span several lines and ends when it is complete.\n")
	b.WriteString("To fail this attempt instead, type !fail followed by the reason.\n> ")
	io.WriteString(h.out, b.String())
}

func indent(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = "    " + l
		}
	}
	return strings.Join(lines, "\n") + "\n"
}
