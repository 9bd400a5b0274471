package mcp

import (
	"context"
	_ "embed"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// What a model reads besides the tools: the instructions (instructions.md,
// sent at initialize), and the full language reference (language.md),
// served as a resource the model can read and as a prompt the user can
// invoke. Hosts truncate instructions and tool descriptions (Claude Code
// keeps 2,048 characters of each), so those stay short and point here;
// docs/mcp.md, "What a model sees", says what each host shows.

//go:embed language.md
var languageDoc string

// LanguageURI is the URI of the language reference resource.
const LanguageURI = "stratum://docs/language"

// WriteFlowPrompt is the name of the prompt that asks the model to write
// and run a flow for a task, with the language reference attached.
const WriteFlowPrompt = "write_flow"

// Language returns the language reference a model reads before writing a
// spec: every construct with a valid example, the traps the validator
// refuses, and the run loop (Markdown).
func Language() string { return languageDoc }

var languageResource = &sdk.Resource{
	URI:   LanguageURI,
	Name:  "language",
	Title: "The Stratum flow language (v1)",
	Description: "How to write a Stratum flow spec: every construct (do, ensure, set, when, gate, fanout, run, iterate, " +
		"evaluate, budgets) with a valid example, the types, references and expressions, the traps the validator " +
		"refuses, and the run loop. Read it before writing a spec.",
	MIMEType: "text/markdown",
	Size:     int64(len(languageDoc)),
}

// The prompt takes no arguments: Claude Code splits what follows the
// command on spaces and fills arguments with one word each, but shows the
// model the whole command line, so the task is read from there (or asked
// for).
var writeFlowPrompt = &sdk.Prompt{
	Name:        WriteFlowPrompt,
	Title:       "Write and run a Stratum flow",
	Description: "Write a Stratum flow spec for a task from the language reference, validate it, and run it step by step (gates are left to you). Give the task after the command.",
}

// writeFlowText is the prompt's message.
var writeFlowText = "Write a Stratum flow spec for the task I give with this command (if I gave none, ask me what the " +
	"flow should do), using the reference that follows. Check the spec with stratum_validate until it is valid, " +
	"then run it: stratum_plan, then do and report each ready step with stratum_step_done. When the run waits at " +
	"a gate, show me what it reviews and ask me; never decide a gate yourself.\n\n---\n\n" + languageDoc

// addDocs registers the language reference as a resource and a prompt.
func addDocs(srv *sdk.Server) {
	srv.AddResource(languageResource, func(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
		return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{
			URI: LanguageURI, MIMEType: "text/markdown", Text: languageDoc,
		}}}, nil
	})
	srv.AddPrompt(writeFlowPrompt, func(ctx context.Context, req *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
		return &sdk.GetPromptResult{
			Description: writeFlowPrompt.Description,
			Messages: []*sdk.PromptMessage{{
				Role:    "user",
				Content: &sdk.TextContent{Text: writeFlowText},
			}},
		}, nil
	})
}
