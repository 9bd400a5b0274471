package mcp

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
)

// TestAgentRunsOverStdio runs agents for a client through the real binary
// and fake claude/codex: a foreground codex run, a detached claude run
// polled to completion (also by a restarted server), a detached run
// cancelled from another server process, a run tagged with a flow whose
// usage is receipted on it and which the flow's cancel stops from another
// process, and a detached run whose server was killed.
func TestAgentRunsOverStdio(t *testing.T) {
	env := newBgEnv(t, "300ms")
	a := env.server()
	cwd := env.home

	r := a.call("stratum_agent_run", map[string]any{"agent": "codex", "prompt": "Review the change.", "cwd": cwd, "effort": "high"})
	if r.status() != "complete" || r.Body["text"] != "reviewed: Review the change." {
		t.Fatalf("foreground codex: %s", r.Text)
	}
	if u := r.Body["usage"].(map[string]any); u["tokens"].(float64) != 18 {
		t.Errorf("codex usage: %v", u)
	}

	r = a.call("stratum_agent_run", map[string]any{"agent": "claude", "prompt": "Look around. SLEEP_MS: 200", "cwd": cwd, "background": true})
	if r.status() != "bg_started" {
		t.Fatalf("detached claude: %s", r.Text)
	}
	done := r.Body["runId"].(string)
	r = pollAgent(t, a, done, func(r result) bool { return r.status() != "running" })
	if r.status() != "complete" || !strings.HasPrefix(r.Body["text"].(string), "reviewed: Look around.") || r.Body["exitCode"].(float64) != 0 {
		t.Fatalf("detached claude ended: %s", r.Text)
	}

	// A detached run cancelled from another server.
	r = a.call("stratum_agent_run", map[string]any{"agent": "claude", "prompt": "HANG", "cwd": cwd, "background": true})
	hang := r.Body["runId"].(string)
	pollAgent(t, a, hang, func(r result) bool { return r.Body["textTail"] != nil && r.Body["textTail"] != "" })
	b := env.server()
	r = b.call("stratum_cancel_agent_run", map[string]any{"runId": hang})
	if r.status() != "cancelled" {
		t.Fatalf("cancel from another server: %s", r.Text)
	}
	assertAgentsGone(t, env.log)
	if r = a.call("stratum_agent_poll", map[string]any{"runId": hang}); r.status() != "cancelled" {
		t.Errorf("the owner sees %s", r.Text)
	}
	if r = b.call("stratum_cancel_agent_run", map[string]any{"runId": done}); r.status() != "already_complete" {
		t.Errorf("cancel of a finished run: %s", r.Text)
	}
	if r = b.call("stratum_agent_poll", map[string]any{"runId": "5f0c2c4e-0000-4000-8000-000000000000"}); r.status() != "not_found" {
		t.Errorf("unknown run: %s", r.Text)
	}

	// Tagged with a flow: usage receipted on it; the flow's cancel from
	// another server stops a detached agent working for it.
	plan := a.call("stratum_plan", map[string]any{"spec": readExample(t, "quickstart.stratum.yaml"), "input": map[string]any{"topic": "tags"}})
	flow := runID(t, plan)
	r = a.call("stratum_agent_run", map[string]any{"agent": "claude", "prompt": "Help with outline.", "cwd": cwd,
		"cancellationId": "0b5e1d2c-8a4f-4c3e-9d1a-7f6e5d4c3b2a", "flow": map[string]any{"runId": flow, "stepId": "outline"}})
	if r.status() != "complete" {
		t.Fatalf("tagged run: %s", r.Text)
	}
	if r = a.call("stratum_agent_run", map[string]any{"agent": "claude", "prompt": "again", "cwd": cwd,
		"cancellationId": "0b5e1d2c-8a4f-4c3e-9d1a-7f6e5d4c3b2a"}); r.errorCode() != "invalid_arguments" {
		t.Errorf("a cancellationId used twice: %s", r.Text)
	}
	audit := a.call("stratum_audit", map[string]any{"runId": flow})
	receipted := false
	for _, ev := range audit.Body["events"].([]any) {
		e := ev.(map[string]any)
		if e["type"] == "usage_debit" && e["stepId"] == "outline" && e["detail"].(map[string]any)["source"] == "agent_run" {
			receipted = true
		}
	}
	if !receipted {
		t.Errorf("no agent_run receipt on the flow: %s", audit.Text)
	}
	r = a.call("stratum_agent_run", map[string]any{"agent": "codex", "prompt": "HANG", "cwd": cwd, "background": true, "flow": map[string]any{"runId": flow}})
	tagged := r.Body["runId"].(string)
	pollAgent(t, a, tagged, func(r result) bool { return r.Body["textTail"] != nil && r.Body["textTail"] != "" })
	r = b.call("stratum_flow_cancel", map[string]any{"runId": flow})
	if r.status() != "cancelled" || r.Body["acknowledged"] != true {
		t.Fatalf("flow cancel: %s", r.Text)
	}
	if ag := r.Body["agents"].(map[string]any); ag["signalled"].(float64) < 1 {
		t.Errorf("flow cancel stopped no agent: %v", ag)
	}
	assertAgentsGone(t, env.log)
	if r = a.call("stratum_agent_poll", map[string]any{"runId": tagged}); r.status() != "cancelled" {
		t.Errorf("tagged run after the flow's cancel: %s", r.Text)
	}
	if r = a.call("stratum_agent_run", map[string]any{"agent": "claude", "prompt": "late", "cwd": cwd, "flow": map[string]any{"runId": flow}}); r.errorCode() != "flow_not_running" {
		t.Errorf("a run for a cancelled flow: %s", r.Text)
	}

	// The server of a detached run dies: its agent dies with it, and a
	// new server says so; a finished run is still answered.
	r = a.call("stratum_agent_run", map[string]any{"agent": "claude", "prompt": "HANG", "cwd": cwd, "background": true})
	orphan := r.Body["runId"].(string)
	pollAgent(t, a, orphan, func(r result) bool { return r.Body["textTail"] != nil && r.Body["textTail"] != "" })
	a.kill()
	assertAgentsGone(t, env.log)
	c := env.server()
	r = pollAgent(t, c, orphan, func(r result) bool { return r.status() != "running" })
	if r.status() != "failed" || !strings.Contains(r.Body["reason"].(string), "stopped") {
		t.Errorf("a run whose server died: %s", r.Text)
	}
	if r = c.call("stratum_agent_poll", map[string]any{"runId": done}); r.status() != "complete" {
		t.Errorf("after a restart: %s", r.Text)
	}
}

// TestAgentRunsRefusedWithoutAgents: a server that does not allow agents
// refuses to start one, and to run a flow in the background.
func TestAgentRunsRefusedWithoutAgents(t *testing.T) {
	env := newBgEnv(t, "")
	p := env.serverWith(nil)
	r := p.call("stratum_agent_run", map[string]any{"agent": "claude", "prompt": "hi", "cwd": env.home})
	if r.errorCode() != "effect_not_allowed" || !strings.Contains(r.Text, "--allow-agents") {
		t.Errorf("agent run without --allow-agents: %s", r.Text)
	}
	r = p.call("stratum_flow_run_bg", map[string]any{"spec": bgFlowSpec, "input": map[string]any{"topic": "x", "items": []string{"a"}}})
	if r.errorCode() != "effect_not_allowed" || !strings.Contains(r.Text, "--allow-agents") || !strings.Contains(r.Text, "stratum_plan") {
		t.Errorf("flow_run_bg without --allow-agents: %s", r.Text)
	}
	r = p.call("stratum_agent_run", map[string]any{"agent": "claude", "prompt": "hi", "cwd": os.TempDir()})
	if r.errorCode() != "effect_not_allowed" && r.errorCode() != "invalid_arguments" {
		t.Errorf("cwd outside the roots: %s", r.Text)
	}
}

// pollAgent polls an agent run until cond holds.
func pollAgent(t *testing.T, p *serverProc, id string, cond func(r result) bool) result {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		r := p.call("stratum_agent_poll", map[string]any{"runId": id})
		if r.IsError {
			t.Fatalf("agent poll: %s", r.Text)
		}
		if cond(r) {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("agent run %s: no answer met the condition; last:\n%s\nserver stderr:\n%s", id, r.Text, p.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// agentArgv returns the arguments each fake agent was started with, in
// order (the argv lines of the fake agents' log).
func agentArgv(t *testing.T, path string) [][]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out [][]string
	for _, line := range strings.Split(string(b), "\n") {
		fs := strings.SplitN(line, " ", 3)
		if len(fs) != 3 || fs[0] != "argv" {
			continue
		}
		var argv []string
		if err := json.Unmarshal([]byte(fs[2]), &argv); err != nil {
			t.Fatalf("argv line %q: %v", line, err)
		}
		out = append(out, argv)
	}
	return out
}

// TestAgentRunOptions: the reference's options reach the CLI as its
// flags, and options that do not fit the agent are refused, naming the
// argument, before any agent starts.
func TestAgentRunOptions(t *testing.T) {
	env := newBgEnv(t, "")
	p := env.server()
	cwd := env.home

	for _, c := range []struct {
		agent string
		args  map[string]any
		want  []string
	}{
		{"claude", map[string]any{"model": "opus", "effort": "max", "sandboxMode": "workspace-write",
			"allowedTools": []string{"Read", "Bash(git diff:*)"}, "disallowedTools": []string{"WebFetch"},
			"thinking": map[string]any{"type": "enabled", "budgetTokens": 4000, "display": "summarized"}},
			[]string{"--model opus", "--effort max", "--permission-mode acceptEdits", "--allowedTools Read Bash(git diff:*)",
				"--disallowedTools WebFetch", "--max-thinking-tokens 4000", "--thinking-display summarized"}},
		{"codex", map[string]any{"model": "gpt-5-codex", "effort": "minimal", "sandboxMode": "workspace-write"},
			[]string{"--sandbox workspace-write", "--model gpt-5-codex", `-c model_reasoning_effort="minimal"`}},
		{"codex", map[string]any{}, []string{"--sandbox read-only"}},
	} {
		before := len(agentArgv(t, env.log))
		args := map[string]any{"agent": c.agent, "prompt": "Check the options.", "cwd": cwd}
		for k, v := range c.args {
			args[k] = v
		}
		r := p.call("stratum_agent_run", args)
		if r.status() != "complete" {
			t.Fatalf("%s %v: %s", c.agent, c.args, r.Text)
		}
		all := agentArgv(t, env.log)
		if len(all) != before+1 {
			t.Fatalf("%s: %d agent starts, want 1", c.agent, len(all)-before)
		}
		got := " " + strings.Join(all[before], " ") + " "
		for _, w := range c.want {
			if !strings.Contains(got, " "+w+" ") {
				t.Errorf("%s %v: argv %q lacks %q", c.agent, c.args, got, w)
			}
		}
	}

	starts := len(agentArgv(t, env.log))
	for _, c := range []struct {
		name string
		args map[string]any
		path string
	}{
		{"unknown agent", map[string]any{"agent": "gemini"}, "agent"},
		{"empty prompt", map[string]any{"agent": "codex", "prompt": "  "}, "prompt"},
		{"empty sandbox", map[string]any{"agent": "codex", "sandboxMode": ""}, ""},
		{"unknown sandbox", map[string]any{"agent": "codex", "sandboxMode": "danger-full-access"}, "sandboxMode"},
		{"allowedTools for codex", map[string]any{"agent": "codex", "allowedTools": []string{"Read"}}, "options"},
		{"thinking for codex", map[string]any{"agent": "codex", "thinking": map[string]any{"type": "adaptive"}}, "options"},
		{"claude effort for codex", map[string]any{"agent": "codex", "effort": "max"}, "options"},
		{"effort against the model's suffix", map[string]any{"agent": "codex", "model": "gpt-5-codex-high", "effort": "low"}, "effort"},
		{"cancellationId not a UUID", map[string]any{"agent": "codex", "cancellationId": "mine"}, "cancellationId"},
		{"cancellationId of a detached run", map[string]any{"agent": "codex", "background": true, "cancellationId": "2b5e7a8e-1c1f-4d4b-9a59-6e8f0c3d2a11"}, "cancellationId"},
		{"cwd outside the allowed roots", map[string]any{"agent": "codex", "cwd": "/"}, "cwd"},
		{"flow that does not exist", map[string]any{"agent": "codex", "flow": map[string]any{"runId": "0b7e0c1e-58a4-4b3e-9a0c-2f4f3c1d9e77"}}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := map[string]any{"prompt": "Check the options.", "cwd": cwd}
			for k, v := range c.args {
				args[k] = v
			}
			r := p.call("stratum_agent_run", args)
			if !r.IsError {
				t.Fatalf("accepted: %s", r.Text)
			}
			if c.path != "" {
				errs, _ := r.Body["error"].(map[string]any)["errors"].([]any)
				if len(errs) == 0 || errs[0].(map[string]any)["path"] != c.path {
					t.Errorf("refusal does not name %s: %s", c.path, r.Text)
				}
			}
		})
	}
	if n := len(agentArgv(t, env.log)); n != starts {
		t.Errorf("%d agents started by refused calls", n-starts)
	}
}
