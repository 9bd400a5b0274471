package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// hostTextLimit is what Claude Code keeps of the server instructions and
// of each tool description (2,048 characters; the rest is cut and marked
// "… [truncated]"). Every text a host may cut stays within it.
const hostTextLimit = 2048

// tokens estimates the tokens of a text: bytes/4.
func tokens(n int) int { return (n + 3) / 4 }

// TestModelFacingText pins everything a model reads from the server
// besides the answers: the instructions, each tool's name, title and
// description, the resources and their text, the prompts and their
// message, against testdata/model-facing.golden (-update rewrites it), as
// a client receives them. It logs their sizes in tokens (bytes/4): run
// with -v to see them.
func TestModelFacingText(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	var golden bytes.Buffer
	section := func(title, text string) {
		fmt.Fprintf(&golden, "=== %s (%d bytes, ~%d tokens)\n%s\n\n", title, len(text), tokens(len(text)), strings.TrimRight(text, "\n"))
	}

	init := f.cs.InitializeResult()
	if init.Instructions != Instructions() {
		t.Error("the initialize answer does not carry Instructions()")
	}
	section("instructions", init.Instructions)
	if n := len(init.Instructions); n > hostTextLimit {
		t.Errorf("the instructions are %d bytes: Claude Code keeps %d", n, hostTextLimit)
	}
	if init.Capabilities.Resources == nil || init.Capabilities.Prompts == nil || init.Capabilities.Tools == nil {
		t.Errorf("capabilities: %+v, want tools, resources and prompts", init.Capabilities)
	}

	tools, err := f.cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	descBytes, inBytes, outBytes := 0, 0, 0
	for _, tl := range tools.Tools {
		section("tool "+tl.Name+": "+tl.Title, tl.Description)
		descBytes += len(tl.Description)
		if n := len(tl.Description); n > hostTextLimit {
			t.Errorf("%s: the description is %d bytes: Claude Code keeps %d", tl.Name, n, hostTextLimit)
		}
		in, _ := json.Marshal(tl.InputSchema)
		out, _ := json.Marshal(tl.OutputSchema)
		inBytes += len(in)
		outBytes += len(out)
	}

	res, err := f.cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	resBytes := 0
	for _, r := range res.Resources {
		rr, err := f.cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: r.URI})
		if err != nil {
			t.Fatalf("read %s: %v", r.URI, err)
		}
		if len(rr.Contents) != 1 || rr.Contents[0].Text == "" {
			t.Fatalf("%s: %d contents", r.URI, len(rr.Contents))
		}
		text := rr.Contents[0].Text
		if r.Size != int64(len(text)) {
			t.Errorf("%s: advertised size %d, text of %d bytes", r.URI, r.Size, len(text))
		}
		resBytes += len(text)
		section(fmt.Sprintf("resource %s (%s, %s): %s\n%s", r.URI, r.Name, r.MIMEType, r.Title, r.Description), text)
	}
	if len(res.Resources) == 0 {
		t.Error("no resources")
	}

	prompts, err := f.cs.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	promptBytes := 0
	for _, p := range prompts.Prompts {
		var args []string
		for _, a := range p.Arguments {
			args = append(args, fmt.Sprintf("%s (%s, required %v)", a.Name, a.Description, a.Required))
		}
		gp, err := f.cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: p.Name})
		if err != nil {
			t.Fatalf("get prompt %s: %v", p.Name, err)
		}
		if len(gp.Messages) != 1 {
			t.Fatalf("%s: %d messages", p.Name, len(gp.Messages))
		}
		text := gp.Messages[0].Content.(*sdk.TextContent).Text
		promptBytes += len(text)
		// The prompt carries the language reference; the golden holds it once.
		head, ok := strings.CutSuffix(text, Language())
		if !ok {
			t.Errorf("%s: the prompt does not end with the language reference", p.Name)
		}
		section(fmt.Sprintf("prompt %s: %s\n%s\narguments: %s\nmessage (%s), followed by the language reference", p.Name, p.Title, p.Description,
			strings.Join(args, "; "), gp.Messages[0].Role), head)
	}
	if len(prompts.Prompts) == 0 {
		t.Error("no prompts")
	}

	t.Logf("instructions: %d bytes, ~%d tokens (limit %d bytes)", len(init.Instructions), tokens(len(init.Instructions)), hostTextLimit)
	t.Logf("%d tool descriptions: %d bytes, ~%d tokens; input schemas: %d bytes, ~%d tokens; output schemas (not shown to the model by Claude Code or Codex): %d bytes, ~%d tokens",
		len(tools.Tools), descBytes, tokens(descBytes), inBytes, tokens(inBytes), outBytes, tokens(outBytes))
	t.Logf("stratum_validate description (the language in brief): %d bytes, ~%d tokens", len(validateDescription(tools.Tools)), tokens(len(validateDescription(tools.Tools))))
	t.Logf("resources: %d bytes, ~%d tokens; prompts: %d bytes, ~%d tokens", resBytes, tokens(resBytes), promptBytes, tokens(promptBytes))
	always := len(init.Instructions) + descBytes + inBytes
	t.Logf("always in the model's context (instructions, descriptions, input schemas): ~%d tokens; on demand (resource or prompt): ~%d tokens", tokens(always), tokens(resBytes))

	path := filepath.Join("testdata", "model-facing.golden")
	if *update {
		if err := os.WriteFile(path, golden.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no golden (go test ./mcp -run TestModelFacingText -update): %v", err)
	}
	if !bytes.Equal(want, golden.Bytes()) {
		t.Errorf("the model-facing text changed (-golden +now); if deliberate, rerun with -update and review:\n%s", cmp.Diff(string(want), golden.String()))
	}
}

func validateDescription(tools []*sdk.Tool) string {
	for _, tl := range tools {
		if tl.Name == "stratum_validate" {
			return tl.Description
		}
	}
	return ""
}
