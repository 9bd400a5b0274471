package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

type request struct {
	RunID           string    `json:"runId"`
	StepID          string    `json:"stepId"`
	Task            string    `json:"task"`
	Agent           string    `json:"agent"`
	Attempt         int       `json:"attempt"`
	Contract        *contract `json:"contract"`
	PreviousFailure *struct {
		Attempt int    `json:"attempt"`
		Reason  string `json:"reason"`
	} `json:"previousFailure"`
}

type contract struct {
	Name   string `json:"name"`
	Fields []struct {
		Name string `json:"name"`
		Type string `json:"type"`
	} `json:"fields"`
	Contracts []contract `json:"contracts"`
}

func main() {
	if err := run(os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart-agent:", err)
		os.Exit(2)
	}
}

func run(stdin io.Reader, stdout, stderr io.Writer) error {
	in, err := io.ReadAll(stdin)
	if err != nil {
		return fmt.Errorf("read the request: %w", err)
	}
	var req request
	if err := json.Unmarshal(in, &req); err != nil {
		return fmt.Errorf("the request on stdin is not the expected JSON object: %w", err)
	}
	if f := req.PreviousFailure; f != nil {
		fmt.Fprintf(stderr, "quickstart-agent: step %s, attempt %d; attempt %d failed: %s\n", req.StepID, req.Attempt, f.Attempt, f.Reason)
	}
	a := answerer{req: req, wrong: req.StepID == "draft" && req.Attempt == 1,
		better: req.PreviousFailure != nil && strings.HasPrefix(req.PreviousFailure.Reason, "iterate until")}
	var out bytes.Buffer
	if req.Contract == nil {
		a.writeString(&out, "Done: "+summary(req.Task))
	} else {
		for _, c := range req.Contract.Contracts {
			if a.named == nil {
				a.named = map[string]contract{}
			}
			a.named[c.Name] = c
		}
		a.writeObject(&out, *req.Contract, 0)
	}
	out.WriteByte('\n')
	_, err = stdout.Write(out.Bytes())
	return err
}

type answerer struct {
	req request
	// wrong answers 0.2 for every number, better 0.99 (wrong wins).
	wrong, better bool
	named         map[string]contract
}

// maxDepth stops a (spec-invalid) recursive contract from looping.
const maxDepth = 16

func (a *answerer) writeObject(out *bytes.Buffer, c contract, depth int) {
	out.WriteByte('{')
	for i, f := range c.Fields {
		if i > 0 {
			out.WriteByte(',')
		}
		a.writeString(out, f.Name)
		out.WriteByte(':')
		a.writeValue(out, f.Name, f.Type, depth+1)
	}
	out.WriteByte('}')
}

func (a *answerer) writeValue(out *bytes.Buffer, field, typ string, depth int) {
	typ = strings.TrimSuffix(typ, "?")
	if strings.HasPrefix(typ, "(") && strings.HasSuffix(typ, ")[]") {
		out.WriteByte('[')
		a.writeString(out, strings.Split(typ[1:len(typ)-3], "|")[0])
		out.WriteByte(']')
		return
	}
	if base, ok := strings.CutSuffix(typ, "[]"); ok && depth < maxDepth {
		out.WriteByte('[')
		a.writeValue(out, field, base, depth+1)
		out.WriteByte(']')
		return
	}
	switch typ {
	case "string":
		a.writeString(out, field+" for: "+summary(a.req.Task))
	case "number":
		switch {
		case a.wrong:
			out.WriteString("0.2")
		case a.better:
			out.WriteString("0.99")
		default:
			out.WriteString("0.9")
		}
	case "integer":
		out.WriteString("1")
	case "boolean":
		out.WriteString("true")
	case "object":
		out.WriteString("{}")
	case "array":
		out.WriteByte('[')
		a.writeString(out, field+" item")
		out.WriteByte(']')
	default:
		if strings.Contains(typ, "|") {
			a.writeString(out, strings.Split(typ, "|")[0])
			return
		}
		if c, ok := a.named[typ]; ok && depth < maxDepth {
			a.writeObject(out, c, depth)
			return
		}
		out.WriteString("{}")
	}
}

func (a *answerer) writeString(out *bytes.Buffer, s string) {
	b, _ := json.Marshal(s) // marshalling a string cannot fail
	out.Write(b)
}

// summary shortens the task to its first line, at most 60 characters.
func summary(task string) string {
	s, _, _ := strings.Cut(strings.TrimSpace(task), "\n")
	if r := []rune(s); len(r) > 60 {
		s = string(r[:60]) + "..."
	}
	return s
}
