package mcp

import (
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
