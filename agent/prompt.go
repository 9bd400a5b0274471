package agent

import (
	"fmt"
	"strings"
)

// Prompt is the text given to a model CLI (claude, codex) for req: the
// task, the previous failure, the output shape and the instruction to
// answer with the JSON value alone. It is exported so that the exact
// wording can be shown (e.g. by a dry run) and tested.
func Prompt(req Request) string {
	var b strings.Builder
	fmt.Fprintf(&b, "You are carrying out step %q of a Stratum flow (run %s), attempt %d.\n\n", req.StepID, req.RunID, req.Attempt)
	b.WriteString("## Task\n\n")
	b.WriteString(strings.TrimSpace(req.Task))
	b.WriteString("\n\n")
	if r := req.Revision; r != nil {
		b.WriteString("## Revision requested\n\n")
		fmt.Fprintf(&b, "A person reviewed this step's earlier work at gate %q and sent it back (revision round %d).", r.Gate, r.Round)
		if r.Note != "" {
			fmt.Fprintf(&b, " Their words:\n\n%s\n\nDo exactly what they asked.", strings.TrimSpace(r.Note))
		}
		b.WriteString("\n\n")
	}
	if req.Interrupted != "" {
		fmt.Fprintf(&b, "## Interrupted attempt\n\n%s Inspect the workspace for changes it may have left before you start.\n\n", req.Interrupted)
	}
	if f := req.PreviousFailure; f != nil {
		b.WriteString("## Previous attempt\n\n")
		fmt.Fprintf(&b, "Attempt %d was rejected for this reason:\n\n%s\n\nFix this in your answer.\n\n", f.Attempt, strings.TrimSpace(f.Reason))
	}
	b.WriteString("## Answer\n\n")
	b.WriteString(answerInstructions(req.Contract))
	return b.String()
}

// answerInstructions says what the final message must be.
func answerInstructions(c *Contract) string {
	const only = "Your final message must be that JSON value and nothing else: no explanation before or after it, no Markdown code fence.\n"
	if c == nil {
		return "Your final message is the step's output: exactly one JSON value (a JSON string if the result is text).\n" + only
	}
	return "Your final message is the step's output: exactly one JSON object of this shape.\n\n" +
		DescribeContract(c) + "\n" +
		"Objects must have exactly the fields shown, no others. Fields marked optional may be omitted or null.\n" + only
}

// DescribeContract renders c as the JSON shape to produce, one field per
// line with its type in words, followed by the shapes of the contracts
// it refers to. Human and the model prompts use it.
func DescribeContract(c *Contract) string {
	var b strings.Builder
	writeShape(&b, c.Fields)
	for _, sub := range c.Contracts {
		fmt.Fprintf(&b, "\nwhere a %s object is:\n", sub.Name)
		writeShape(&b, sub.Fields)
	}
	return b.String()
}

func writeShape(b *strings.Builder, fields []Field) {
	if len(fields) == 0 {
		b.WriteString("{}\n")
		return
	}
	b.WriteString("{\n")
	for i, f := range fields {
		sep := ","
		if i == len(fields)-1 {
			sep = ""
		}
		fmt.Fprintf(b, "  %q: <%s>%s\n", f.Name, DescribeType(f.Type), sep)
	}
	b.WriteString("}\n")
}

// DescribeType puts a v1 type string into words: "string[]" is "array of
// string", "a|b" is `one of "a", "b"`, "T?" is "T, optional". A string
// that is not a valid type is returned verbatim.
func DescribeType(t string) string {
	if base, ok := strings.CutSuffix(t, "?"); ok && base != "" && !strings.HasSuffix(base, "?") {
		return DescribeType(base) + ", optional"
	}
	if strings.HasPrefix(t, "(") && strings.HasSuffix(t, ")[]") {
		body := t[1 : len(t)-3]
		if !strings.ContainsAny(body, "()") {
			return "array of " + describeEnum(body)
		}
	}
	if base, ok := strings.CutSuffix(t, "[]"); ok && base != "" {
		return "array of " + DescribeType(base)
	}
	switch t {
	case "string", "number", "boolean":
		return t
	case "integer":
		return "integer (a whole number)"
	case "object":
		return "any JSON object"
	case "array":
		return "any JSON array"
	}
	if strings.Contains(t, "|") {
		return describeEnum(t)
	}
	if t != "" && t[0] >= 'A' && t[0] <= 'Z' {
		return t + " object"
	}
	return t
}

func describeEnum(body string) string {
	members := strings.Split(body, "|")
	quoted := make([]string, len(members))
	for i, m := range members {
		quoted[i] = fmt.Sprintf("%q", m)
	}
	return "one of " + strings.Join(quoted, ", ")
}
