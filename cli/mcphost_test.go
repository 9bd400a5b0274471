package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/stratum-go/stratum/agent"
)

// cmdMCPRun implements "mcprun SPEC INPUT_JSON AGENT": a small MCP host
// for scripts. It starts the real "stratum mcp" (the in-process command
// on the script's PATH) over stdio, plans SPEC with INPUT_JSON, answers
// every ready entry by running the command agent AGENT (the protocol of
// docs/agents.md, as "stratum run --agent AGENT" would), and reports each
// answer with stratum_step_done until the run ends. Like "stratum run" it
// prints the flow's output as indented JSON on stdout when the run
// completes, and fails with the reason otherwise, so a script can compare
// the two front ends' answers to one question with cmp.
func cmdMCPRun(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 3 {
		ts.Fatalf("usage: mcprun SPEC INPUT_JSON AGENT")
	}
	err := mcpRun(ts, args[0], args[1], args[2])
	switch {
	case neg && err == nil:
		ts.Fatalf("mcprun: the run completed, want it to fail")
	case !neg && err != nil:
		ts.Fatalf("mcprun: %v", err)
	case err != nil:
		fmt.Fprintf(ts.Stderr(), "%v\n", err)
	}
}

func mcpRun(ts *testscript.TestScript, specFile, inputJSON, agentCmd string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	spec, err := os.ReadFile(ts.MkAbs(specFile))
	if err != nil {
		return err
	}
	var input any
	if err := json.Unmarshal([]byte(inputJSON), &input); err != nil {
		return fmt.Errorf("INPUT_JSON: %v", err)
	}
	if strings.HasPrefix(agentCmd, "./") {
		agentCmd = ts.MkAbs(agentCmd) // the host runs outside the script's directory
	}
	conn, err := agent.NewCommand(agentCmd)
	if err != nil {
		return err
	}
	bin, err := exec.LookPath("stratum")
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, "mcp")
	cmd.Dir = ts.Getenv("WORK")
	for _, kv := range []string{"STRATUM_HOME", "STRATUM_JUDGE_COMMAND", "PATH", "HOME"} {
		cmd.Env = append(cmd.Env, kv+"="+ts.Getenv(kv))
	}
	cmd.Stderr = ts.Stderr()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "mcprun", Version: "0"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return err
	}
	defer cs.Close()
	call := func(tool string, arguments map[string]any) (map[string]any, error) {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: arguments})
		if err != nil {
			return nil, err
		}
		var out map[string]any
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, &out); err != nil {
			return nil, err
		}
		if res.IsError {
			return nil, fmt.Errorf("%s refused: %s", tool, b)
		}
		return out, nil
	}
	state, err := call("stratum_plan", map[string]any{"spec": string(spec), "input": input, "workspaceRoot": ts.Getenv("WORK")})
	if err != nil {
		return err
	}
	for {
		switch state["status"] {
		case "completed":
			b, _ := json.MarshalIndent(state["output"], "", "  ")
			fmt.Fprintf(ts.Stdout(), "%s\n", b)
			return nil
		case "ready":
		default:
			return fmt.Errorf("run %v ended %v: %v", state["runId"], state["status"], state["failure"])
		}
		ready, _ := state["ready"].([]any)
		entry, _ := ready[0].(map[string]any)
		req := agent.Request{RunID: fmt.Sprint(state["runId"]), StepID: fmt.Sprint(entry["id"]), Task: fmt.Sprint(entry["do"]),
			Agent: fmt.Sprint(entry["agent"]), Workdir: ts.Getenv("WORK")}
		if n, ok := entry["attempt"].(float64); ok {
			req.Attempt = int(n)
		}
		if pf, ok := entry["previousFailure"].(map[string]any); ok {
			req.PreviousFailure = &agent.Failure{Reason: fmt.Sprint(pf["reason"])}
		}
		res, err := conn.Run(ctx, req)
		if err != nil {
			return err
		}
		result := map[string]any{"output": res.Output}
		if res.Failure != "" {
			result = map[string]any{"failure": res.Failure}
		}
		state, err = call("stratum_step_done", map[string]any{"runId": state["runId"], "stepId": entry["id"],
			"dispatchToken": entry["dispatchToken"], "result": result})
		if err != nil {
			return err
		}
	}
}
